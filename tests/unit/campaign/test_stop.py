"""After an interrupt, every batch job of the campaign is cancelled and gone before afkit returns
(afkit.campaign.stop, the executors' tags, afkit.campaign.interrupt's payloads that die with their
job)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest
from waitsupport import running, wait_until

from afkit.campaign import executors, rules, runner, stop
from afkit.campaign.executors import htcondor, slurm
from afkit.campaign.executors.base import BatchJob, Plain, SiteKey
from afkit.campaign.layout import ResultsLayout
from afkit.campaign.runplan import RunPlan


class Batch(Plain):
    """A batch system whose jobs end ROUNDS listings after they were cancelled (None: never)."""

    name = "dummy"
    plugin = "afkit-dummy"
    batch = True
    site_keys: Mapping[str, SiteKey] = {}

    def __init__(self, jobs: list[BatchJob], rounds: int | None) -> None:
        self.jobs, self.rounds = jobs, rounds
        self.cancelled: list[str] = []
        self.listings = 0

    def cancel(self, ids: Iterable[str]) -> None:
        self.cancelled += list(ids)

    def active(self, tag: str) -> list[BatchJob] | None:
        self.listings += 1
        if self.rounds is not None and self.cancelled and self.listings > self.rounds:
            return []
        return self.jobs


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def campaign_on(monkeypatch: pytest.MonkeyPatch, raw: dict[str, Any], make: Any) -> Any:
    def on(batch: Batch) -> Any:
        monkeypatch.setitem(executors.REGISTRY, "dummy", batch)
        raw["sites"]["far"]["executor"] = "dummy"
        return make(raw)

    return on


def test_the_campaigns_jobs_are_cancelled_until_none_is_left(campaign_on: Any) -> None:
    batch = Batch([BatchJob("7", "CG", "node1"), BatchJob("8", "PD")], rounds=3)
    clock = Clock()
    assert stop.settle(campaign_on(batch), limit=60, clock=clock, sleep=clock.sleep)
    # one listing per round, each job cancelled once, done at the first listing that shows none
    assert batch.cancelled == ["7", "8"] and batch.listings == 4 and clock.now == 3 * stop.POLL_S


def test_a_job_queued_while_stopping_is_cancelled_too(campaign_on: Any) -> None:
    batch = Batch([BatchJob("7", "R", "node1")], rounds=3)
    clock = Clock()

    def sleep(seconds: float) -> None:
        clock.sleep(seconds)
        batch.jobs = [BatchJob("7", "CG", "node1"), BatchJob("9", "PD")]  # submitted meanwhile

    assert stop.settle(campaign_on(batch), limit=60, clock=clock, sleep=sleep)
    assert batch.cancelled == ["7", "9"]


def test_the_wait_says_what_it_waits_for(campaign_on: Any, capsys: pytest.CaptureFixture[str]) -> None:
    clock = Clock()
    stop.settle(campaign_on(Batch([BatchJob("7", "CG", "node1")], rounds=2)), limit=60, clock=clock,
                sleep=clock.sleep)  # fmt: skip
    assert "waiting for the campaign's cancelled batch jobs to end" in capsys.readouterr().err
    assert "dummy 7 (CG on node1)" in stop.describe({"dummy": [BatchJob("7", "CG", "node1")]})


def test_a_job_that_does_not_end_is_named_at_the_bound(
    campaign_on: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    clock = Clock()
    batch = Batch([BatchJob("12", "R", "node2")], rounds=None)
    assert not stop.settle(campaign_on(batch), limit=10, clock=clock, sleep=clock.sleep)
    err = capsys.readouterr().err
    assert "after 10 s these batch jobs of the campaign have not ended: dummy 12 (R on node2)" in err
    assert clock.now == 10


def test_a_campaign_without_batch_sites_has_nothing_to_wait_for(make: Any, raw: dict[str, Any]) -> None:
    for site in raw["sites"].values():
        site["executor"] = "local"
    assert stop.settle(make(raw), limit=0)


def test_a_batch_system_that_cannot_be_asked_is_said_at_once(
    campaign_on: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    batch = Batch([], rounds=None)
    monkeypatch.setattr(batch, "active", lambda tag: None)
    assert not stop.settle(campaign_on(batch), limit=60, clock=Clock(), sleep=lambda s: None)
    assert "cannot tell whether the campaign's batch jobs have ended" in capsys.readouterr().err


def test_the_bound_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AFKIT_STOP_TIMEOUT", "30")
    assert stop.bound() == 30
    monkeypatch.setenv("AFKIT_STOP_TIMEOUT", "soon")
    assert stop.bound() == stop.DEFAULT_BOUND_S


def test_the_tag_fits_the_slurm_plugins_job_name_prefix(tmp_path: Path) -> None:
    tag = ResultsLayout.at(tmp_path / "results", "a very long campaign name, with commas" * 3, 12).batch_tag
    assert len(tag) <= 50 and all(c.isalnum() or c in "_-" for c in tag), tag


def test_two_results_folders_have_two_tags(tmp_path: Path) -> None:
    one = ResultsLayout.at(tmp_path / "a", "c", 1).batch_tag
    assert one == ResultsLayout.at(tmp_path / "a", "c", 1).batch_tag
    assert one != ResultsLayout.at(tmp_path / "b", "c", 1).batch_tag


def test_slurm_finds_the_tagged_jobs_that_have_not_ended(monkeypatch: pytest.MonkeyPatch) -> None:
    lines = ["11|afkit-c-v1-ab_uuid|PENDING|", "12|afkit-c-v1-ab_uuid|CONFIGURING|n1",
             "13|afkit-c-v1-ab_uuid|COMPLETING|n1", "14|afkit-c-v1-ab_uuid|CANCELLED|n1",
             "15|other_uuid|RUNNING|n1", "16|afkit-c-v1-abc_uuid|RUNNING|n1"]  # fmt: skip
    monkeypatch.setattr(slurm, "output_lines", lambda cmd: lines)
    assert [str(j) for j in slurm.EXECUTOR.active("afkit-c-v1-ab")] == [
        "11 (PENDING)", "12 (CONFIGURING on n1)", "13 (COMPLETING on n1)"]  # fmt: skip


def test_htcondor_finds_the_tagged_jobs_still_in_the_queue(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[str]] = []
    rows = ["5 0 1 undefined", "6 0 3 slot1@node", "7 0 2 slot2@node"]
    monkeypatch.setattr(htcondor, "output_lines", lambda cmd: seen.append(cmd) or rows)
    assert [str(j) for j in htcondor.EXECUTOR.active("afkit-t")] == ["5.0 (I)", "6.0 (X on slot1@node)",
                                                                       "7.0 (R on slot2@node)"]  # fmt: skip
    assert 'AfkitCampaign == "afkit-t"' in seen[0]


def test_every_batch_call_marks_its_jobs_with_the_campaigns_tag(
    raw: dict[str, Any], make: Any, tmp_path: Path
) -> None:
    raw["sites"]["here"].update(executor="slurm")
    raw["sites"]["far"].update(executor="htcondor", requirements='AFKIT_SITE == "far"')
    raw["benchmarks"][0]["sites"] = ["here", "far"]
    c = make(raw)
    tag = c.layout.batch_tag
    calls = [call.argv for call in runner.plan_calls(RunPlan.make(c), tmp_path / "c.yaml")]
    [on_slurm] = [cmd for cmd in calls if "afkit_site=here" in cmd]
    [on_condor] = [cmd for cmd in calls if "afkit_site=far" in cmd]
    assert on_slurm[on_slurm.index("--afkit-slurm-jobname-prefix") + 1] == tag
    assert on_condor.count("--set-resources") == 1  # one list: a second would replace the first
    resources = on_condor[on_condor.index("--set-resources") + 1 :]
    assert f"job:classad_AfkitCampaign={tag!r}" in resources
    assert "job:requirements='AFKIT_SITE == \"far\"'" in resources


def test_under_afkit_the_workflow_leaves_the_missing_records_to_afkit(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from afkit.campaign import interrupt

    monkeypatch.setattr(interrupt, "interrupted", lambda: True)
    monkeypatch.setenv("AFKIT_RUNNER", "1")
    with pytest.raises(SystemExit) as done:
        rules.on_error(["/nonexistent/r.json"])
    assert done.value.code == 130 and "no record" not in capsys.readouterr().err
    monkeypatch.delenv("AFKIT_RUNNER")
    with pytest.raises(SystemExit):
        rules.on_error(["/nonexistent/r.json"])
    assert "1 of 1 jobs have no record" in capsys.readouterr().err


def test_a_payload_dies_with_the_job_that_started_it(tmp_path: Path) -> None:
    """The job core killed outright (SIGKILL: no handler runs) takes its payload with it."""
    pidfile = tmp_path / "payload.pid"
    job = textwrap.dedent(f"""
        from afkit.campaign import interrupt
        interrupt.run(["sh", "-c", "echo $$ > {pidfile}; exec sleep 300"])
    """)
    core = subprocess.Popen([sys.executable, "-c", job])
    try:
        wait_until(lambda: pidfile.is_file() and pidfile.read_text().strip(), timeout=60,
                   what="the payload's pid", proc=core)  # fmt: skip
        payload = int(pidfile.read_text())
        os.kill(core.pid, signal.SIGKILL)
        core.wait()
        wait_until(lambda: not running(payload), timeout=30, what="the payload's end")
    finally:
        core.kill()


def test_an_interrupts_word_counts_every_job_of_the_campaign_without_a_record(
    raw: dict[str, Any], make: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Interrupted in the first site's call: the word counts the jobs of both sites (it counted the
    cut-off call's alone)."""
    import sys

    raw["benchmarks"][0]["sites"] = ["here", "far"]
    planned = RunPlan.make(make(raw))
    every = runner._records(planned, None, None)
    here = runner._records(planned, "here", None)
    assert 0 < len(here) < len(every)
    # the call's snakemake stands in: it interrupts afkit (SIGINT to its parent, as Ctrl-C) and waits
    stand_in = "import os, signal; os.kill(os.getppid(), signal.SIGINT); signal.pause()"  # until stopped
    calls = [runner.Call("here", [sys.executable, "-c", stand_in], here), runner.Call("far", ["false"], ())]
    monkeypatch.setattr(runner, "plan_calls", lambda *a, **k: calls)
    monkeypatch.setattr(runner.stop, "settle", lambda _c: None)
    assert runner.run(planned, Path("c.yaml")) == 130
    said = capsys.readouterr().err
    assert f"{len(every)} of {len(every)} jobs have no record" in said, said
