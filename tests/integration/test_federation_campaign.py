"""Campaigns across the testbed federation: the documented one as written (its report, its wave
chains, its jobs' steps per pair). The commands are docs/federation.md's, as written. Needs the
federation up (``scripts/testbed federation up``). The site partitioned mid-campaign is
test_federation_faults.py's (its XRootD client timeouts are a loaded host's to miss: it runs alone).
"""

from __future__ import annotations

import csv
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import itsupport
import pytest
import yaml
from itsupport import (
    FED_XRD_ENV,
    REPO,
    federation_work,
    ok,
)
from itsupport import fed_sh as sh

from afkit.campaign.aggregate import wave_skews
from afkit.campaign.rows import read_jobs

pytestmark = pytest.mark.testbed

EXAMPLE = itsupport.FEDERATION_CAMPAIGN
SLOW = "20mbit"  # gsi's link while the campaign runs: the 16 MB read lasts ~6 s, time to cut it


def afkit(*args: str, timeout: float = 120, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return itsupport.afkit(*args, timeout=timeout, cwd=cwd, env=FED_XRD_ENV)


@pytest.fixture(scope="module")
def documented_run() -> Iterator[Path]:
    """The results directory of docs/federation.md's campaign, run once as written from a working
    directory with the repository's workflows/ and build/ in it; the data the campaign generates
    into the federation's storage is removed afterwards when this run made it."""
    if afkit("federation", "urls").returncode != 0:
        pytest.fail("the federation is not up (run: scripts/testbed federation up)")
    raw: dict[str, Any] = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    made = [Path(s["path"]) / "campaign" for s in raw["storage"].values()]
    made = [p for p in made if not p.exists()]
    d = Path(tempfile.mkdtemp(prefix="afkit-fed-doc-", dir="/tmp"))
    # the checkout's workflows/ and build/ (the example's ../../build/bench.sif, taken by name)
    (d / "workflows").symlink_to(REPO / "workflows")
    (d / "build").symlink_to(REPO / "build")
    try:
        link = subprocess.run(["bash", "-c", 'ln -sf "$(scripts/mkbase bench)" build/bench.sif'], cwd=REPO,
                              capture_output=True, text=True, check=False)  # fmt: skip
        assert link.returncode == 0, link.stderr
        # as a user runs it: afkit's own XRootD client timeouts, not the fault tests' short ones (an
        # 8 s request timeout failed a 16 MiB copy chunk over a shared 200 Mbit/s link under load)
        proc = itsupport.sh("afkit campaign run workflows/config/federation.yaml", cwd=d, timeout=600)
        assert proc.returncode == 0, proc.stderr[-4000:]
        [results] = list((d / "results").iterdir())
        yield results
    finally:
        for path in made:
            shutil.rmtree(path, ignore_errors=True)
        shutil.rmtree(d, ignore_errors=True)  # the directory this test created


def all_jobs(results: Path) -> list[dict[str, str]]:
    with (results / "aggregate" / "jobs.csv").open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def test_the_documented_federation_campaign_runs_every_job(documented_run: Path) -> None:
    """docs/federation.md: the read sweep over frankfurt's caches and the nine-pair step matrix."""
    jobs = all_jobs(documented_run)
    assert len(jobs) == 8 + 18
    assert [(r["id"], r["error"]) for r in jobs if r["status"] != "ok"] == []
    pairs = {(r["site"], r["dataset"]) for r in jobs if r["bench"] == "steps"}
    assert len(pairs) == 9
    warm = [r for r in jobs if r["scenario"] in ("xcache-dca", "dcotf")]
    assert len(warm) == 4 and all(int(r["bytes"]) == 48_000_000 for r in warm)


STEP_ROW = re.compile(
    r"<tr><td>(?P<site>[\w-]+)</td><td>(?P<dataset>[\w-]+)</td><td>origin</td><td>copy</td>"
    r"(?:<td>[^<]*</td>)*?"  # the cell keys that differ between the table's rows (benchmark, block size, ...)
    r"<td>local copy</td><td>(?P<staged_from>[^<]+)</td><td>\d+</td>\s*"
    r"<td>[^<]*</td><td>[^<]*</td>\s*"  # image pull, image cache (none here: the shared filesystem)
    r"<td>[^<]*</td><td>(?P<low>[\d.]+)&ndash;(?P<high>[\d.]+)</td>"
)


def test_the_report_shows_stage_in_per_pair_longer_for_remote_pairs(documented_run: Path) -> None:
    """The report's step-duration table, copy mode: every (WN site, dataset site) pair has a
    stage-in range and the endpoint it was staged in from (a remote pair's storage URL, a
    same-site pair's local path), and each remote pair's (over the WAN) is at least 1.5 times the longest
    same-site one (the local copy)."""
    html = (documented_run / "report" / "report.html").read_text(encoding="utf-8")
    rows = list(STEP_ROW.finditer(html))
    stage_in = {(m["site"], m["dataset"].removesuffix("-data")): (float(m["low"]), float(m["high"]))
                for m in rows}  # fmt: skip
    # the processing read the local copy; the table names where it was staged in from
    staged = {(m["site"], m["dataset"].removesuffix("-data")): m["staged_from"] for m in rows}
    assert all((src == "local") == (site == ds) for (site, ds), src in staged.items()), staged
    print("stage-in [s] per (WN site, dataset site), copy mode:", stage_in)
    assert len(stage_in) == 9, f"step table rows (copy mode): {sorted(stage_in)}"
    local = max(high for (site, ds), (_, high) in stage_in.items() if site == ds)
    remote = {pair: low for pair, (low, _) in stage_in.items() if pair[0] != pair[1]}
    assert all(low >= 1.5 * local for low in remote.values()), f"same-site up to {local} s, remote {remote}"


@pytest.fixture
def two_chains(bench_sif: Path) -> Iterator[tuple[Path, str]]:
    """(campaign file, data prefix): two train chains at frankfurt at once (gsi's data over the
    WAN, alpes's over its link), three waves of two jobs each, on the local executor's 2 cores."""
    bench = {"name": "train", "type": "train", "sites": ["frankfurt"], "datasets": ["gsi-data", "alpes-data"],
             "sweep": {"jobs": [2], "repetitions": 3}}  # fmt: skip
    with federation_work(bench_sif, "fed-skew", [bench]) as made:
        yield made


def test_two_wave_chains_at_once_start_every_wave_within_the_skew_goal(two_chains: tuple[Path, str]) -> None:
    """docs/federation.md, "Wave start skew": each wave at a local site is one snakemake job of
    its jobs' threads, so the other chain cannot take a slot the wave is waiting for."""
    cfile, _ = two_chains
    results = Path(ok(afkit("campaign", "results", str(cfile))).strip())
    proc = sh("afkit campaign run C.yaml", cwd=cfile.parent)
    assert proc.returncode == 0, proc.stderr[-4000:]
    with (results / "aggregate" / "jobs.csv").open(newline="", encoding="utf-8") as fh:
        jobs = list(csv.DictReader(fh))
    assert [r["status"] for r in jobs] == ["ok"] * 12, [(r["id"], r["error"]) for r in jobs]
    skews = wave_skews(read_jobs(results / "aggregate" / "jobs.csv"))
    print("wave start skew [s]:", [(w["wave"], w["skew_s"]) for w in skews])
    assert len(skews) == 6 and all(w["within_goal"] for w in skews), skews
