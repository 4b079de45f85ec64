"""A fix, then a rerun, keeps the work that did not change (docs/campaigns.md, "Changing a campaign").

A real local campaign run by snakemake (the fake apptainer runs the payload on this Python): two
steps jobs, which read bytes, and an analysis job, which reads the dataset's tree, named wrong
(``Events``; the file's tree is ``events``). After the tree name is fixed in C.yaml, the results
folder is the same; the steps jobs' specs did not change, so their records are kept (same content,
same time) and only the analysis job runs.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from afkit import cli
from afkit.campaign import aggregate as agg
from afkit.campaign import config, current
from afkit.campaign.runplan import RunPlan
from afkit.errors import ExitCode

FIXTURES = Path(__file__).parent / "fixtures"


def _write(tmp_path: Path, raw: dict[str, Any]) -> None:
    (tmp_path / "C.yaml").write_text(yaml.safe_dump(raw), encoding="utf-8")


def _afkit(command: str) -> int:
    """COMMAND as documented, run from the campaign's directory."""
    return cli.main(shlex.split(command)[1:])


def _records(tmp_path: Path) -> dict[str, tuple[bytes, int]]:
    """bench/id → (content, mtime in ns) of every job record."""
    return {f"{p.parent.name}/{p.stem}": (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted(tmp_path.glob("results/*/job/*/*.json"))}  # fmt: skip


def _status(tmp_path: Path, name: str) -> str:
    [path] = tmp_path.glob(f"results/*/job/{name}.json")
    return str(json.loads(path.read_text())["status"])


@pytest.fixture
def failed_run(raw: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The campaign run once: its steps jobs ok, its analysis job failed on the wrong tree name."""
    monkeypatch.setenv("PATH", f"{FIXTURES}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_APPTAINER_PYTHON", sys.executable)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "fake.sif").write_bytes(b"#!/usr/bin/env run-singularity\n\0SIF_MAGIC\0fake")  # a SIF header
    raw["sites"] = {"here": raw["sites"]["here"]}
    raw["datasets"] = {"hzz": {**raw["datasets"]["hzz"], "tree": "Events"}}  # the typo
    raw["benchmarks"] = [
        {"name": "s", "type": "steps", "sites": ["here"], "datasets": ["hzz"],
         "sweep": {"access": ["direct", "copy"]}},
        {"name": "a", "type": "analysis", "sites": ["here"], "datasets": ["hzz"]},
    ]  # fmt: skip
    _write(tmp_path, raw)
    assert _afkit("afkit campaign run C.yaml") == ExitCode.OK  # a failed job is a record too
    [analysis] = tmp_path.glob("results/*/job/a/*.json")
    assert "no tree 'Events'" in json.loads(analysis.read_text())["error"]
    raw["datasets"]["hzz"]["tree"] = "events"  # the fix
    return raw


def test_a_rerun_after_a_fix_runs_only_the_job_whose_spec_changed(failed_run: dict[str, Any],
                                                                  tmp_path: Path) -> None:  # fmt: skip
    before = _records(tmp_path)
    folder = config.load(tmp_path / "C.yaml").results_dir
    _write(tmp_path, failed_run)
    assert config.load(tmp_path / "C.yaml").results_dir == folder  # the fix keeps the folder
    assert _afkit("afkit campaign run C.yaml") == ExitCode.OK
    after = _records(tmp_path)
    steps = [k for k in before if k.startswith("s/")]
    assert len(steps) == 2 and all(after[k] == before[k] for k in steps)  # same content, same mtime
    [analysis] = [k for k in before if k.startswith("a/")]
    assert after[analysis] != before[analysis] and _status(tmp_path, analysis) == "ok"
    rows = agg.read_csv(folder / "aggregate" / "jobs.csv")
    c = config.load(tmp_path / "C.yaml")
    assert {(r["status"], r["campaign_hash"]) for r in rows} == {("ok", c.hash)}


def test_retry_failed_after_a_fix_reruns_exactly_the_failed_jobs(failed_run: dict[str, Any],
                                                                 tmp_path: Path) -> None:  # fmt: skip
    # one steps job failed for a reason outside its spec (an endpoint down): its spec is unchanged
    failed, kept = sorted(tmp_path.glob("results/*/job/s/*.json"))
    failed.write_text(json.dumps({**json.loads(failed.read_text()), "status": "failed", "error": "down"}))
    before = _records(tmp_path)
    _write(tmp_path, failed_run)
    assert _afkit("afkit campaign retry C.yaml --failed") == ExitCode.OK
    after = _records(tmp_path)
    assert after[f"s/{kept.stem}"] == before[f"s/{kept.stem}"]
    assert _status(tmp_path, f"s/{failed.stem}") == "ok"
    assert {_status(tmp_path, k) for k in after} == {"ok"}


def test_a_record_of_an_older_spec_is_stale_never_a_result(
    make: Any, raw: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    raw["benchmarks"] = [{"name": "a", "type": "analysis", "sites": ["here"], "datasets": ["hzz"]}]
    old = make(raw)
    [p] = current.planned(RunPlan.make(old))
    rec = {"campaign": "unit", "spec_sha256": p.digest, "bench": "a", "id": p.job.id, "status": "ok"}
    p.record.parent.mkdir(parents=True)
    p.record.write_text(json.dumps(rec))
    raw["datasets"]["hzz"]["tree"] = "Events"
    [now] = current.planned(RunPlan.make(make(raw)))
    assert now.record == p.record and now.digest != p.digest
    assert current.state(now) == "stale"
    raw["datasets"]["hzz"]["tree"] = "events"  # back to the spec the record was made from
    assert current.state(current.planned(RunPlan.make(make(raw)))[0]) != "stale"


def test_a_record_without_a_spec_digest_is_stale(make: Any, raw: dict[str, Any], tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.chdir(tmp_path)
    raw["benchmarks"] = [{"name": "a", "type": "analysis", "sites": ["here"], "datasets": ["hzz"]}]
    [p] = current.planned(RunPlan.make(make(raw)))
    p.record.parent.mkdir(parents=True)
    p.record.write_text(json.dumps({"bench": "a", "id": p.job.id, "status": "ok"}))
    assert current.state(p) == "stale"


def test_a_fixed_tree_changes_no_spec_of_a_job_that_reads_bytes(make: Any, raw: dict[str, Any]) -> None:
    raw["benchmarks"] = [
        {"name": "s", "type": "steps", "sites": ["here"], "datasets": ["hzz"]},
        {"name": "a", "type": "analysis", "sites": ["here"], "datasets": ["hzz"]},
    ]
    before = {p.job.bench: p.digest for p in current.planned(RunPlan.make(make(raw)))}
    raw["datasets"]["hzz"]["tree"] = "Events"
    after = {p.job.bench: p.digest for p in current.planned(RunPlan.make(make(raw)))}
    assert after["s"] == before["s"] and after["a"] != before["a"]


def test_the_image_and_manifests_inputs_change_only_with_what_they_are_made_of(
    make: Any, raw: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from afkit.campaign import plan

    monkeypatch.chdir(tmp_path)
    c = make(raw)
    assert plan.write_inputs(c, c.layout.root) == 1 + len(raw["datasets"])
    times = {p: p.stat().st_mtime_ns for p in Path(c.layout.root, "plan").rglob("*.json")}
    raw["datasets"]["hzz"]["tree"] = "Events"  # what jobs read, not what the manifest is made of
    assert plan.write_inputs(make(raw), c.layout.root) == 0
    assert {p: p.stat().st_mtime_ns for p in times} == times
    raw["image"]["sif"] = "other.sif"
    assert plan.write_inputs(make(raw), c.layout.root) == 1
    assert json.loads(Path(c.layout.plan_image).read_text())["image"]["sif"] == "other.sif"
