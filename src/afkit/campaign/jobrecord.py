"""The job record's field table, as the rest of afkit names it: afkit.campaign.contract.JobRecord.

A job record is one JSON object per job (``results/NAME-vVERSION/job/BENCH/ID.json``). Three writers
fill it: the **plan** (the job's parameters, afkit.campaign.plan), the **payload** in the image
(steps, bytes, events, intervals: afkit.campaign.steps) and the **wrapper** on the worker node
(provenance, the container's start and end, the bottleneck verdict: afkit.campaign.job). The
aggregator (afkit.campaign.aggregate) turns records into ``jobs.csv``, whose columns are the
fields marked ``column`` plus the ``derived`` ones, in the order of ``FIELDS``.

``problems`` says what is wrong with a record, or the payload's part of it: a missing field, a
value of the wrong type, a field nobody writes. A record is checked when it is written
(``JobRecord.write``) and when it is read (``JobRecord.read``). Standard library only.
"""

from __future__ import annotations

from afkit.campaign.contract import (
    COLUMNS,
    FIELDS,
    INTERVAL_COLUMNS,
    INTERVAL_KEYS,
    STATUSES,
    STEPS,
    Field,
    check,
    problems,
)

__all__ = ["COLUMNS", "FIELDS", "INTERVAL_COLUMNS", "INTERVAL_KEYS", "STATUSES", "STEPS", "Field", "check",
           "problems"]  # fmt: skip
