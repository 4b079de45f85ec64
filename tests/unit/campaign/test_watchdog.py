"""The campaign watchdog (afkit.campaign.watchdog) and the runner's use of it: a snakemake call
that can no longer finish is stopped, the campaign finished from its records."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from afkit.campaign import rules, runner, watchdog
from afkit.campaign.runplan import RunPlan

CRITICAL = "CRITICAL ERROR in check_active_jobs: 'Executor' object has no attribute '_event_logs'"
SUBMIT = "Job 1 submitted to HTCondor Cluster ID 42 with batch name job-1"


def records(tmp_path: Path, n: int = 2, present: int = 2) -> list[Path]:
    paths = [tmp_path / f"job{i}.json" for i in range(n)]
    for p in paths[:present]:
        p.write_text("{}", encoding="utf-8")
    return paths


def queue(still: set[str]) -> dict[str, Any]:
    """A batch system in which the ids in STILL are queued."""

    def queued(ids: Iterable[str]) -> int:
        return len(set(ids) & still)

    return {"htcondor": queued, "slurm": queued}


def test_critical_error_with_every_record_stops_the_call(tmp_path: Path) -> None:
    dog = watchdog.Watchdog(records(tmp_path), queues=queue({"42"}))
    dog.feed(SUBMIT)
    dog.feed(CRITICAL)
    cause = dog.cause()
    assert cause is not None and "_event_logs" in cause


def test_critical_error_waits_while_a_job_without_record_is_queued(tmp_path: Path) -> None:
    dog = watchdog.Watchdog(records(tmp_path, present=1), queues=queue({"42"}))
    dog.feed(SUBMIT)
    dog.feed(CRITICAL)
    assert dog.cause(time.monotonic() + 3600) is None


def test_critical_error_stops_once_the_queue_is_empty_and_snakemake_quiet(tmp_path: Path) -> None:
    dog = watchdog.Watchdog(records(tmp_path, present=1), queues=queue(set()))
    dog.feed(SUBMIT)
    dog.feed(CRITICAL)
    assert dog.cause(time.monotonic()) is None  # it may still be submitting
    assert dog.cause(time.monotonic() + watchdog.QUIET_S + 1) is not None


def test_no_progress_with_every_record_and_an_empty_queue_stops_the_call(tmp_path: Path) -> None:
    dog = watchdog.Watchdog(records(tmp_path), stall_s=30, queues=queue(set()))
    dog.feed(SUBMIT)
    assert dog.cause(time.monotonic() + 10) is None
    cause = dog.cause(time.monotonic() + 31)
    assert cause is not None and "no progress" in cause


def test_no_progress_while_a_job_is_still_queued_is_waited_for(tmp_path: Path) -> None:
    dog = watchdog.Watchdog(records(tmp_path), stall_s=30, queues=queue({"42"}))
    dog.feed(SUBMIT)
    assert dog.cause(time.monotonic() + 3600) is None


def test_submitted_ids_of_both_batch_systems_are_read(tmp_path: Path) -> None:
    dog = watchdog.Watchdog([])
    dog.feed(SUBMIT)
    dog.feed("Job 3 has been submitted with SLURM jobid 17 (log: x).")
    assert dog.submitted == {"htcondor": {"42"}, "slurm": {"17"}}


# a snakemake whose executor died: it logs the error and waits forever (SIGINT ends it)
HUNG = f"import sys, time; print({CRITICAL!r}, file=sys.stderr, flush=True); time.sleep(3600)"


@pytest.fixture
def hung_snakemake(monkeypatch: pytest.MonkeyPatch, make: Any, raw: dict[str, Any]) -> Any:
    monkeypatch.setattr(runner, "POLL_S", 0.05)
    monkeypatch.setattr(watchdog, "QUIET_S", 0.5)
    raw["sites"] = {"here": raw["sites"]["here"]}
    planned = RunPlan.make(make(raw))
    records = runner.plan_calls(planned, Path("c.yaml"))[0].records
    call = runner.Call(None, [sys.executable, "-c", HUNG], records)
    monkeypatch.setattr(runner, "plan_calls", lambda *a, **k: [call])
    return planned


def test_run_stops_a_hung_snakemake_and_finishes_from_the_records(
    hung_snakemake: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    c = hung_snakemake
    for path in runner.plan_calls(c, tmp_path / "c.yaml")[0].records:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}", encoding="utf-8")
    t0 = time.monotonic()
    assert runner.run(c, tmp_path / "c.yaml") == 0
    assert time.monotonic() - t0 < 20
    err = capsys.readouterr().err
    assert "afkit: watchdog: snakemake's executor failed (CRITICAL ERROR in check_active_jobs" in err
    assert "the campaign is finished from them" in err


def test_run_stops_a_hung_snakemake_and_names_the_cause_when_records_are_missing(
    hung_snakemake: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert runner.run(hung_snakemake, tmp_path / "c.yaml") == 1
    err = capsys.readouterr().err
    assert "4 of 4 job(s) of the call left no record" in err and "cause: snakemake's executor failed" in err


def test_interrupt_message_counts_only_jobs_without_a_record(tmp_path: Path) -> None:
    paths = [str(p) for p in records(tmp_path, n=3, present=2)]
    assert "1 of 3 jobs have no record" in rules.interrupted_message(paths)


def test_interrupt_message_when_every_job_has_its_record(tmp_path: Path) -> None:
    paths = [str(p) for p in records(tmp_path, n=2, present=2)]
    assert "nothing was cut off" in rules.interrupted_message(paths)
