"""``afkit campaign retry``: which jobs to redo (failed records, planned jobs without a record, and
stale records: made from an older spec of their job, afkit.campaign.current).

The records of failed and stale jobs are deleted (their logs stay and get the new attempt
appended); the runner then asks snakemake for exactly these records as its targets.
"""

from __future__ import annotations

from afkit.campaign import current
from afkit.campaign.runplan import RunPlan

Chosen = list[tuple[current.Planned, str]]


def select(run: RunPlan, want: set[str]) -> Chosen:
    """The planned jobs (RUN) whose state is in WANT ({'failed', 'missing'}), with that state;
    stale jobs (their spec changed since their record was made) always: their record is no result."""
    out = []
    for p in current.planned(run):
        st = current.state(p)
        if st in want or st == "stale":
            out.append((p, st))
    return out


def describe(chosen: Chosen) -> list[str]:
    return [f"retry: {st:7s} {p.job.bench}/{p.job.id}" for p, st in chosen]


def clear(chosen: Chosen) -> None:
    """Delete the records of the failed and stale jobs among CHOSEN (missing ones have none)."""
    for p, st in chosen:
        if st in ("failed", "stale"):
            p.record.unlink(missing_ok=True)


def targets(chosen: Chosen) -> dict[str, list[str]]:
    """site → the record files to make."""
    out: dict[str, list[str]] = {}
    for p, _st in chosen:
        out.setdefault(p.job.site, []).append(str(p.record))
    return out


def without_record(chosen: Chosen) -> Chosen:
    """The jobs of CHOSEN that still have no record (after a snakemake call)."""
    return [(p, st) for p, st in chosen if not p.record.is_file()]
