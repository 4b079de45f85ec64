"""``afkit campaign retry``: which jobs to redo (failed records, planned jobs without a record).

The records of failed jobs are deleted (their logs stay and get the new attempt appended); the
runner then asks snakemake for exactly these records as its targets.
"""

from __future__ import annotations

import json
from pathlib import Path

from afkit.campaign import plan
from afkit.campaign import record as jobrecord
from afkit.campaign.config import Campaign


def record_path(c: Campaign, job: plan.Job) -> Path:
    """Where the workflow writes JOB's record (workflows/rules/common.smk: job_record)."""
    return c.results_dir / "job" / job.bench / f"{job.id}.json"


def status(c: Campaign, job: plan.Job) -> str:
    """ok | failed | missing (an unreadable record, or one that breaks the job-record contract,
    counts as failed: it is redone)."""
    path = record_path(c, job)
    if not path.is_file():
        return "missing"
    try:
        rec = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "failed"
    return "ok" if not jobrecord.problems(rec) and rec.get("status") == "ok" else "failed"


def select(c: Campaign, want: set[str]) -> list[tuple[plan.Job, str]]:
    """The planned jobs whose status is in WANT ({'failed', 'missing'}), with that status."""
    out = []
    for job in plan.expand(c):
        st = status(c, job)
        if st in want:
            out.append((job, st))
    return out


def describe(chosen: list[tuple[plan.Job, str]]) -> list[str]:
    return [f"retry: {st:7s} {job.bench}/{job.id}" for job, st in chosen]


def clear(c: Campaign, chosen: list[tuple[plan.Job, str]]) -> None:
    """Delete the records of the failed jobs among CHOSEN (missing ones have none)."""
    for job, st in chosen:
        if st == "failed":
            record_path(c, job).unlink(missing_ok=True)


def targets(c: Campaign, chosen: list[tuple[plan.Job, str]]) -> dict[str, list[str]]:
    """site → the record files to make."""
    out: dict[str, list[str]] = {}
    for job, _st in chosen:
        out.setdefault(job.site, []).append(str(record_path(c, job)))
    return out


def without_record(c: Campaign, chosen: list[tuple[plan.Job, str]]) -> list[tuple[plan.Job, str]]:
    """The jobs of CHOSEN that still have no record (after a snakemake call)."""
    return [(job, st) for job, st in chosen if not record_path(c, job).is_file()]
