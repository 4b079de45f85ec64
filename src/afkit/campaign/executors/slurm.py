"""The ``slurm`` executor: a site's jobs go to slurmctld through afkit's plugin ``afkit-slurm``
(src/snakemake_executor_plugin_afkit_slurm, workflows/profiles/slurm).

Site key only it acts on: ``partition`` (the partition the site's jobs are submitted to). A job
knows it runs here from ``$SLURM_JOB_ID`` and its site from ``$SLURM_JOB_PARTITION``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from afkit.campaign.executors.base import (
    BatchJob,
    Plain,
    Site,
    SiteKey,
    output_lines,
    output_words,
    own_key,
    run_quietly,
)

# squeue states of a job that has left the batch system
ENDED = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL",
         "PREEMPTED", "BOOT_FAIL", "DEADLINE"}  # fmt: skip


class Slurm(Plain):
    name = "slurm"
    plugin = "afkit-slurm"
    batch = True
    site_keys: Mapping[str, SiteKey] = {
        "partition": own_key(
            "partition",
            "slurm only, the SLURM partition the site's jobs are submitted to (default the cluster's "
            "default partition)",
            pattern="^[A-Za-z0-9][A-Za-z0-9_.-]*$",
        ),
    }
    submitted = re.compile(r"submitted with SLURM jobid (\d+)")

    def site_call(self, site: Site) -> tuple[list[str], list[str]]:
        if site.get("partition"):
            return [f"job:slurm_partition={site['partition']!r}"], []
        return [], []

    def identity(self, env: Mapping[str, str]) -> str | None:
        return env.get("SLURM_JOB_ID") or None

    def worker_site(self, env: Mapping[str, str]) -> str | None:
        return env.get("SLURM_JOB_PARTITION")

    def queued(self, ids: Iterable[str]) -> int | None:
        out = output_words(["squeue", "-h", "-o", "%T", "-j", ",".join(ids)])
        return None if out is None else sum(1 for state in out if state not in ENDED)

    def cancel(self, ids: Iterable[str]) -> None:
        ids = list(ids)
        if ids:
            run_quietly(["scancel", *ids])

    def tagged(self, tag: str) -> tuple[list[str], list[str]]:
        # the plugin names every job PREFIX_RUNUUID (snakemake-executor-plugin-slurm 2.8.0,
        # __init__.py: jobname_prefix, at most 50 of [A-Za-z0-9_-])
        return [], ["--afkit-slurm-jobname-prefix", tag]

    def active(self, tag: str) -> list[BatchJob] | None:
        # -t all: also configuring and completing jobs; those that ended (kept for MinJobAge) are
        # left out by their state
        lines = output_lines(["squeue", "--me", "-h", "-t", "all", "-o", "%i|%j|%T|%N"])
        if lines is None:
            return None
        jobs = []
        for line in lines:
            job_id, name, state, node = [*line.split("|"), "", "", ""][:4]
            if name.startswith(tag + "_") and state not in ENDED:
                jobs.append(BatchJob(job_id, state, node.strip()))
        return jobs


EXECUTOR = Slurm()
