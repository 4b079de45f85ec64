"""HTCondor campaigns that never hang (issue 21): the executor's start-up race forced, held jobs.

Runs inside the testbed as user afkit (root cannot submit). The race: snakemake-interface-executor-
plugins starts the status thread before ``__post_init__``, where snakemake-executor-plugin-htcondor
0.3.0 creates ``_event_logs``; with an earlier run's job event log in place, a status check that
runs first dies. A ``sitecustomize`` on PYTHONPATH holds upstream's ``__post_init__`` back until
the first status check has ended, so that check always runs first: afkit's executor (the
profile's ``afkit-htcondor``) must finish the campaign, and upstream's executor must hit the error
and be stopped by afkit's watchdog.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from itsupport import REPO, origin_dataset, steps_campaign
from waitsupport import wait_until

pytestmark = pytest.mark.testbed

# upstream's __post_init__ waits until the status thread's first check has ended (at most 4 s: afkit's
# executor checks nothing before __post_init__), so that check always runs first; after a failed check
# until the status thread has ended (otherwise snakemake may already be told and stop instead of hang)
SLOW_POST_INIT = """\
import threading
import snakemake_executor_plugin_htcondor as upstream
_checked = threading.Event()
_post_init, _drain = upstream.Executor.__post_init__, upstream.Executor._drain_unified_log
def _slow(self):
    if _checked.wait(timeout=4):  # the check failed: its thread ends before snakemake has a
        self.wait_thread.join(timeout=10)  # scheduler to tell, as when the race hung campaigns
    _post_init(self)
def _drained(self):
    try:
        _drain(self)
    finally:
        _checked.set()
upstream.Executor.__post_init__ = _slow
upstream.Executor._drain_unified_log = _drained
"""
CRITICAL = "CRITICAL ERROR in check_active_jobs"


@pytest.fixture(scope="module")
def data_dir() -> Iterator[str]:
    with origin_dataset("afkit-watchdog-it", ("uproot-HZZ.root",), owner="afkit") as name:
        yield name


def as_afkit(cmd: str, work: Path, timeout: float = 240, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "HOME": "/home/afkit", "USER": "afkit", "LOGNAME": "afkit",
            "XRD_CONNECTIONRETRY": "1", "XRD_REQUESTTIMEOUT": "20", **env}  # fmt: skip
    setpriv = ["setpriv", "--reuid=afkit", "--regid=afkit", "--init-groups"]
    return subprocess.run([*setpriv, sys.executable, "-m", "afkit", *cmd.split()], cwd=work, env=full,
                          capture_output=True, text=True, check=False, timeout=timeout)  # fmt: skip


def condor_campaign(work: Path, bench_sif: Path, data_dir: str, **site: object) -> Path:
    """One HTCondor job (steps, direct read) in WORK, as user afkit; SITE: more site keys."""
    cfile = steps_campaign(work, "c", {"sif": str(bench_sif)}, data_dir)
    raw = yaml.safe_load(cfile.read_text(encoding="utf-8"))
    raw["sites"]["wn"].update(executor="htcondor", apptainer_args=[], **site)
    cfile.write_text(yaml.safe_dump(raw), encoding="utf-8")
    for path in (work, *work.iterdir()):
        shutil.chown(path, "afkit", "afkit")
    (work / "workflows").symlink_to(REPO / "workflows")
    return cfile


def the_record(work: Path) -> Path:
    [record] = list((work / "results").glob("*/job/steps/*.json"))
    return record


@pytest.fixture(scope="module")
def raced(bench_sif: Path, data_dir: str) -> Iterator[Path]:
    """A campaign run once (its job event log has events), and the sitecustomize that delays upstream."""
    work = Path(tempfile.mkdtemp(prefix="afkit-watchdog-", dir="/tmp"))
    try:
        condor_campaign(work, bench_sif, data_dir)
        first = as_afkit("campaign run c.yaml", work)
        assert first.returncode == 0, first.stderr[-3000:]
        assert (work / ".snakemake" / "htcondor" / "snakemake-rules.log").stat().st_size > 0
        hook = work / "hook"
        hook.mkdir()
        (hook / "sitecustomize.py").write_text(SLOW_POST_INIT, encoding="utf-8")
        yield work
    finally:
        shutil.rmtree(work, ignore_errors=True)  # the directory this fixture created


def rerun_deleted(work: Path, extra: str = "") -> tuple[subprocess.CompletedProcess[str], float]:
    """Delete the job's record and run the campaign again with upstream's __post_init__ delayed."""
    the_record(work).unlink()
    t0 = time.monotonic()
    proc = as_afkit(f"campaign run c.yaml {extra}".strip(), work, PYTHONPATH=str(work / "hook"))
    return proc, time.monotonic() - t0


def test_forced_race_afkit_executor_finishes(raced: Path) -> None:
    proc, _ = rerun_deleted(raced)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert CRITICAL not in proc.stderr
    assert "afkit: watchdog" not in proc.stderr
    assert json.loads(the_record(raced).read_text(encoding="utf-8"))["status"] == "ok"


def test_forced_race_upstream_executor_is_stopped_by_the_watchdog(raced: Path) -> None:
    proc, seconds = rerun_deleted(raced, "-- --executor htcondor")
    assert CRITICAL in proc.stderr  # the race really happened: upstream's status loop died
    assert "afkit: watchdog: snakemake's executor failed" in proc.stderr
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert seconds < 150
    record = json.loads(the_record(raced).read_text(encoding="utf-8"))
    jobs_csv = (raced / "results").glob("*/aggregate/jobs.csv")
    assert record["status"] == "ok"
    assert [r for r in next(jobs_csv).read_text().splitlines()[1:] if r]  # the table made from the record


def test_held_job_fails_with_its_reason_and_retry_redoes_it(bench_sif: Path, data_dir: str) -> None:
    work = Path(tempfile.mkdtemp(prefix="afkit-held-", dir="/tmp"))
    try:
        condor_campaign(work, bench_sif, data_dir, held_grace=2)
        run = as_afkit_bg("campaign run c.yaml", work)
        try:
            held = hold_when_queued(work, run)
            _out, err = run.communicate(timeout=120)
        finally:
            if run.poll() is None:
                run.kill()
        assert run.returncode == 0, err[-3000:]
        record = json.loads(the_record(work).read_text(encoding="utf-8"))
        assert record["status"] == "failed"
        assert "held by HTCondor" in record["error"] and "condor_hold" in record["error"]
        assert record["batch_job_id"] == f"{held}.0"
        assert "condor_hold" in record["hold_reason"]
        assert condor_q(work, f"ClusterId == {held}") == []  # removed from the queue
        retry = as_afkit("campaign retry --failed c.yaml", work)
        assert retry.returncode == 0, retry.stderr[-3000:]
        assert json.loads(the_record(work).read_text(encoding="utf-8"))["status"] == "ok"
    finally:
        shutil.rmtree(work, ignore_errors=True)  # the directory this test created


def as_afkit_bg(cmd: str, work: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "HOME": "/home/afkit", "USER": "afkit", "LOGNAME": "afkit"}
    setpriv = ["setpriv", "--reuid=afkit", "--regid=afkit", "--init-groups"]
    return subprocess.Popen([*setpriv, sys.executable, "-m", "afkit", *cmd.split()], cwd=work, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip


def condor_q(work: Path, constraint: str) -> list[str]:
    """Cluster ids of this test's jobs (Iwd = WORK) matching CONSTRAINT, never others'."""
    proc = subprocess.run(["condor_q", "-allusers", "-constraint", f'Iwd == "{work}" && {constraint}',
                           "-af", "ClusterId"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    return proc.stdout.split()


def hold_when_queued(work: Path, run: subprocess.Popen[str]) -> str:
    """condor_hold (as afkit) the campaign's job as soon as it is in the queue; its cluster id."""
    [job, *_] = wait_until(lambda: condor_q(work, "true"), 120, 0.2, what="the campaign's job in the queue",
                           proc=run)  # fmt: skip
    subprocess.run(["setpriv", "--reuid=afkit", "--regid=afkit", "--init-groups", "condor_hold", job],
                   check=True, capture_output=True)  # fmt: skip
    return job
