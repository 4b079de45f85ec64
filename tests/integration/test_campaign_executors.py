"""A small campaign through each executor (local, HTCondor, SLURM), jobs inside the Apptainer image.

Runs inside the testbed (scripts/testbed run): real apptainer, the testbed's XRootD origin
($AFKIT_XROOTD_URL, namespace root $AFKIT_XROOTD_DATA), HTCondor jobs submitted by condor_submit
as user afkit, SLURM jobs by sbatch as user afkit. Checks the aggregated table (every job, its
provenance, the host it ran on, the executor) and the HTML report. The image is the afkit bench
image (`scripts/mkbase bench`, or $AFKIT_BENCH_SIF).
"""

from __future__ import annotations

import csv
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from itsupport import REPO, origin_dataset, require_env
from waitsupport import wait_until

pytestmark = pytest.mark.testbed


@pytest.fixture(scope="module")
def data_dir() -> Iterator[str]:
    """A dataset directory in the origin's namespace: real ROOT files, owned by the job user."""
    files = ("uproot-HZZ.root", "uproot-Zmumu.root", "uproot-HZZ-zlib.root")
    with origin_dataset("afkit-campaign-it", files, owner="afkit") as name:
        yield name


# mem_mb: a small request that the testbed's single SLURM node always fits
def campaign(executor: str, sif: Path, data: str, work: Path) -> dict[str, Any]:
    url = require_env("AFKIT_XROOTD_URL")
    files = [f"{data}/uproot-HZZ.root", f"{data}/uproot-Zmumu.root"]
    return {
        "name": f"it-{executor}",
        "image": {"sif": str(sif)},
        "sites": {"wn": {"executor": executor, "storage": "origin", "scratch": str(work / "scratch"),
                         "resources": {"cores": 1, "mem_mb": 1, "runtime": 10}}},
        "storage": {
            "origin": {"url": url, "export": "/", "path": require_env("AFKIT_XROOTD_DATA")},
            "down": {"url": "root://127.0.0.1:9", "export": "/"},
        },
        "datasets": {
            "hzz": {"storage": "origin", "files": files},
            "hzz-xrd": {"storage": "origin", "files": files},
            "unreachable": {"storage": "down", "files": [f"{data}/uproot-HZZ.root"]},
            "hzz2": {"storage": "origin", "branches": ["Muon_Px", "Muon_Py"],
                     "files": [f"{data}/uproot-HZZ.root", f"{data}/uproot-HZZ-zlib.root"]},
        },
        # hzz: the local mount (RedirLocal: WN and data at one site); hzz-xrd: always over XRootD
        "locations": {"default": "redirlocal", "pairs": {"wn/hzz-xrd": "remote", "wn/hzz2": "remote"}},
        "benchmarks": [
            {"name": "steps", "type": "steps", "sites": ["wn"], "datasets": ["hzz", "hzz-xrd"],
             "sweep": {"access": ["direct", "copy"]}},
            {"name": "xrd", "type": "read", "sites": ["wn"], "datasets": ["hzz-xrd"], "duration": 1,
             "interval": 0.5, "sweep": {"clients": [2], "block_size": ["64k"]}},
            {"name": "ana", "type": "analysis", "sites": ["wn"], "datasets": ["hzz-xrd"],
             "sweep": {"clients": [1]}},
            {"name": "down", "type": "steps", "sites": ["wn"], "datasets": ["unreachable"]},
            # the image's own afkit bench as the payload (2 read clients; uproot analysis), over XRootD
            {"name": "ab-read", "type": "read", "payload": "afkit-bench", "sites": ["wn"],
             "datasets": ["hzz2"], "duration": 1, "sweep": {"clients": [2], "block_size": ["64k"]}},
            {"name": "ab-ana", "type": "analysis", "payload": "afkit-bench", "sites": ["wn"],
             "datasets": ["hzz2"]},
        ],
    }  # fmt: skip


def as_user(user: str, cmd: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XRD_CONNECTIONRETRY": "1", "XRD_REQUESTTIMEOUT": "20"}
    if user != "root":
        env.update(HOME=f"/home/{user}", USER=user, LOGNAME=user)
        cmd = ["setpriv", f"--reuid={user}", f"--regid={user}", "--init-groups", *cmd]
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=300)


# docs/campaigns.md's command, run in a directory holding workflows/ (the repository's) and the campaign
SNAKEMAKE = {
    "local": "snakemake -s workflows/Snakefile --configfile my-campaign.yaml --profile workflows/profiles/local",  # noqa: E501
    "htcondor": "snakemake -s workflows/Snakefile --configfile my-campaign.yaml --profile workflows/profiles/htcondor",  # noqa: E501
    "slurm": "snakemake -s workflows/Snakefile --configfile my-campaign.yaml --profile workflows/profiles/slurm",  # noqa: E501
}


@pytest.mark.parametrize(("executor", "user"), [("local", "root"), ("htcondor", "afkit"), ("slurm", "afkit")])
def test_campaign_through_executor(executor: str, user: str, bench_sif: Path, data_dir: str) -> None:
    work = Path(tempfile.mkdtemp(prefix=f"afkit-campaign-{executor}-", dir="/tmp"))
    try:
        shutil.chown(work, user, user)
        raw = campaign(executor, bench_sif, data_dir, work)
        if user == "root":
            raw["sites"]["wn"]["apptainer_args"] = ["--userns"]
        cfile = work / "my-campaign.yaml"
        cfile.write_text(yaml.safe_dump(raw), encoding="utf-8")
        shutil.chown(cfile, user, user)
        (work / "workflows").symlink_to(REPO / "workflows")
        proc = as_user(user, shlex.split(SNAKEMAKE[executor]), work)
        assert proc.returncode == 0, proc.stderr[-4000:]
        [results] = list((work / "results").iterdir())
        with (results / "aggregate" / "jobs.csv").open() as fh:
            rows = list(csv.DictReader(fh))
        by_bench = {r["bench"]: r for r in rows}
        assert len(rows) == 4 + 1 + 1 + 1 + 2
        ok = [r for r in rows if r["bench"] != "down"]
        for r in ok:
            assert r["status"] == "ok", (r["bench"], r["error"])
            assert r["executor"] == executor
            assert r["image_path"] == str(bench_sif)
            assert len(r["image_sha256"]) == 64
            assert len(r["campaign_hash"]) == 12 and results.name.endswith("-v1")  # NAME-vVERSION
            assert float(r["setup_s"]) > 0 and float(r["processing_s"]) > 0
        steps = {(r["dataset"], r["access"]): r for r in rows if r["bench"] == "steps"}
        assert steps[("hzz", "direct")]["url"].startswith(os.environ["AFKIT_XROOTD_DATA"])
        assert steps[("hzz-xrd", "direct")]["url"].startswith("root://")
        for ds in ("hzz", "hzz-xrd"):
            assert int(steps[(ds, "copy")]["bytes_staged"]) == 217945 + 178971  # the two files copied
            assert float(steps[(ds, "copy")]["stage_in_s"]) > 0
            assert steps[(ds, "direct")]["bytes_staged"] == "0"
        assert int(by_bench["ana"]["events"]) == 2421 + 2304  # HZZ + Zmumu, read with uproot in the image
        assert int(by_bench["xrd"]["bytes"]) > 0
        assert int(by_bench["ab-read"]["bytes"]) > 0
        assert int(by_bench["ab-ana"]["events"]) == 2 * 2421
        for path in (results / "job").glob("*/*.json"):  # the campaign's afkit, bound into the image
            rec = json.loads(path.read_text(encoding="utf-8"))
            assert rec["status"] == "failed" or rec["engine"].endswith("(/afkit)"), (path.name, rec)
        down = by_bench["down"]
        assert down["status"] == "failed"
        assert "127.0.0.1:9" in down["error"]
        html = (results / "report" / "report.html").read_text()
        assert '<td class="failed">' in html
        assert "data:image/png;base64," in html
        if executor == "local":  # the same campaign through afkit: everything is done already
            again = as_user(user, shlex.split("afkit campaign run my-campaign.yaml"), work)
            assert again.returncode == 0, again.stderr[-3000:]
            assert "Nothing to be done" in again.stderr
    finally:
        shutil.rmtree(work, ignore_errors=True)  # the directory this test created


def _condor_running(work: Path) -> list[str]:
    """Running HTCondor jobs of this test's campaign only (Iwd = its directory), never others'."""
    constraint = f'JobStatus == 2 && Iwd == "{work}"'
    proc = as_user("afkit", ["condor_q", "-constraint", constraint, "-af", "ClusterId"], work)
    return proc.stdout.split()


def test_killed_job_is_retried_and_a_restart_reruns_nothing(bench_sif: Path, data_dir: str) -> None:
    """An HTCondor job removed while it runs (as an eviction or a kill would) is resubmitted."""
    work = Path(tempfile.mkdtemp(prefix="afkit-campaign-kill-", dir="/tmp"))
    try:
        shutil.chown(work, "afkit", "afkit")
        raw = campaign("htcondor", bench_sif, data_dir, work)
        raw["benchmarks"] = [{"name": "long", "type": "read", "sites": ["wn"], "datasets": ["hzz"],
                              "duration": 15, "interval": 1}]  # fmt: skip
        cfile = work / "campaign.yaml"
        cfile.write_text(yaml.safe_dump(raw), encoding="utf-8")
        setpriv = ["setpriv", "--reuid=afkit", "--regid=afkit", "--init-groups"]
        profile = REPO / "workflows" / "profiles" / "htcondor"
        cmd = [*setpriv, sys.executable, "-m", "snakemake", "-s", str(REPO / "workflows" / "Snakefile"),
               "--configfile", str(cfile), "--profile", str(profile)]  # fmt: skip
        env = {**os.environ, "HOME": "/home/afkit", "USER": "afkit", "LOGNAME": "afkit"}
        sm = subprocess.Popen(
            cmd, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        try:
            killed = wait_until(lambda: _condor_running(work), 120, 0.5, what="the job to run", proc=sm)
            as_user("afkit", ["condor_rm", *killed], work)
            out, _ = sm.communicate(timeout=240)
        finally:
            if sm.poll() is None:
                sm.kill()
        assert sm.returncode == 0, out[-4000:]
        assert "Error in rule job" in out  # the removed attempt failed ...
        [results] = list((work / "results").iterdir())
        with (results / "aggregate" / "jobs.csv").open() as fh:
            [row] = list(csv.DictReader(fh))
        assert row["status"] == "ok"  # ... and the retry produced the record
        again = as_user("afkit", cmd[len(setpriv) :], work)
        assert again.returncode == 0
        assert "Nothing to be done" in again.stdout + again.stderr
    finally:
        shutil.rmtree(work, ignore_errors=True)  # the directory this test created
