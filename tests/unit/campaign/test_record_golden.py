"""The job record's JSON, the payload's result and jobs.csv / intervals.csv against recorded examples.

The goldens in fixtures/golden were written by afkit before the payload's metrics were declared
once (afkit.campaign.contract.Measures): the record's fields, the payload result's and the tables'
columns (names, order, types, values) stay what they were. A change that alters them on purpose
rewrites the golden (``AFKIT_WRITE_GOLDEN=1`` and a note in docs/campaigns.md), never silently.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from afkit.bench.multi import client_path
from afkit.campaign import aggregate, processing, steps
from afkit.campaign.contract import Job, JobRecord, PayloadSpec

GOLDEN = Path(__file__).parent / "fixtures" / "golden"

# a record with every field the contract has, as a root payload's job would leave it (and the
# rootreadspeed and afkit-bench fields too, so that every field's cell is in the table)
EXAMPLE: dict[str, Any] = {
    "campaign": "unit", "campaign_hash": "0123456789ab", "spec_sha256": "5" * 64, "image_sha256": "a" * 64,
    "image_tag": "T", "image_path": "/i/img.sif", "bench": "ao2d", "type": "analysis",
    "id": "here.ao2d.origin.direct.c2.w1.r0.i0", "wave": "here.ao2d.origin.direct.c2.w1.r0", "site": "here",
    "executor": "local", "batch_job_id": "", "host": "wn1", "dataset": "ao2d", "group": "",
    "scenario": "origin", "access": "direct", "clients": 2, "block_size": "1M", "stride": "0", "demand": "",
    "wave_size": 1, "index": 0, "repetition": 0, "duration": 10.0, "interval": 1.0,
    "template": "root://s//d/{file}", "url": "root://s//d/f.root", "files": 1, "status": "ok",
    "start": 100.0, "end": 104.5, "processing_start": 101.25, "bytes": 3_000_000, "bytes_staged": 0,
    "events": 1500, "image_fingerprint": "F" * 40, "bottleneck": "cpu", "bottleneck_reason": "one core busy",
    "wn_site": "", "wn_address": "10.0.0.2", "submit_files": "shared", "image_pull_s": 1.5,
    "payload": "root", "readspeed_verdict": "io-bound", "root_bytes_read": 3_100_000,
    "root_read_calls": 12, "root_vector_reads": 4, "image_ref": "/i/img.sif", "image_cache": "hit",
    "readspeed": {"real_s": 1.0, "verdict": "io-bound"}, "branches": ["px", "py"], "submit_host": "sub",
    "hold_reason": "", "container_start": 100.5,
    "steps": {"setup": 0.75, "stage_in": 0.0, "processing": 3.0, "stage_out": 0.125},
    "intervals": [{"t": 1.0, "time": 102.25, "bytes": 1_000_000},
                  {"t": 2.0, "time": 103.25, "bytes": 2_000_000}],
    "gaps": [{"t": 102.0, "seconds": 0.5, "url": "root://s//d/f.root", "recovered": True}],
    "bytes_out": 40, "engine": "afkit 0 (/afkit)", "software_env": {"tag": "T", "vars": 3},
    "afkit_bench": "multi-analysis",
}  # fmt: skip
FAILED: dict[str, Any] = {
    **{k: EXAMPLE[k] for k in ("campaign", "image_sha256", "image_tag", "image_path", "bench", "type",
                               "wave", "site", "executor", "batch_job_id", "dataset", "scenario", "access",
                               "clients", "block_size", "stride", "wave_size", "index", "repetition",
                               "duration", "interval", "template", "url", "files", "start", "end",
                               "image_fingerprint", "wn_site", "wn_address", "submit_files", "payload",
                               "submit_host", "branches")},
    "id": "here.ao2d.origin.direct.c2.w1.r0.i1", "host": "wn2", "status": "failed",
    "error": "OSError: no\nsuch file", "bottleneck": "unknown",
    "bottleneck_reason": "the job did not succeed",
}  # fmt: skip
MISSING = Job(bench="ao2d", type="analysis", site="here", dataset="ao2d", scenario="xcache", access="direct",
              clients=1, block_size="1M", stride="0", repetition=0, payload="root")  # fmt: skip


def _golden(name: str, text: str) -> str:
    path = GOLDEN / name
    if os.environ.get("AFKIT_WRITE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return path.read_text(encoding="utf-8")


def test_the_records_json_is_the_recorded_one(tmp_path: Path) -> None:
    out = tmp_path / "rec.json"
    JobRecord.from_dict(EXAMPLE).write(out)
    text = out.read_text(encoding="utf-8")
    assert text == _golden("record.json", text)
    again = tmp_path / "again.json"
    JobRecord.read(out).write(again)  # read and written back unchanged
    assert again.read_text(encoding="utf-8") == text


def test_the_tables_are_the_recorded_ones(tmp_path: Path) -> None:
    jobs, intervals = tmp_path / "jobs.csv", tmp_path / "intervals.csv"
    records = [JobRecord.from_dict(EXAMPLE), JobRecord.from_dict(FAILED)]
    aggregate.aggregate(records, jobs, intervals, expected=[MISSING], campaign_hash="feedfacecafe")
    for name, path in (("jobs.csv", jobs), ("intervals.csv", intervals)):
        text = path.read_text(encoding="utf-8")
        assert text == _golden(name, text), name


def _root_spec(tmp_path: Path) -> Path:
    data = tmp_path / "f.root"
    data.write_bytes(b"x" * 10)
    job = Job(bench="ao2d", type="analysis", site="here", dataset="ao2d", scenario="origin", access="direct",
              clients=2, block_size="1M", stride="0", repetition=0, payload="root", branches=("px",),
              urls=(str(data),))  # fmt: skip
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    spec = PayloadSpec(job=job, tree="events", scratch=str(scratch), stage_out=str(scratch / "out.json"),
                       result=str(scratch / "result.json"), t_launch=1000.0)  # fmt: skip
    path = scratch / "spec.json"
    path.write_text(spec.to_json(), encoding="utf-8")
    return path


def _stable(result: dict[str, Any]) -> dict[str, Any]:
    """The payload's result without what depends on the clock and the host."""
    volatile = ("host", "container_start", "processing_start", "engine", "software_env")
    out = {k: v for k, v in result.items() if k not in volatile}
    out["steps"] = sorted(result["steps"])
    out["intervals"] = [s["bytes"] for s in result.get("intervals", [])]
    return out


def _root_clients(*, fail: bool = False) -> Any:
    def run_threads(configs: list[object], out_dir: Path) -> list[dict[str, object]]:
        out_dir.mkdir(parents=True, exist_ok=True)
        summaries = []
        for k in range(len(configs)):
            records = [
                {"type": "interval", "t": 10.0, "bytes": 100 * (k + 1), "ops": 1, "events": 5},
                {"type": "gap", "t": 10.5, "seconds": 0.25, "url": "root://s//f", "recovered": True},
            ]
            text = "".join(json.dumps(r) + "\n" for r in records)
            client_path(out_dir, k).write_text(text, encoding="utf-8")
            root = {"bytes_read": 110 * (k + 1), "read_calls": 3 + k, "vector_reads": 1 + k}
            summaries.append({"type": "summary", "bytes": 100 * (k + 1), "events": 5 + k, "root": root})
        if fail:
            raise RuntimeError("client 1: the server went away")
        return summaries  # fmt: skip

    return run_threads


@pytest.mark.parametrize("fail", [False, True], ids=["ok", "failed"])
def test_the_payloads_result_is_the_recorded_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fail: bool
) -> None:
    """A root payload's result (afkit.campaign.steps), its clients stood in for."""
    monkeypatch.setattr(steps, "find_root", lambda: "root.exe")
    monkeypatch.setattr(processing, "run_threads", _root_clients(fail=fail))
    spec = _root_spec(tmp_path)
    assert steps.main([str(spec)]) == (1 if fail else 0)
    result = json.loads((spec.parent / "result.json").read_text(encoding="utf-8"))
    text = json.dumps(_stable(result), indent=1, sort_keys=True) + "\n"
    assert text == _golden(f"payload-root-{'failed' if fail else 'ok'}.json", text)
