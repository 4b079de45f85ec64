"""Which records on disk are the campaign's current results.

A campaign's results folder outlives edits of the campaign (afkit.campaign.layout): a record is a
current result of the campaign as it is now only when its job is still planned and the record was
made from the job's spec as planning makes it now (the record's ``spec_sha256`` is the spec's
digest, afkit.campaign.contract.JobSpec.digest). A record of a job whose spec has changed since
is **stale**: aggregation leaves it out (the job is ``missing`` in the tables), retry redoes it,
and snakemake reruns it by itself (its spec file is newer). Records of jobs no longer planned are
left on disk and never read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from afkit.campaign.contract import Job, JobRecord, problems
from afkit.campaign.runplan import RunPlan

STATES = ("ok", "failed", "missing", "stale")


@dataclass(frozen=True)
class Planned:
    """A planned job, where its record is and the digest its record must carry."""

    job: Job
    record: Path
    digest: str


def planned(run: RunPlan) -> list[Planned]:
    """Every job of the campaign as planned now (RUN), in plan order."""
    layout, digests = run.campaign.layout, run.digests
    return [Planned(j, Path(layout.record(j.bench, j.id)), digests[(j.bench, j.id)]) for j in run.jobs]


def state(p: Planned) -> str:
    """ok | failed | missing | stale. An unreadable record, or one that breaks the job-record
    contract, is failed (it is redone); a record of another spec, or without the digest of its
    spec (made by an older afkit), is stale."""
    try:
        data = json.loads(p.record.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return "missing"
    except (OSError, ValueError):
        return "failed"
    if isinstance(data, dict) and data.get("spec_sha256") != p.digest:
        return "stale"
    if problems(data):
        return "failed"
    return "ok" if data.get("status") == "ok" else "failed"


def records(run: RunPlan) -> tuple[list[JobRecord], list[Planned]]:
    """The current records of the campaign planned as RUN (checked against the contract: an error
    names the record), and the planned jobs whose record is stale."""
    current, stale = [], []
    for p in planned(run):
        if not p.record.is_file():
            continue
        rec = JobRecord.read(p.record)
        if rec.spec_sha256 != p.digest:
            stale.append(p)
        else:
            current.append(rec)
    return current, stale


def stale_message(stale: list[Planned]) -> str:
    first = stale[0].job
    return (f"afkit: {len(stale)} job record(s) were made from an older spec of their job (the campaign "
            f"changed since), e.g. {first.bench}/{first.id}: left out of the tables as missing; "
            "afkit campaign run (or retry) redoes them")  # fmt: skip
