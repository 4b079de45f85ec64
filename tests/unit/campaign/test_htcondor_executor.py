"""afkit's HTCondor executor (src/snakemake_executor_plugin_afkit_htcondor): the start-up race forced.

snakemake-interface-executor-plugins' RemoteExecutor.__init__ starts the status thread, then calls
__post_init__, where snakemake-executor-plugin-htcondor 0.3.0 creates ``_event_logs``. Here
upstream's __post_init__ is delayed and an earlier run's job event log exists, so the first status
check always runs first: upstream's status thread dies, afkit's waits and keeps checking.
"""

from __future__ import annotations

import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import snakemake_executor_plugin_htcondor as upstream
from snakemake_interface_executor_plugins.settings import SharedFSUsage
from waitsupport import wait_until

import snakemake_executor_plugin_afkit_htcondor as afkit_htcondor

# one submit event of cluster 1: the job event log a previous run left in the job directory
EVENT_LOG = "000 (001.000.000) 11/26 15:00:00 Job submitted from host: <127.0.0.1:9618>\n...\n"


class Logger:
    def __init__(self) -> None:
        self.errors: list[str] = []

    def error(self, msg: str, **_: Any) -> None:
        self.errors.append(msg)

    def debug(self, msg: str, **_: Any) -> None: ...
    def info(self, msg: str, **_: Any) -> None: ...
    def warning(self, msg: str, **_: Any) -> None: ...


def workflow(jobdir: Path) -> SimpleNamespace:
    (jobdir / "snakemake-rules.log").write_text(EVENT_LOG, encoding="utf-8")
    return SimpleNamespace(
        dag=None,
        scheduler=None,  # as while snakemake builds its executor: the thread's error goes nowhere
        main_snakefile=str(jobdir / "Snakefile"),
        executor_settings=afkit_htcondor.ExecutorSettings(jobdir=str(jobdir), held_timeout=120),
        remote_execution_settings=SimpleNamespace(
            max_status_checks_per_second=100, jobname="{rulename}.{jobid}", jobscript=None,
            seconds_between_status_checks=0.05),
        storage_settings=SimpleNamespace(shared_fs_usage=set(SharedFSUsage)),
        executor_plugin=SimpleNamespace(common_settings=afkit_htcondor.common_settings),
    )  # fmt: skip


@pytest.fixture
def slow_post_init(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Upstream's __post_init__ starts only after the first status check has ended."""
    checked = threading.Event()
    post_init, check = upstream.Executor.__post_init__, upstream.Executor._drain_unified_log

    def slow(self: Any) -> None:
        checked.wait(timeout=1.0)  # afkit's executor checks nothing before: then 1 s passes
        post_init(self)

    def drain(self: Any) -> None:
        try:
            check(self)
        finally:  # the check has ended (upstream's: raised) before __post_init__ starts
            checked.set()

    monkeypatch.setattr(upstream.Executor, "__post_init__", slow)
    monkeypatch.setattr(upstream.Executor, "_drain_unified_log", drain)
    return checked


def test_upstream_executor_loses_the_forced_race(tmp_path: Path, slow_post_init: threading.Event) -> None:
    log = Logger()
    ex = upstream.Executor(workflow(tmp_path), log)
    wait_until(lambda: not ex.wait_thread.is_alive(), 10, 0.02, what="the status loop to end")  # it died,
    assert any("_event_logs" in e for e in log.errors)  # ... on the state __post_init__ makes
    ex.wait = False


def test_afkit_executor_checks_only_after_post_init(tmp_path: Path, slow_post_init: threading.Event) -> None:
    log = Logger()
    ex = afkit_htcondor.Executor(workflow(tmp_path), log)
    slow_post_init.clear()
    # status checks run (after __post_init__) and read the earlier run's event log
    wait_until(slow_post_init.is_set, 10, 0.02, what="a status check")
    wait_until(lambda: 1 in ex._event_logs, 10, 0.02, what="job 1's event log read")
    assert ex.wait_thread.is_alive()
    assert log.errors == []
    ex.wait = False
    ex.wait_thread.join(timeout=5)
