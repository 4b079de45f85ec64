"""afkit's SLURM executor: snakemake-executor-plugin-slurm with status checks for short jobs.

snakemake-executor-plugin-slurm 2.8.0 (``snakemake_executor_plugin_slurm/__init__.py``,
``Executor.check_active_jobs``) waits 10 s longer after every status check that finds no finished
job (``next_seconds_between_status_checks + 10``, up to 180 s) and back to
``--slurm-init-seconds-before-status-checks`` after one that does; the increment has no setting. A
job of a few seconds is then seen finished 15-25 s late (issue 21: 21.5 s of wall time per
benchmark job whose wrapper takes 0.56 s). This plugin is that executor (same settings, under
``--afkit-slurm-...``; the profile ``workflows/profiles/slurm`` uses it) with one setting more:
``--afkit-slurm-max-status-check-seconds`` caps that wait (default 180: upstream's behaviour).

A benchmark job (rule ``job``) runs no snakemake on the node: its sbatch job runs afkit's job core
on its spec (``python -m afkit.campaign.jobcore SPEC``, afkit.campaign.jobcore.batch_command) where
upstream runs snakemake, which runs a second snakemake (``--executor slurm-jobstep``, through srun)
for the rule: ~4 s of start-up each. Other rules run as with the upstream plugin. (Array jobs,
``--afkit-slurm-array-jobs``, need the jobstep executor: not for rule ``job``.)

Snakemake finds it as the executor ``afkit-slurm`` (a package named
``snakemake_executor_plugin_*``, snakemake-interface-common's plugin registry).
"""

from dataclasses import dataclass, field
from typing import Any, Optional

from snakemake_executor_plugin_slurm import Executor as SlurmExecutor
from snakemake_executor_plugin_slurm import ExecutorSettings as SlurmSettings
from snakemake_executor_plugin_slurm import common_settings

from afkit.campaign import jobcore

__all__ = ["Executor", "ExecutorSettings", "common_settings"]

UPSTREAM_MAX_SECONDS = 180  # the upstream plugin's cap (max_sleep_time in check_active_jobs)


@dataclass
class ExecutorSettings(SlurmSettings):
    # Optional[int], not "int | None": snakemake makes the option's type from the field's type
    max_status_check_seconds: Optional[int] = field(  # noqa: UP045
        default=UPSTREAM_MAX_SECONDS,
        metadata={
            "help": "Longest wait between two status checks (seconds): the upstream plugin adds "
            "10 s after every check that finds no finished job, up to 180 s.",
        },
    )


class Executor(SlurmExecutor):
    """The upstream executor whose wait between status checks never exceeds the setting and whose
    benchmark jobs run the job core instead of snakemake."""

    def format_job_exec(self, job: Any) -> str:
        command = jobcore.batch_command(job, self.get_python_executable())
        return command if command is not None else str(super().format_job_exec(job))

    @property
    def next_seconds_between_status_checks(self) -> Any:
        return SlurmExecutor.next_seconds_between_status_checks.fget(self)

    @next_seconds_between_status_checks.setter
    def next_seconds_between_status_checks(self, value: Any) -> None:
        cap = getattr(self.workflow.executor_settings, "max_status_check_seconds", None)
        if value is not None and cap is not None:
            value = min(value, cap)
        SlurmExecutor.next_seconds_between_status_checks.fset(self, value)
