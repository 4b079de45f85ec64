"""The executor registry (afkit.campaign.executors): every executor's knowledge in its module, and a
fourth executor is one new module plus one registry line."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from afkit.campaign import config, executors, plan, preflight, runner, watchdog
from afkit.campaign.executors.base import Plain, Site, SiteKey, present
from afkit.campaign.runplan import RunPlan
from afkit.errors import InvalidError
from afkit.paths import WorkflowFiles, workflow_files


class Dummy(Plain):
    """What a new executor's module would hold: a name, its plugin, a site key of its own."""

    name = "dummy"
    plugin = "afkit-dummy"
    batch = True
    site_keys: Mapping[str, SiteKey] = {
        "queue": SiteKey(
            used=present,
            refusal="sites.{site}.queue: only for executor '{owner}'",
            schema={"type": "string", "pattern": "^[a-z]+$", "description": "the dummy queue"},
        )
    }

    def __init__(self) -> None:
        self.cancelled: list[str] = []

    def site_call(self, site: Site) -> tuple[list[str], list[str]]:
        return ([f"job:dummy_queue={site['queue']!r}"], []) if site.get("queue") else ([], [])

    def call_options(self, sites: Sequence[Site]) -> list[str]:
        return ["--afkit-dummy-sites", str(len(sites))]

    def identity(self, env: Mapping[str, str]) -> str | None:
        return env.get("DUMMY_JOB_ID")

    def cancel(self, ids: Iterable[str]) -> None:
        self.cancelled += ids


@pytest.fixture
def dummy(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Dummy:
    """The registry line of a fourth executor, and its snakemake profile (in a copy of the
    package's workflow: ``profiles/dummy``)."""
    executor = Dummy()
    monkeypatch.setitem(executors.REGISTRY, "dummy", executor)
    workflow = tmp_path / "workflow"
    shutil.copytree(workflow_files().root, workflow, ignore=shutil.ignore_patterns("results", ".snakemake"))
    (workflow / "profiles" / "dummy").mkdir()
    (workflow / "profiles" / "dummy" / "config.yaml").write_text("executor: afkit-dummy\n", encoding="utf-8")
    monkeypatch.setattr(runner, "workflow_files", lambda: WorkflowFiles(workflow))
    return executor


def test_the_schema_allows_exactly_the_registered_executors() -> None:
    executor = config.load_schema()["properties"]["sites"]["additionalProperties"]["properties"]["executor"]
    assert executor["enum"] == ["local", "htcondor", "slurm"] == list(executors.REGISTRY)


def test_the_schema_file_lists_no_executor_of_its_own() -> None:
    text = workflow_files().schema.read_text(encoding="utf-8")
    assert "enum: [local, htcondor, slurm]" not in text  # the registry is the one list


def test_every_registered_executor_has_its_profile() -> None:
    for name, executor in executors.REGISTRY.items():
        assert executor.name == name
        profile = runner.profile_dir(name) / "config.yaml"
        assert f"executor: {executor.plugin}\n" in profile.read_text(encoding="utf-8")


def test_an_unregistered_executor_is_refused_naming_the_registered_ones(raw: dict[str, Any]) -> None:
    raw["sites"]["far"]["executor"] = "dummy"
    with pytest.raises(InvalidError, match=r'allowed values: "local", "htcondor", "slurm"$'):
        config.validate(raw)


def test_a_registered_fourth_executor_is_accepted_and_planned(
    dummy: Dummy, raw: dict[str, Any], make: Any, tmp_path: Path
) -> None:
    raw["sites"]["far"].update(executor="dummy", queue="fast")
    raw["benchmarks"][0]["sites"] = ["here", "far"]
    c = make(raw)
    assert {j.site for j in plan.expand(c)} == {"here", "far"}
    here, far = (call.argv for call in runner.plan_calls(RunPlan.make(c), tmp_path / "c.yaml"))
    assert str(runner.profile_dir("dummy")) in far and str(runner.profile_dir("local")) in here
    assert far[far.index("--set-resources") + 1] == "job:dummy_queue='fast'"
    assert far[far.index("--afkit-dummy-sites") + 1] == "1"
    preflight.check_executor(c, "afkit-dummy", site="far")  # its plugin runs its sites


def test_a_fourth_executors_site_key_is_refused_elsewhere(dummy: Dummy, raw: dict[str, Any]) -> None:
    raw["sites"]["far"]["queue"] = "fast"  # far runs on slurm
    with pytest.raises(InvalidError, match=r"sites\.far\.queue: only for executor 'dummy'"):
        config.validate(raw)


def test_a_fourth_executor_identifies_its_jobs(dummy: Dummy) -> None:
    assert executors.identify({"DUMMY_JOB_ID": "9"}) == ("dummy", "9")
    assert executors.identify({}) == ("local", "")


def test_the_htcondor_job_ad_names_the_job_and_the_machine_ad_the_site(tmp_path: Path) -> None:
    job_ad, machine_ad = tmp_path / ".job.ad", tmp_path / ".machine.ad"
    job_ad.write_text('ClusterId = 42\nProcId = 3\nOwner = "afkit"\n')
    machine_ad.write_text('AFKIT_SITE = "gsi"\n')
    env = {"_CONDOR_JOB_AD": str(job_ad), "_CONDOR_MACHINE_AD": str(machine_ad)}
    assert executors.identify(env) == ("htcondor", "42.3")
    assert executors.worker_site(env) == "gsi"


def test_slurm_names_the_job_and_its_partition() -> None:
    env = {"SLURM_JOB_ID": "17", "SLURM_JOB_PARTITION": "debug"}
    assert (executors.identify(env), executors.worker_site(env)) == (("slurm", "17"), "debug")


def test_a_local_job_has_no_batch_site() -> None:
    assert executors.worker_site({"PATH": "/bin"}) == ""


@pytest.mark.parametrize(("plugin", "executor"), [("afkit-slurm", "slurm"), ("afkit-htcondor", "htcondor"),
                                                  ("slurm", "slurm"), ("local", "local")])  # fmt: skip
def test_a_snakemake_plugin_runs_its_executors_sites(plugin: str, executor: str) -> None:
    assert executors.of_plugin(plugin) == executor


def test_the_watchdog_reads_submissions_of_a_fourth_executor(dummy: Dummy, tmp_path: Path) -> None:
    dummy.submitted = re.compile(r"dummy job (\d+) queued")
    dog = watchdog.Watchdog([tmp_path / "r.json"])
    dog.feed("dummy job 5 queued")
    assert dog.submitted == {"dummy": {"5"}}


def test_a_killed_snakemake_leaves_its_batch_jobs_to_the_executor_to_cancel(
    dummy: Dummy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner, "STOP_WAIT_S", 0.2)
    deaf = (
        "import signal; signal.signal(signal.SIGINT, signal.SIG_IGN); "
        "print('up', flush=True); signal.pause()"  # until the SIGKILL
    )
    proc = subprocess.Popen([sys.executable, "-c", deaf], process_group=0, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline() == "up\n"  # SIGINT ignored from here on
    dog = watchdog.Watchdog([tmp_path / "r.json"], queues={})
    dog.submitted = {"dummy": {"7", "8"}}
    assert runner._stop(proc, dog) < 0  # SIGINT ignored: killed
    assert sorted(dummy.cancelled) == ["7", "8"]


def test_a_fourth_executors_site_key_is_checked_by_its_schema(dummy: Dummy, raw: dict[str, Any]) -> None:
    raw["sites"]["far"].update(executor="dummy", queue="Not Valid")
    with pytest.raises(InvalidError, match=r"sites\.far\.queue: 'Not Valid' does not match"):
        config.validate(raw)


def test_a_fourth_executors_site_key_is_documented(dummy: Dummy) -> None:
    from afkit.campaign import schemadoc

    row = "| `sites.NAME.queue` | string | no |  | the dummy queue |"
    assert row in schemadoc.render(config.load_schema())
