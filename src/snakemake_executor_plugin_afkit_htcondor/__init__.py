"""afkit's HTCondor executor for Snakemake (``--executor afkit-htcondor``, workflows/profiles/htcondor).

A thin subclass of snakemake-executor-plugin-htcondor's ``Executor`` (0.3.0) that fixes two things
for afkit's campaigns (docs/campaigns.md, "HTCondor executor"):

1. **The start-up race that hung campaigns.** snakemake-interface-executor-plugins' (9.4)
   ``RemoteExecutor.__init__`` (snakemake_interface_executor_plugins/executors/remote.py) starts the
   status thread and only then calls ``__post_init__``; the HTCondor plugin creates its state
   (``_event_logs``, ``_job_current_states``, ...) in ``__post_init__``. When the job event log of an
   earlier run exists (a rerun, a retry) and the first status check wins the race, the check raises
   ``'Executor' object has no attribute '_event_logs'``, the status thread dies and snakemake never
   sees a job end. Here the status loop waits until ``__post_init__`` has finished: the gate is an
   event created before the base class starts the thread.
2. **Held jobs fail the job.** A job held longer than ``--afkit-htcondor-held-timeout`` seconds
   (afkit passes the site's ``held_grace``, default 120) is removed from the queue (condor_rm) and
   its job record is written with ``status: failed`` and the hold reason
   (afkit.campaign.held), so the campaign goes on, the report marks the cell and
   ``afkit campaign retry --failed`` redoes it. Upstream keeps a held job for 4 hours by default
   and leaves it in the queue.
3. **No snakemake on the worker.** A benchmark job (rule ``job``) runs afkit's job core on its spec
   (``python -m afkit.campaign.jobcore SPEC``, afkit.campaign.jobcore.batch_command) instead of a
   second snakemake on the execute node (~4 s of start-up per job); other rules run as upstream.
4. **Credentials by file transfer.** A benchmark job of a guarded storage at a site without the
   submit host's files takes the storage's token (or proxy) and CA bundle along in its
   ``transfer_input_files`` (afkit.campaign.jobcore.credential_files); HTCondor removes them with
   the job's sandbox.

Snakemake finds this module as an executor plugin by its name (``snakemake_executor_plugin_*``,
snakemake_interface_common.plugin_registry: a top-level package on sys.path).
"""

import asyncio
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Optional

import snakemake_executor_plugin_htcondor as upstream
from snakemake_executor_plugin_htcondor import JobState, JobStatus

from afkit.campaign import held, jobcore

common_settings = upstream.common_settings


@dataclass
class ExecutorSettings(upstream.ExecutorSettings):
    held_timeout: Optional[int] = field(  # noqa: UP045 (snakemake reads the type at run time)
        default=held.DEFAULT_GRACE,
        metadata={
            "help": "Seconds a job may stay held before it fails: it is removed from the queue "
            f"(condor_rm) and its afkit job record says failed with the hold reason (default "
            f"{held.DEFAULT_GRACE}; afkit campaign run passes the site's held_grace).",
            "required": False,
        },
    )


class Executor(upstream.Executor):  # type: ignore[misc]
    def __init__(self, workflow: Any, logger: Any) -> None:
        # exists before RemoteExecutor.__init__ starts the status thread
        self._afkit_ready = threading.Event()
        super().__init__(workflow, logger)

    def __post_init__(self) -> None:
        try:
            super().__post_init__()
        finally:
            self._afkit_ready.set()

    def format_job_exec(self, job: Any) -> str:
        # upstream strips the python executable (sys.executable, shared software) from the front:
        # the job's executable is that python; with a job_wrapper (shared_fs: false) the wrapper
        # ignores the arguments and runs the job core itself (workflows/scripts/htcondor-sandbox-job)
        command = jobcore.batch_command(job, self.get_python_executable())
        return command if command is not None else str(super().format_job_exec(job))

    def _get_files_for_transfer(self, job: Any) -> Any:
        # a benchmark job at a site without the submit host's files takes its storage's credential
        # files along (afkit.campaign.jobcore.credential_files): by their absolute paths, which
        # HTCondor places at the top of the sandbox; not rule inputs (a renewed token reruns nothing)
        inputs, outputs, remaps = super()._get_files_for_transfer(job)
        return [*inputs, *jobcore.credential_files(job)], outputs, remaps

    async def _wait_for_jobs(self) -> None:
        while not self._afkit_ready.is_set():
            await asyncio.sleep(0.05)
        await super()._wait_for_jobs()

    def _report_and_resolve_job_state(self, current_job: Any, job_state: JobState) -> Any:
        if job_state.status != JobStatus.HELD or job_state.held_since is None:
            return super()._report_and_resolve_job_state(current_job, job_state)
        elapsed = time.time() - job_state.held_since
        if elapsed < self._held_timeout:
            return super()._report_and_resolve_job_state(current_job, job_state)
        cluster = current_job.external_jobid
        reason = job_state.hold_reason or "unknown reason"
        self._remove(cluster)
        written = held.write_record(current_job.job, f"{cluster}.0", reason, elapsed)
        self._cleanup_job_tracking(cluster)
        if written:
            self.logger.warning(
                f"Job {current_job.job.jobid} (HTCondor cluster {cluster}) was held for {elapsed:.0f} s, "
                f"removed from the queue; its record says failed: {reason} ({written})"
            )
            self.report_job_success(current_job)
        else:
            self.report_job_error(
                current_job,
                msg=f"Job {current_job.job.jobid} (HTCondor cluster {cluster}) was held for "
                f"{elapsed:.0f} s and removed from the queue: {reason}",
            )
        return None

    def _remove(self, cluster: int) -> None:
        try:
            upstream.htcondor.Schedd().act(upstream.htcondor.JobAction.Remove, [f"{cluster}.0"])
        except Exception as err:  # the job may have left the queue meanwhile
            self.logger.warning(f"condor_rm of held cluster {cluster} failed: {err}")
