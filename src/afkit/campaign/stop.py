"""After an interrupt: every batch job of the campaign cancelled and gone before afkit returns.

Snakemake, on the SIGINT afkit passes it, cancels the batch jobs it knows (scancel, condor_rm), but
not a job whose submission was under way (slurmd started such jobs seconds after the cancel, and
one wrote its record after afkit had exited), and it returns while cancelled jobs are still
completing. So afkit, once snakemake has ended, cancels every job that carries the campaign's
mark (``ResultsLayout.batch_tag``: the SLURM job-name prefix, the HTCondor job attribute;
afkit.campaign.executors) and waits, with progress and a bound, until the batch systems know none
of them as pending, configuring, running or completing (squeue's PD/CF/R/CG, condor_q's
I/R/X/H; jobs kept after their end for MinJobAge do not count). Only then does it say which jobs
have no record: no job is left that could write one. A job's payload dies with its job
(afkit.campaign.interrupt: its own process group, parent-death signal, a PID namespace), also
when the batch system kills the job core outright.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable

from afkit.campaign import executors
from afkit.campaign.config import Campaign
from afkit.campaign.executors.base import BatchJob

DEFAULT_BOUND_S = 120.0  # AFKIT_STOP_TIMEOUT: how long afkit waits for the cancelled jobs to end
PROGRESS_S = 5.0  # how often the wait says what it waits for
POLL_S = 1.0


def bound() -> float:
    """The wait's bound in seconds: $AFKIT_STOP_TIMEOUT, else 120."""
    value = os.environ.get("AFKIT_STOP_TIMEOUT", "")
    try:
        return float(value) if value else DEFAULT_BOUND_S
    except ValueError:
        return DEFAULT_BOUND_S


def batch_executors(campaign: Campaign) -> list[executors.Executor]:
    """The campaign's executors that submit batch jobs."""
    names = sorted({s["executor"] for s in campaign.config["sites"].values()})
    return [e for e in (executors.get(n) for n in names) if e.batch]


def describe(jobs: dict[str, list[BatchJob] | None]) -> str:
    parts = []
    for name, found in jobs.items():
        if found is None:
            parts.append(f"{name}: cannot ask the batch system")
        elif found:
            parts.append(f"{name} " + ", ".join(str(j) for j in found))
    return "; ".join(parts)


def settle(
    campaign: Campaign,
    *,
    limit: float | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> bool:
    """Cancel the campaign's batch jobs and wait until none is left (at most LIMIT seconds, default
    ``bound()``), saying what it waits for; True when none is left. At the bound it names each job
    still there, its state and node, and returns False."""
    batch = batch_executors(campaign)
    if not batch:
        return True
    tag = campaign.layout.batch_tag
    limit = bound() if limit is None else limit
    start = clock()
    said: float | None = None
    cancelled: dict[str, set[str]] = {e.name: set() for e in batch}
    while True:
        # one listing per batch system and round; every job it shows that was not cancelled yet is
        # (a job may have been queued meanwhile); done when a listing shows none
        left = {e.name: e.active(tag) for e in batch}
        for executor in batch:
            new = [j.id for j in left[executor.name] or [] if j.id not in cancelled[executor.name]]
            executor.cancel(new)
            cancelled[executor.name].update(new)
        if any(found is None for found in left.values()) and not any(left.values()):
            print(f"afkit: warning: cannot tell whether the campaign's batch jobs have ended "
                  f"({describe(left)}); look with squeue or condor_q", file=sys.stderr)  # fmt: skip
            return False
        if not any(left.values()):
            waited = clock() - start
            if waited >= PROGRESS_S:
                print(f"afkit: every batch job of the campaign has ended ({waited:.0f} s)", file=sys.stderr)
            return True
        now = clock()
        if now - start >= limit:
            print(f"afkit: error: after {limit:.0f} s these batch jobs of the campaign have not ended: "
                  f"{describe(left)}; cancel them by hand (scancel, condor_rm) and look at their "
                  "nodes", file=sys.stderr)  # fmt: skip
            return False
        if said is None or now - said >= PROGRESS_S:
            print(f"afkit: waiting for the campaign's cancelled batch jobs to end ({now - start:.0f} s of "
                  f"at most {limit:.0f} s): {describe(left)}", file=sys.stderr)  # fmt: skip
            said = now
        sleep(POLL_S)
