"""jobs.csv and intervals.csv read back as typed rows: each cell parsed once, by its field's type.

The aggregator (afkit.campaign.aggregate) writes the two tables from checked job records; the
report, the figures, the scaling series and ``afkit campaign compare`` read them here, and nowhere
else parse a cell. A :class:`JobRow` holds the columns those readers use, each of the type the
job-record contract gives its field (afkit.campaign.contract.JobRecord): text as ``str`` ("" for an
empty cell), counts as ``int``, seconds and rates as ``float``, and ``None`` for a number a job did
not measure (a failed job's bytes, a missing job's start); :meth:`JobRow.value` reads any column,
those the row does not name too (a payload's metric, e.g. ``root_bytes_read``). Columns newer than
a table (tables written before ``payload``, ``bottleneck``, ``url`` ... were columns) take their
defaults; only the columns every table has had (``REQUIRED``) must be there. A cell that is not
its field's type is an InvalidError (exit 6) naming the table, the row and the column. Standard
library only.
"""

from __future__ import annotations

import csv
import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from afkit.campaign.contract import FIELDS, INT, NUM, STR, Cell
from afkit.errors import InvalidError

# every jobs.csv has had these: a comparison cell, its status and its throughput
REQUIRED = ("bench", "site", "dataset", "scenario", "access", "clients", "throughput_MBps", "status")
INTERVAL_REQUIRED = ("id", "t", "bytes")
AGAIN = "make the table again from the job records (afkit campaign aggregate CAMPAIGN.yaml)"


@dataclass(frozen=True)
class JobRow:
    """One row of jobs.csv as the readers see it (the field's meaning: contract.JobRecord)."""

    campaign: str = ""
    campaign_hash: str = ""
    image_sha256: str = ""
    image_tag: str = ""
    image_path: str = ""
    bench: str = ""
    type: str = ""
    id: str = ""
    wave: str = ""
    site: str = ""
    dataset: str = ""
    scenario: str = ""
    access: str = ""
    clients: int = 0
    block_size: str = ""
    stride: str = ""
    demand: str = ""
    wave_size: int = 1
    repetition: int | None = None
    duration: float | None = None
    interval: float | None = None
    url: str = ""
    status: str = ""
    error: str = ""
    start: float | None = None
    end: float | None = None
    processing_start: float | None = None
    setup_s: float | None = None
    stage_in_s: float | None = None
    processing_s: float | None = None
    stage_out_s: float | None = None
    bytes: int | None = None
    events: int | None = None
    throughput_MBps: float | None = None
    events_per_s: float | None = None
    bottleneck: str = ""
    bottleneck_reason: str = ""
    image_pull_s: float | None = None
    payload: str = ""
    readspeed_verdict: str = ""
    image_ref: str = ""
    image_cache: str = ""
    # the table's other columns (a metric no reader names here: root_bytes_read, ...), each typed
    others: Mapping[str, Cell | None] = field(default_factory=dict, compare=False, repr=False)

    def value(self, column: str) -> Cell | None:
        """The cell of COLUMN, typed: any column of jobs.csv, those this row does not name as well
        (None: a number not measured, or a column the table does not have)."""
        if column in _NAMED:
            named: Cell | None = getattr(self, column)
            return named
        return self.others.get(column)

    def step_s(self, step: str) -> float | None:
        """Seconds of STEP (setup, stage_in, processing, stage_out); None when not measured."""
        return {"setup": self.setup_s, "stage_in": self.stage_in_s, "processing": self.processing_s,
                "stage_out": self.stage_out_s}[step]  # fmt: skip


@dataclass(frozen=True)
class IntervalRow:
    """One row of intervals.csv: bytes job ``id`` read in the interval ending ``t`` seconds after
    its processing started (``time``: that moment's wall clock, None in tables without it)."""

    id: str
    t: float
    bytes: float
    time: float | None = None


# each column's type: jobs.csv's from the contract's field table, intervals.csv's the sample's
# numbers (contract.INTERVAL_KEYS)
_TYPES: dict[str, dict[str, tuple[type, ...]]] = {
    "JobRow": {f.name: f.types for f in FIELDS},
    "IntervalRow": {"id": STR, "t": NUM, "time": NUM, "bytes": NUM},
}

_R = TypeVar("_R", JobRow, IntervalRow)
_NAMED = frozenset(f.name for f in dataclasses.fields(JobRow)) - {"others"}


def _parse(types: tuple[type, ...], name: str, annotation: str, text: str, where: str) -> object:
    if types == STR:
        return text
    if text == "":
        if annotation.endswith("| None"):
            return None
        raise InvalidError(f"{where}: column {name} is empty", hint=AGAIN)
    try:
        return int(text) if types == INT else float(text)
    except ValueError:
        want = "an integer" if types == INT else "a number"
        raise InvalidError(f"{where}: column {name}: {text!r} is not {want}", hint=AGAIN) from None


def _typed(cls: type[_R], raw: Mapping[str, str], where: str) -> _R:
    types = _TYPES[cls.__name__]
    named = [f for f in dataclasses.fields(cls) if f.name in types]
    cells: dict[str, object] = {
        f.name: _parse(types[f.name], f.name, str(f.type), raw[f.name] or "", where)
        for f in named
        if f.name in raw
    }
    if cls is JobRow:  # the columns the row does not name (an empty number: None)
        cells["others"] = {c: _parse(types[c], c, "| None", raw[c] or "", where)
                           for c in raw if c in types and c not in cells}  # fmt: skip
    typed: Mapping[str, Any] = cells  # each value parsed to its field's type above
    return cls(**typed)


def _read(cls: type[_R], path: Path, required: Iterable[str], what: str) -> list[_R]:
    with Path(path).open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        missing = [c for c in required if c not in (reader.fieldnames or [])]
        if missing:
            raise InvalidError(f"{path}: not a {what} (needs columns {', '.join(required)})",
                               hint=f"missing: {', '.join(missing)}; give a table afkit campaign aggregate "
                               "wrote")  # fmt: skip
        return [_typed(cls, raw, f"{path} line {reader.line_num}") for raw in reader]


def read_jobs(path: Path) -> list[JobRow]:
    """jobs.csv's rows, typed (module docstring)."""
    return _read(JobRow, path, REQUIRED, "jobs.csv")


def read_intervals(path: Path | None) -> list[IntervalRow]:
    """intervals.csv's rows, typed; none when PATH is None or not a file (a campaign without
    interval samples)."""
    if path is None or not Path(path).is_file():
        return []
    return _read(IntervalRow, path, INTERVAL_REQUIRED, "intervals.csv")
