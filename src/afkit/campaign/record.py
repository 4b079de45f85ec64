"""The job record: the one contract between the job, its wrapper and the aggregator.

A job record is one JSON object per job (``results/NAME-HASH/job/BENCH/ID.json``). Three writers
fill it: the **plan** (the job's parameters, afkit.campaign.plan), the **payload** in the image
(steps, bytes, events, intervals: afkit.campaign.steps) and the **wrapper** on the worker node
(provenance, the container's start and end, the bottleneck verdict: afkit.campaign.job). The
aggregator (afkit.campaign.aggregate) turns records into ``jobs.csv``, whose columns are the
fields marked ``column`` plus the ``derived`` ones, in the order of ``FIELDS``.

``problems`` checks a record, or the payload's part of it, against ``FIELDS``: a missing field, a
value of the wrong type, a field nobody writes. The payload checks what it prints, the wrapper
what it gets and what it writes, the aggregator what it reads; each names the job.
Standard library only: the payload imports this module inside images that have nothing but Python.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from afkit.errors import InvalidError

STR, INT, NUM, LIST, DICT = (str,), (int,), (int, float), (list,), (dict,)
STATUSES = ("ok", "failed")
STEPS = ("setup", "stage_in", "processing", "stage_out")
INTERVAL_KEYS = ("t", "time", "bytes")  # one interval: seconds since processing start, wall clock, bytes


@dataclass(frozen=True)
class Field:
    name: str
    types: tuple[type, ...]
    by: str  # plan | payload | wrapper | derived (computed for jobs.csv, never in a record)
    need: str = "always"  # always | ok (when status is ok) | failed (when failed) | optional
    column: bool = True  # a column of jobs.csv


def _plan(name: str, types: tuple[type, ...] = STR, column: bool = True) -> Field:
    return Field(name, types, "plan", column=column)


def _wrapper(name: str, types: tuple[type, ...] = STR, column: bool = True) -> Field:
    return Field(name, types, "wrapper", column=column)


def _payload(name: str, types: tuple[type, ...], need: str = "ok", column: bool = True) -> Field:
    return Field(name, types, "payload", need, column)


def _derived(name: str) -> Field:
    return Field(name, NUM, "derived", "optional")


FIELDS: tuple[Field, ...] = (
    *(_wrapper(n) for n in ("campaign", "campaign_hash", "image_sha256", "image_tag", "image_path")),
    *(_plan(n) for n in ("bench", "type", "id", "wave", "site")),
    _wrapper("executor"),
    _wrapper("batch_job_id"),
    _payload("host", STR),
    *(_plan(n) for n in ("dataset", "scenario", "access")),
    _plan("clients", INT),
    _plan("block_size"),
    _plan("stride"),
    *(_plan(n, INT) for n in ("wave_size", "index", "repetition")),
    _plan("duration", NUM),
    _plan("interval", NUM),
    _plan("template"),
    _wrapper("url"),
    _wrapper("files", INT),
    Field("status", STR, "payload", "always"),
    Field("error", STR, "payload", "failed"),
    _wrapper("start", NUM),
    _wrapper("end", NUM),
    _payload("processing_start", NUM),
    *(_derived(f"{s}_s") for s in (*STEPS, "wall")),
    _payload("bytes", INT),
    _payload("bytes_staged", INT),
    _payload("events", INT),
    _derived("throughput_MBps"),
    _derived("events_per_s"),
    _wrapper("image_fingerprint"),
    _wrapper("bottleneck"),
    _wrapper("bottleneck_reason"),
    _wrapper("wn_site"),  # the batch worker's site: HTCondor machine ad AFKIT_SITE, SLURM partition
    _wrapper("wn_address"),  # the worker node's IPv4 address (in the site's namespace)
    _wrapper("submit_files"),  # shared (the submit host's filesystem) or transferred (shared_fs: false)
    Field(
        "image_pull_s", NUM, "wrapper", "optional"
    ),  # seconds of the image's pull on the worker (shared_fs: false)
    # payload root: ROOT's own counts (TFile::GetFileBytesRead, GetFileReadCalls; the tree caches'
    # transactions, each one TFile::ReadBuffers: an XRootD vector read over root://)
    _payload("root_bytes_read", INT, "optional"),
    _payload("root_read_calls", INT, "optional"),
    _payload("root_vector_reads", INT, "optional"),
    # in the record only
    _plan("payload", column=False),
    _plan("branches", LIST, column=False),
    _wrapper("submit_host", column=False),
    # HTCondor's HoldReason of a job held past its grace (afkit.campaign.held; error says it too)
    Field("hold_reason", STR, "wrapper", "optional", column=False),
    _payload("container_start", NUM, column=False),
    _payload("steps", DICT, column=False),
    _payload("intervals", LIST, column=False),  # also in a failed record: until the failure
    _payload("gaps", LIST, "optional", column=False),  # reads that failed: {t, seconds, url, recovered}
    _payload("bytes_out", INT, column=False),
    _payload("engine", STR, "optional", column=False),  # afkit VERSION (where the job imported it)
    _payload("software_env", DICT, "optional", column=False),
    _payload("afkit_bench", STR, "optional", column=False),
)
COLUMNS = [f.name for f in FIELDS if f.column]  # jobs.csv, in this order
# intervals.csv: one row per interval sample, with the job's fields that tell the series apart
INTERVAL_COLUMNS = ["campaign_hash", "bench", "id", "site", "dataset", "scenario", "access", "clients",
                    "repetition", "time", "t", "bytes"]  # fmt: skip


def _type_ok(value: Any, types: tuple[type, ...]) -> bool:
    return isinstance(value, types) and not isinstance(value, bool)


def _needed(f: Field, status: Any) -> bool:
    return f.need == "always" or f.need == status


def _sample_ok(sample: Any) -> bool:
    return isinstance(sample, dict) and all(_type_ok(sample.get(k), NUM) for k in INTERVAL_KEYS)


def _shape(rec: dict[str, Any]) -> list[str]:
    """What the typed fields cannot say: the status values, the steps, the interval samples."""
    out = []
    if "status" in rec and rec["status"] not in STATUSES:
        out.append(f"status: {rec['status']!r} is not allowed; allowed values: {', '.join(STATUSES)}")
    steps = rec.get("steps")
    if isinstance(steps, dict):
        out += [f"steps.{k}: not a step or not a number" for k, v in steps.items()
                if k not in STEPS or not _type_ok(v, NUM)]  # fmt: skip
    intervals = rec.get("intervals")
    if isinstance(intervals, list):
        bad = [i for i, s in enumerate(intervals) if not _sample_ok(s)]
        if bad:
            out.append(f"intervals[{bad[0]}]: needs numbers {', '.join(INTERVAL_KEYS)}")
    return out


def problems(rec: Any, *, part: str = "record") -> list[str]:
    """What is wrong with REC: a whole job record (``part="record"``) or what the payload prints
    (``part="payload"``: only the payload's fields)."""
    if not isinstance(rec, dict):
        return [f"not a JSON object but {type(rec).__name__}"]
    mine = [f for f in FIELDS if f.by != "derived" and (part == "record" or f.by == "payload")]
    names = {f.name for f in mine}
    out = [f"{k}: unknown field" for k in rec if k not in names]
    for f in mine:
        if f.name not in rec:
            if _needed(f, rec.get("status")):
                out.append(f"{f.name}: missing")
        elif not _type_ok(rec[f.name], f.types):
            want = " or ".join(t.__name__ for t in f.types)
            out.append(f"{f.name}: {rec[f.name]!r} is not {want}")
    return out + _shape(rec)


def check(rec: Any, *, part: str = "record", job: str = "", where: str = "") -> None:
    """Raise InvalidError naming the job (REC's id unless JOB) and WHERE REC came from when REC
    does not match the contract."""
    found = problems(rec, part=part)
    if not found:
        return
    job = job or (str(rec.get("id", "?")) if isinstance(rec, dict) else "?")
    origin = f" ({where})" if where else ""
    raise InvalidError(
        f"job {job}{origin}: the {part} does not match the job-record contract: " + "; ".join(found),
        hint="afkit.campaign.record lists the fields; delete the record and rerun the job "
        "(afkit campaign retry --failed)",
    )
