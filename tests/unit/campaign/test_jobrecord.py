"""The job-record contract (afkit.campaign.jobrecord): jobs.csv columns, and records that break it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from afkit.campaign import aggregate as agg
from afkit.campaign import jobrecord as record
from afkit.errors import InvalidError

# jobs.csv's header before the contract existed: the columns derived from it keep names and order
# (new columns are appended)
JOBS_CSV = [
    "campaign", "campaign_hash", "image_sha256", "image_tag", "image_path", "bench", "type", "id", "wave",
    "site", "executor", "batch_job_id", "host", "dataset", "group", "scenario", "access", "clients",
    "block_size", "stride", "demand", "wave_size", "index", "repetition", "duration", "interval", "template",
    "url", "files",
    "status", "error", "start", "end", "processing_start", "setup_s", "stage_in_s", "processing_s",
    "stage_out_s", "wall_s", "bytes", "bytes_staged", "events", "throughput_MBps", "events_per_s",
    "image_fingerprint", "bottleneck", "bottleneck_reason",
    # the federation's batch workers (docs/federation.md): appended, the columns before keep their place
    "wn_site", "wn_address", "submit_files", "image_pull_s",
    # the analysis payloads side by side (report section "Payloads"): appended likewise
    "payload", "readspeed_verdict",
    # payload: root, ROOT's own read counts (docs/campaigns.md): appended too
    "root_bytes_read", "root_read_calls", "root_vector_reads",
    # the campaign's image as given (the report's header; image_path may be a worker's copy)
    "image_ref",
    # the node's image cache at a shared_fs: false site's pull (docs/federation.md): appended too
    "image_cache",
]  # fmt: skip


def payload_part(**kw: Any) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "host": "wn1", "container_start": 1.0, "status": "ok", "steps": {"setup": 0.1, "processing": 1.0},
        "bytes": 10, "bytes_staged": 0, "events": 0, "processing_start": 1.5, "bytes_out": 20,
        "intervals": [{"t": 1.0, "time": 2.5, "bytes": 10}],
    }  # fmt: skip
    rec.update(kw)
    return rec


def full(**kw: Any) -> dict[str, Any]:
    rec = {f.name: {"str": "x", "int": 1, "float": 1.0, "list": [], "dict": {}}[f.types[-1].__name__]
           for f in record.FIELDS if f.by != "derived" and f.need == "always"}  # fmt: skip
    rec.update(payload_part(), status="ok", id="site.ds.j0")
    rec.update(kw)
    return rec


def test_jobs_csv_columns_derive_from_the_contract_unchanged() -> None:
    assert record.COLUMNS == JOBS_CSV
    assert agg.JOB_COLUMNS == record.COLUMNS


def test_a_complete_record_has_no_problems() -> None:
    assert record.problems(full()) == []


def test_a_missing_field_a_wrong_type_and_an_unknown_field_are_named() -> None:
    rec = full(clients="two", colour="red")
    del rec["image_sha256"]
    found = " | ".join(record.problems(rec))
    assert "image_sha256: missing" in found
    assert "clients: 'two' is not int" in found
    assert "colour: unknown field" in found


def test_a_failed_record_needs_its_error_and_an_ok_one_its_measurements() -> None:
    failed = full(status="failed")
    assert record.problems(failed) == ["error: missing"]
    ok = full()
    del ok["bytes"]
    assert record.problems(ok) == ["bytes: missing"]


def test_the_payload_part_is_checked_alone_and_steps_and_intervals_have_a_shape() -> None:
    assert record.problems(payload_part(), part="payload") == []
    bad = payload_part(steps={"warmup": 1.0}, intervals=[{"t": 1.0}], status="done")
    found = " | ".join(record.problems(bad, part="payload"))
    assert "steps.warmup" in found and "intervals[0]" in found and "'done' is not allowed" in found
    assert record.problems(payload_part(campaign="c"), part="payload") == ["campaign: unknown field"]


def test_check_names_the_job() -> None:
    with pytest.raises(InvalidError, match=r"job site\.ds\.j0 \(here\):.*bytes: missing"):
        record.check({k: v for k, v in full().items() if k != "bytes"}, where="here")


def test_the_aggregator_refuses_a_record_that_breaks_the_contract(tmp_path: Path) -> None:
    good, bad = tmp_path / "good.json", tmp_path / "site.ds.j1.json"
    good.write_text(json.dumps(full()))
    bad.write_text(json.dumps(full(id="site.ds.j1", bytes=-0.5)))
    assert len(agg.load_records([good])) == 1
    match = r"job site\.ds\.j1 \(.*site\.ds\.j1\.json\).*bytes: -0\.5 is not int"
    with pytest.raises(InvalidError, match=match):
        agg.load_records([good, bad])


def test_docs_list_every_field_of_the_contract() -> None:
    """docs/campaigns.md, "The job record": its table names every field."""
    import re

    text = (Path(__file__).resolve().parents[3] / "docs" / "campaigns.md").read_text(encoding="utf-8")
    section = text.split("### The job record", 1)[1].split("\n## ", 1)[0]
    cells = [ln.split("|")[2] for ln in section.splitlines() if ln.startswith(("| the ", "| derived"))]
    listed = set(re.findall(r"\w+", re.sub(r"\([^)]*\)", "", " ".join(cells))))
    missing = {f.name for f in record.FIELDS} - listed
    assert not missing, missing
