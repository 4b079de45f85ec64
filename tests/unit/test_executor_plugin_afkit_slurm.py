"""afkit's SLURM executor plugin: the upstream executor with the wait between status checks capped."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import yaml
from snakemake_executor_plugin_slurm import Executor as SlurmExecutor
from snakemake_interface_executor_plugins.registry import ExecutorPluginRegistry

import snakemake_executor_plugin_afkit_slurm as plugin
from afkit.paths import workflow_files


def executor(cap: int | None) -> Any:
    """An Executor with only what the status-check interval needs (no SLURM, no workflow run)."""
    ex = plugin.Executor.__new__(plugin.Executor)
    ex._next_seconds_between_status_checks = None
    settings = SimpleNamespace(max_status_check_seconds=cap)
    remote = SimpleNamespace(seconds_between_status_checks=1)
    ex.workflow = SimpleNamespace(executor_settings=settings, remote_execution_settings=remote)
    return ex


def test_snakemake_finds_it_as_afkit_slurm_with_the_upstream_executor_below() -> None:
    found = ExecutorPluginRegistry().get_plugin("afkit-slurm")
    assert issubclass(found.executor, SlurmExecutor)
    assert found.executor is plugin.Executor


def test_the_upstream_growth_of_the_wait_stops_at_the_cap() -> None:
    ex = executor(2)
    assert ex.next_seconds_between_status_checks == 1  # snakemake's --seconds-between-status-checks
    # what upstream does after a check that finds no finished job
    ex.next_seconds_between_status_checks = ex.next_seconds_between_status_checks + 10
    assert ex.next_seconds_between_status_checks == 2


def test_without_a_cap_the_upstream_wait_is_kept() -> None:
    ex = executor(None)
    ex.next_seconds_between_status_checks = 25
    assert ex.next_seconds_between_status_checks == 25


def test_the_slurm_profile_uses_it_with_a_cap_of_a_few_seconds() -> None:
    profile = yaml.safe_load((workflow_files().profile("slurm") / "config.yaml").read_text(encoding="utf-8"))
    assert profile["executor"] == "afkit-slurm"
    assert profile["afkit-slurm-max-status-check-seconds"] <= 3
