"""What makes a cell: the one definition the Cells table, every figure, the payload section, the
scaling series and ``afkit campaign compare`` group jobs by.

A cell is one point of a benchmark's sweep: the values of :data:`KEYS`, every parameter a job
was planned with that changes what it measures: the swept ones (scenario, access, clients,
block size, stride, jobs per wave: the schema's ``sweep``, afkit.campaign.plan) and the fixed
ones of the benchmark (its name, site, dataset, read-rate demand, payload, duration, sample
interval). Jobs of one cell differ only in their repetition and their place in a wave: a cell's
jobs are its samples. A fixed parameter is constant within a campaign's benchmark, so it splits
nothing there; it does split jobs put together from two tables (``compare``) or two benchmarks
(the payload section) where it differs. Labels name only the keys whose values differ among the
cells shown together (:func:`varying`, :func:`describe`).

A new sweep key (a JobRow column) joins by one :class:`Key` in :data:`KEYS`: its column, its label,
how a table prints its value and how a legend names it; no consumer lists the keys itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, fields

from afkit.bench.units import parse_size
from afkit.campaign.rows import JobRow
from afkit.errors import UsageError

Value = str | int | float
Cell = tuple[Value, ...]  # the values of some KEYS, in KEYS' order

_BINARY = ((1024**4, "TiB"), (1024**3, "GiB"), (1024**2, "MiB"), (1024, "KiB"))
_DECIMAL = ((1000**4, "TB"), (1000**3, "GB"), (1000**2, "MB"), (1000, "kB"))


def size_text(value: Value) -> str:
    """A block size or stride as a reader reads it: ``8M`` → ``8 MiB``, ``10MB`` → ``10 MB``,
    ``0`` → ``0``; what is not a size (``random``, "" for an analysis job) stays as written."""
    try:
        n = parse_size(str(value))
    except UsageError:
        return str(value)
    if n == 0:
        return "0"
    for unit, name in (*_BINARY, *_DECIMAL):
        if n % unit == 0:
            return f"{n // unit} {name}"
    return f"{n} B"


def _size_order(value: Value) -> float:
    try:
        return float(parse_size(str(value)))
    except UsageError:  # random (or ""): after every size
        return float("inf")


def _plain(value: Value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


@dataclass(frozen=True)
class Key:
    """One cell key: the JobRow column, its label (the table's header), how a table prints a value
    (``show``) and how a legend or a compare label names it (``tag``: the value alone for the keys
    whose values say what they are, e.g. ``origin``, ``direct``)."""

    column: str
    label: str
    tag: Callable[[Value], str]
    show: Callable[[Value], str] = _plain
    order: Callable[[Value], float] | None = None  # numeric order of a text value (sizes)
    kinds: frozenset[str] | None = None  # the benchmark types the key applies to (None: all)
    missing: Value = ""  # the value of a row whose table had no such column (or left it empty)
    always: bool = False  # a column of the Cells table even when every cell has the same value

    def of(self, row: JobRow) -> Value:
        """ROW's value ("" where the key does not apply to the row's benchmark type)."""
        if self.kinds is not None and row.type not in self.kinds:
            return ""
        value: Value | None = getattr(row, self.column)
        return self.missing if value is None or value == "" else value

    def sort_key(self, value: Value) -> tuple[int, float, str]:
        if isinstance(value, int | float):
            return (0, float(value), "")
        if self.order is not None and value != "":
            return (0, self.order(value), value)
        return (1, 0.0, value)


_READS = frozenset({"read"})  # block size and stride: read parameters (uproot reads whole baskets)
_TIMED = frozenset({"read", "train", "steps"})  # an analysis job reads all its data, however long

KEYS: tuple[Key, ...] = (
    Key("bench", "benchmark", str, always=True),
    Key("site", "site", str, always=True),
    Key("dataset", "dataset", str, always=True),
    Key("scenario", "scenario", str, always=True),
    Key("access", "access", str, always=True),
    Key("clients", "clients", lambda v: f"{v}cl", always=True),
    Key("block_size", "block size", lambda v: f"block {size_text(v)}", size_text, _size_order, _READS),
    Key("stride", "stride", lambda v: f"stride {size_text(v)}", size_text, _size_order, _READS),
    Key("demand", "demand", lambda v: f"demand {v}"),  # each client's read rate cap ("" none)
    Key("wave_size", "jobs/wave", lambda v: f"{v} job(s)/wave", always=True),
    Key("payload", "payload", lambda v: f"payload {v}", missing="builtin"),
    Key("duration", "duration [s]", lambda v: f"{_plain(v)} s reads", kinds=_TIMED),
    Key("interval", "interval [s]", lambda v: f"{_plain(v)} s samples"),
)
NAMES: tuple[str, ...] = tuple(k.column for k in KEYS)
BY_NAME: dict[str, Key] = {k.column: k for k in KEYS}


def keys(without: Iterable[str] = ()) -> tuple[Key, ...]:
    """KEYS but those named in WITHOUT (what a figure draws along an axis, or merges on purpose)."""
    skip = set(without)
    unknown = skip - set(NAMES)
    if unknown:  # a consumer naming a key that is not one: a programming error, said plainly
        raise ValueError(f"not cell keys: {', '.join(sorted(unknown))}")
    return tuple(k for k in KEYS if k.column not in skip)


def cell_of(row: JobRow, ks: Sequence[Key] = KEYS) -> Cell:
    """ROW's cell: its values of the keys KS (default every key)."""
    return tuple(k.of(row) for k in ks)


def sort_key(cell: Cell, ks: Sequence[Key] = KEYS) -> tuple[tuple[int, float, str], ...]:
    """An order of cells: numbers and sizes by value (2 clients before 10, 4 KiB before 1 MiB)."""
    return tuple(k.sort_key(v) for k, v in zip(ks, cell, strict=True))


def varying(cells: Iterable[Cell], ks: Sequence[Key] = KEYS) -> tuple[Key, ...]:
    """The keys whose values differ among CELLS (what their labels must name)."""
    seen = list(cells)
    return tuple(k for i, k in enumerate(ks) if len({c[i] for c in seen}) > 1)


def describe(cell: Cell, shown: Sequence[Key], ks: Sequence[Key] = KEYS) -> str:
    """CELL named by the keys SHOWN (each its tag; a key that does not apply to the cell, value "",
    is left out): ``origin direct 1 cl. stride 8 MiB``."""
    values = dict(zip((k.column for k in ks), cell, strict=True))
    return " ".join(k.tag(v) for k in shown if (v := values[k.column]) != "")


def named(cell: Cell, ks: Sequence[Key] = KEYS) -> dict[str, Value]:
    """CELL as {column: value}."""
    return dict(zip((k.column for k in ks), cell, strict=True))


def columns(cells: Iterable[Cell], ks: Sequence[Key] = KEYS) -> tuple[Key, ...]:
    """The keys a table of CELLS shows as columns: those always shown and those whose values
    differ among its rows (in KEYS' order)."""
    differ = set(varying(cells, ks))
    return tuple(k for k in ks if k.always or k in differ)


HEAD = ("bench", "site", "dataset", "scenario", "access", "clients")  # every comparison label names these


@dataclass(frozen=True)
class CellComparison:
    cell: Cell  # its values of cells.KEYS (value() by name)
    n_base: int
    n_new: int
    reps_base: int
    reps_new: int
    base_MBps: float
    new_MBps: float
    ratio: float
    low: float
    high: float
    verdict: str
    detail: str = ""  # the keys that tell this cell from others with the same label head

    def value(self, name: str) -> Value:
        """The cell's value of the key NAME (a column of jobs.csv: "clients", "stride", ...)."""
        return self.cell[NAMES.index(name)]

    @property
    def label(self) -> str:
        head = describe(self.cell, [BY_NAME[n] for n in HEAD])
        return f"{head} {self.detail}" if self.detail else head

    def as_dict(self) -> dict[str, object]:
        """compare.csv's row and compare.json's cell: the cell's keys by name, then the numbers."""
        numbers = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "cell"}
        return {**named(self.cell), **numbers, "label": self.label}
