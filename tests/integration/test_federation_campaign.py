"""Campaigns across the testbed federation: the documented one as written, and a site partitioned
mid-campaign.

The campaign is ``workflows/config/federation.yaml`` (its sites, network namespaces and storage)
with one small read benchmark: frankfurt's jobs read gsi's data (over gsi's WAN link), their own
data (local path) and alpes's data (over alpes's link), each job inside frankfurt's namespace.
While the gsi job reads, gsi's link goes down: that job must end ``failed`` in ``jobs.csv`` with
the cause on one line, the others ``ok``; after the link is healed ``afkit campaign retry
--failed`` must redo exactly that job. Needs the federation up (``scripts/testbed federation up``).
The commands are docs/federation.md's, as written.
"""

from __future__ import annotations

import csv
import json
import os
import shlex
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import itsupport
import pytest
import yaml
from itsupport import REPO, ok

pytestmark = pytest.mark.testbed

EXAMPLE = REPO / "workflows" / "config" / "federation.yaml"
SLOW = "20mbit"  # gsi's link while the campaign runs: the 16 MB read lasts ~6 s, time to cut it
# XRootD client timeouts the jobs inherit (XRD_* pass into the payload): a dead link fails fast
# (XRD_TIMEOUTRESOLUTION: how often the client checks its timeouts, 15 s by default)
XRD_ENV = {"XRD_STREAMTIMEOUT": "5", "XRD_REQUESTTIMEOUT": "8", "XRD_CONNECTIONWINDOW": "3",
           "XRD_TIMEOUTRESOLUTION": "1"}  # fmt: skip


def afkit(*args: str, timeout: float = 120, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return itsupport.afkit(*args, timeout=timeout, cwd=cwd, env=XRD_ENV)


def sh(line: str, cwd: Path | None = None, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    """A command line as docs/federation.md writes it, with the XRootD client settings above."""
    return itsupport.sh(line, cwd=cwd, timeout=timeout, env=XRD_ENV)


@pytest.fixture
def work(bench_sif: Path) -> Iterator[tuple[Path, str]]:
    """(campaign file, dataset prefix): federation.yaml cut down to one read benchmark."""
    if afkit("federation", "urls").returncode != 0:
        pytest.fail("the federation is not up (run: scripts/testbed federation up)")
    prefix = f"fed-campaign-{uuid.uuid4().hex[:8]}"
    d = Path(tempfile.mkdtemp(prefix="afkit-fed-campaign-", dir="/tmp"))
    raw: dict[str, Any] = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    raw["name"] = "fed-partition"
    raw["image"] = {"sif": str(bench_sif)}
    raw["results"] = str(d / "results")
    for site in raw["sites"].values():
        site["scratch"] = str(d / "scratch")  # where the test sees the jobs' progress
    for ds in raw["datasets"].values():
        ds["generate"] = {"count": 1, "size_mb": 16, "prefix": f"{prefix}/blob"}
    raw["benchmarks"] = [
        {"name": "read", "type": "read", "payload": "afkit-bench", "sites": ["frankfurt"],
         "datasets": ["gsi-data", "frankfurt-data", "alpes-data"], "sweep": {"block_size": ["1m"]}},
    ]  # fmt: skip
    cfile = d / "C.yaml"
    cfile.write_text(yaml.safe_dump(raw), encoding="utf-8")
    try:
        yield cfile, prefix
    finally:
        ok(sh("afkit federation link gsi --reset"))
        for site in raw["storage"].values():
            shutil.rmtree(Path(site["path"]) / prefix, ignore_errors=True)  # the data made here
        shutil.rmtree(d, ignore_errors=True)  # the directory this test created


def reading(scratch: Path) -> bool:
    """Has the gsi job's `afkit bench read` written an interval record (bytes are flowing)?"""
    for spec in scratch.glob("afkit-job-*/spec.json"):
        try:
            if json.loads(spec.read_text(encoding="utf-8"))["dataset"] != "gsi-data":
                continue
            # afkit bench writes its records, flushed, to .bench.jsonl.PID.part until it ends
            parts = (spec.parent / "bench").glob(".bench.jsonl.*.part")
            return any('"interval"' in part.read_text(encoding="utf-8") for part in parts)
        except (OSError, ValueError):
            continue
    return False


def rows(results: Path) -> dict[str, dict[str, str]]:
    with (results / "aggregate" / "jobs.csv").open(newline="", encoding="utf-8") as fh:
        return {r["dataset"]: r for r in csv.DictReader(fh)}


def test_partitioned_site_fails_its_job_only_and_retry_redoes_just_that_job(
    work: tuple[Path, str],
) -> None:
    cfile, _prefix = work
    scratch = cfile.parent / "scratch"
    results = Path(ok(afkit("campaign", "results", str(cfile))).strip())
    ok(afkit("federation", "link", "gsi", "--rate", SLOW))
    run = subprocess.Popen(
        shlex.split("afkit campaign run C.yaml"),
        cwd=cfile.parent,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, **XRD_ENV},
    )
    try:
        deadline = time.monotonic() + 60
        while not reading(scratch) and time.monotonic() < deadline and run.poll() is None:
            time.sleep(0.2)
        assert reading(scratch), "the gsi job never started reading"
        ok(sh("afkit federation link gsi --down"))
        out, _ = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == 0, out[-4000:]
    first = rows(results)
    assert first["gsi-data"]["status"] == "failed", first["gsi-data"]
    cause = first["gsi-data"]["error"]
    assert cause and "\n" not in cause and "afkit bench exited" in cause and "10.77.1.1:1094" in cause, cause
    for ds in ("frankfurt-data", "alpes-data"):
        assert first[ds]["status"] == "ok", (ds, first[ds]["error"])
    records = {p.name: p.stat().st_mtime_ns for p in (results / "job" / "read").glob("*.json")}

    ok(sh("afkit federation link gsi --reset"))  # healed
    proc = sh("afkit campaign retry C.yaml --failed", cwd=cfile.parent)
    out = ok(proc) + proc.stderr
    again = rows(results)
    assert again["gsi-data"]["status"] == "ok", again["gsi-data"]["error"]
    assert int(again["gsi-data"]["bytes"]) == 16_000_000
    retried = [line for line in out.splitlines() if line.startswith("retry:")]
    assert retried == [f"retry: failed  read/{first['gsi-data']['id']}"], out[-3000:]
    for name, mtime in records.items():
        if first["gsi-data"]["id"] not in name:
            assert (results / "job" / "read" / name).stat().st_mtime_ns == mtime, f"{name} was rerun"
    record = results / "job" / "read" / f"{again['gsi-data']['id']}.json"
    assert json.loads(record.read_text(encoding="utf-8"))["status"] == "ok"


@pytest.fixture
def campaign_dir() -> Iterator[Path]:
    """A working directory with the repository's workflows/ in it; the data the campaign generates
    into the federation's storage is removed afterwards when this run made it."""
    if afkit("federation", "urls").returncode != 0:
        pytest.fail("the federation is not up (run: scripts/testbed federation up)")
    raw: dict[str, Any] = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    made = [Path(s["path"]) / "campaign" for s in raw["storage"].values()]
    made = [p for p in made if not p.exists()]
    d = Path(tempfile.mkdtemp(prefix="afkit-fed-doc-", dir="/tmp"))
    (d / "workflows").symlink_to(REPO / "workflows")
    try:
        yield d
    finally:
        for path in made:
            shutil.rmtree(path, ignore_errors=True)
        shutil.rmtree(d, ignore_errors=True)  # the directory this test created


def test_the_documented_federation_campaign_runs_every_job(campaign_dir: Path) -> None:
    """docs/federation.md: the read sweep over frankfurt's caches and the nine-pair step matrix."""
    link = subprocess.run(["bash", "-c", 'ln -sf "$(scripts/mkbase bench)" build/bench.sif'], cwd=REPO,
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert link.returncode == 0, link.stderr
    proc = sh("afkit campaign run workflows/config/federation.yaml", cwd=campaign_dir, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    [results] = list((campaign_dir / "results").iterdir())
    with (results / "aggregate" / "jobs.csv").open(newline="", encoding="utf-8") as fh:
        jobs = list(csv.DictReader(fh))
    assert len(jobs) == 8 + 18
    assert [(r["id"], r["error"]) for r in jobs if r["status"] != "ok"] == []
    pairs = {(r["site"], r["dataset"]) for r in jobs if r["bench"] == "steps"}
    assert len(pairs) == 9
    warm = [r for r in jobs if r["scenario"] in ("xcache-dca", "dcotf")]
    assert len(warm) == 4 and all(int(r["bytes"]) == 48_000_000 for r in warm)
