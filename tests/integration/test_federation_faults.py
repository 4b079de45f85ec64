"""Network faults during a campaign across the testbed federation, and what the campaign keeps.

Each test runs ``workflows/config/federation.yaml`` cut down to one small read benchmark
(``payload: afkit-bench``, jobs at frankfurt, one 16 MB file per dataset, the local executor), hits
the gsi job with one fault while it reads and checks three things: the job's record shows the
fault (a gap in its intervals, its ``gaps``, or ``failed`` with the cause on one line in
``jobs.csv``), the other jobs are ``ok``, and a rerun afterwards recomputes exactly what was lost
(nothing when the job survived) while the other records stay as they were (mtime and content).
The partitioned site: while the gsi job reads, gsi's link goes down; the job ends ``failed`` with
the cause on one line, and after the link is healed ``afkit campaign retry --failed`` redoes exactly
that job. The module runs alone (conftest.ALONE): the per-second bytes it asserts, and the jobs'
short XRootD client timeouts (FED_XRD_ENV: a 3 s connection window), are what a second worker's
load on 2 cores changes (CI's partitioned job once timed out opening its file on a loaded host).
Needs the federation up (``scripts/testbed federation up``); docs/federation.md, "Network faults".
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import itsupport
import pytest
from itsupport import (
    FED_READ,
    FED_XRD_ENV,
    fed_cache_file,
    federation_work,
    job_records,
    jobs_by_dataset,
    ok,
    wait_reading,
    xcache_holds,
)
from itsupport import fed_sh as sh
from waitsupport import wait_until

pytestmark = pytest.mark.testbed

SLOW = "20mbit"  # gsi's link during a test: the 16 MB read of the gsi job lasts ~6 s
SIZE = 16_000_000


@pytest.fixture
def work(bench_sif: Path) -> Iterator[tuple[Path, str]]:
    """(campaign file, data prefix): frankfurt's jobs read gsi's, frankfurt's and alpes's data."""
    with federation_work(bench_sif, "fed-fault", [FED_READ]) as made:
        yield made


def run_with_fault(cfile: Path, fault: str, undo: str, hold: float) -> tuple[Path, str]:
    """(results directory, campaign output): run CFILE's campaign with gsi's link at SLOW; once the
    gsi job's read has written an interval record, FAULT (a documented command line), HOLD seconds
    later UNDO (a fault of HOLD seconds is the scenario: that wait is time itself)."""
    results = Path(ok(itsupport.afkit("campaign", "results", str(cfile))).strip())
    ok(sh(f"afkit federation link gsi --rate {SLOW}"))
    run = subprocess.Popen(shlex.split("afkit campaign run C.yaml"), cwd=cfile.parent, text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           env={**os.environ, **FED_XRD_ENV})  # fmt: skip
    try:
        wait_reading(run, cfile, "gsi-data", 240)
        ok(sh(fault))
        time.sleep(hold)  # the fault lasts HOLD seconds: the scenario itself, not a wait for something
        ok(sh(undo))
        out, _ = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == 0, out[-4000:]
    return results, out


def record(results: Path, row: dict[str, str]) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        (results / "job" / "read" / f"{row['id']}.json").read_text(encoding="utf-8")
    )
    return data


def all_ok_and_rerun_changes_nothing(cfile: Path, results: Path) -> dict[str, dict[str, str]]:
    """Every job ok with its whole file; a rerun of the campaign afterwards recomputes nothing."""
    jobs = jobs_by_dataset(results)
    assert {ds: (r["status"], r["bytes"], r["error"]) for ds, r in jobs.items()} == {
        ds: ("ok", str(SIZE), "") for ds in ("gsi-data", "frankfurt-data", "alpes-data")
    }, {ds: {k: record(results, r).get(k) for k in ("duration", "steps", "gaps")} for ds, r in jobs.items()}
    before = job_records(results, "read")
    ok(sh("afkit campaign run C.yaml", cwd=cfile.parent))
    assert job_records(results, "read") == before, "the rerun recomputed a job that had survived"
    return jobs


def test_latency_spike_the_job_survives_with_an_empty_second_in_its_intervals(
    work: tuple[Path, str],
) -> None:
    cfile, _ = work
    results, _ = run_with_fault(
        cfile,
        "afkit federation toxic gsi add --type latency --name spike --attr latency=2500",
        "afkit federation toxic gsi remove --name spike",
        2.5,
    )
    jobs = all_ok_and_rerun_changes_nothing(cfile, results)
    intervals = record(results, jobs["gsi-data"])["intervals"]
    assert any(i["bytes"] == 0 for i in intervals[:-1]), f"no empty second in {intervals}"


@pytest.fixture
def small_blocks(bench_sif: Path) -> Iterator[tuple[Path, str]]:
    """Like ``work``, reading 256 KiB blocks: a slow second still counts a block or two."""
    with federation_work(
        bench_sif, "fed-collapse", [{**FED_READ, "sweep": {"block_size": ["256k"]}}]
    ) as made:
        yield made


def test_bandwidth_collapse_the_job_survives_with_the_drop_in_its_intervals(
    small_blocks: tuple[Path, str],
) -> None:
    cfile, _ = small_blocks
    results, _ = run_with_fault(
        cfile, "afkit federation link gsi --rate 1mbit", f"afkit federation link gsi --rate {SLOW}", 3.0
    )
    jobs = all_ok_and_rerun_changes_nothing(cfile, results)
    # whole seconds only (the first and the last are partial)
    rates = [i["bytes"] for i in record(results, jobs["gsi-data"])["intervals"][1:-1]]
    assert len(rates) >= 3 and min(rates) < 0.25 * max(rates), f"no collapse in the per-second bytes {rates}"


def test_connection_reset_mid_read_the_job_reconnects_and_records_the_gap(
    work: tuple[Path, str],
) -> None:
    cfile, _ = work
    results, _ = run_with_fault(
        cfile,
        "afkit federation toxic gsi add --type reset_peer --name reset --attr timeout=0",
        "afkit federation toxic gsi remove --name reset",
        1.0,
    )
    jobs = all_ok_and_rerun_changes_nothing(cfile, results)
    gaps = record(results, jobs["gsi-data"])["gaps"]
    assert gaps and all(g["recovered"] for g in gaps), gaps
    assert all("10.77.1.1:1094" in g["url"] for g in gaps), gaps
    rec = record(results, jobs["gsi-data"])
    assert rec["processing_start"] <= gaps[0]["t"] <= rec["end"], (gaps, rec["processing_start"])
    for ds in ("frankfurt-data", "alpes-data"):
        assert "gaps" not in record(results, jobs[ds]), ds


def test_partitioned_site_fails_its_job_only_and_retry_redoes_just_that_job(
    work: tuple[Path, str],
) -> None:
    cfile, _prefix = work
    results = Path(ok(itsupport.afkit("campaign", "results", str(cfile))).strip())
    ok(sh(f"afkit federation link gsi --rate {SLOW}"))
    run = subprocess.Popen(
        shlex.split("afkit campaign run C.yaml"),
        cwd=cfile.parent,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, **FED_XRD_ENV},
    )
    try:
        wait_reading(run, cfile, "gsi-data", 240)
        ok(sh("afkit federation link gsi --down"))
        out, _ = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == 0, out[-4000:]
    first = jobs_by_dataset(results)
    assert first["gsi-data"]["status"] == "failed", first["gsi-data"]
    cause = first["gsi-data"]["error"]
    assert cause and "\n" not in cause and "afkit bench exited" in cause and "10.77.1.1:1094" in cause, cause
    for ds in ("frankfurt-data", "alpes-data"):
        assert first[ds]["status"] == "ok", (ds, first[ds]["error"])
    failed = json.loads(
        (results / "job" / "read" / f"{first['gsi-data']['id']}.json").read_text(encoding="utf-8")
    )
    assert failed["intervals"] and any(i["bytes"] > 0 for i in failed["intervals"]), failed  # read until cut
    assert failed["gaps"] and not failed["gaps"][-1]["recovered"], failed.get("gaps")
    records = job_records(results, "read")

    ok(sh("afkit federation link gsi --reset"))  # healed
    proc = sh("afkit campaign retry C.yaml --failed", cwd=cfile.parent)
    out = ok(proc) + proc.stderr
    again = jobs_by_dataset(results)
    assert again["gsi-data"]["status"] == "ok", again["gsi-data"]["error"]
    assert int(again["gsi-data"]["bytes"]) == 16_000_000
    retried = [line for line in out.splitlines() if line.startswith("retry:")]
    assert retried == [f"retry: failed  read/{first['gsi-data']['id']}"], out[-3000:]
    for name, (mtime, _content) in records.items():
        if first["gsi-data"]["id"] not in name:
            assert (results / "job" / "read" / name).stat().st_mtime_ns == mtime, f"{name} was rerun"
    record = results / "job" / "read" / f"{again['gsi-data']['id']}.json"
    assert json.loads(record.read_text(encoding="utf-8"))["status"] == "ok"


@pytest.fixture
def cache_work(bench_sif: Path) -> Iterator[tuple[Path, str]]:
    """(campaign file, data prefix): frankfurt's jobs read two datasets of gsi's storage through
    frankfurt's XCache, ``cached`` and ``cold``; ``cached``'s file is written here (the campaign
    keeps a generated file of the right size), so that the test can read it through the cache
    first."""
    bench = {
        **FED_READ,
        "datasets": ["cached", "cold"],
        "sweep": {"block_size": ["1m"], "scenario": ["xcache"]},
    }
    more = {"cached": "gsi", "cold": "gsi"}
    with federation_work(bench_sif, "fed-origin-down", [bench], more) as (cfile, prefix):
        data = Path(json.loads(ok(itsupport.afkit("federation", "urls")))["sites"]["gsi"]["data"])
        cached = data / prefix / "cached-0000.dat"
        cached.parent.mkdir(parents=True)
        cached.write_bytes(os.urandom(SIZE))
        cached.chmod(0o644)
        yield cfile, prefix


def test_origin_down_the_cached_file_is_read_and_only_the_uncached_job_fails_and_is_retried(
    cache_work: tuple[Path, str],
) -> None:
    cfile, prefix = cache_work
    fed = json.loads(ok(itsupport.afkit("federation", "urls")))
    cache = fed["sites"]["frankfurt"]["caches"]["xcache"]
    url = f"{cache}//{prefix}/cached-0000.dat"
    reader = [sys.executable, "-m", "afkit", "bench", "read", "--no-monitor", url]
    warm = itsupport.afkit("federation", "exec", "frankfurt", "--", *reader, timeout=120)
    assert warm.returncode == 0, warm.stderr[-2000:]
    cached_copy = fed_cache_file("frankfurt", "xcache", f"{prefix}/cached-0000.dat")
    wait_until(lambda: xcache_holds(cached_copy), 30, 0.2, what=f"frankfurt's xcache to hold {cached_copy}")
    ok(sh("afkit federation toxic gsi disable"))  # gsi's storage unreachable from the WAN
    results = Path(ok(itsupport.afkit("campaign", "results", str(cfile))).strip())
    run = sh("afkit campaign run C.yaml", cwd=cfile.parent)
    assert run.returncode == 0, run.stderr[-4000:]
    first = jobs_by_dataset(results)
    cached = first["cached"]
    assert (cached["status"], cached["bytes"]) == ("ok", str(SIZE)), cached["error"]
    assert first["cold"]["status"] == "failed", first["cold"]
    cause = first["cold"]["error"]
    assert cause and "\n" not in cause and "afkit bench exited 1" in cause and "cold-0000.dat" in cause, cause
    before = job_records(results, "read")

    ok(sh("afkit federation link gsi --reset"))  # the origin is back
    retry = sh("afkit campaign retry C.yaml --failed", cwd=cfile.parent)
    out = ok(retry) + retry.stderr
    assert [ln for ln in out.splitlines() if ln.startswith("retry:")] == [
        f"retry: failed  read/{first['cold']['id']}"
    ], out[-3000:]
    again = jobs_by_dataset(results)
    assert (again["cold"]["status"], again["cold"]["bytes"]) == ("ok", str(SIZE)), again["cold"]["error"]
    after = job_records(results, "read")
    name = f"{cached['id']}.json"
    assert after[name] == before[name], "the job of the cached file was rerun"
