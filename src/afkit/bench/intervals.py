"""Per-second accounting of a benchmark client, and the sum of several clients.

Work done (bytes, read calls, events) is counted in the wall-clock second (``int(time.time())``)
in which the call *completed*. Seconds are stamped with wall-clock time so series of clients on
different processes and nodes line up; a second in which nothing completed is recorded with zero
bytes (a stall shows as a gap, it is not hidden). ``covered`` is the part of that second during
which the client was running (below 1 only for its first and last second): the rate of a second
is ``bytes / covered``.

``width`` makes the intervals another length than one second (a campaign's ``interval``, e.g.
0.5 s): interval ``k`` is ``[k * width, (k + 1) * width)`` of wall-clock time, ``t`` its start and
the rate ``bytes / (covered * width)``. Standard library only: the campaign job imports this
module inside images that have nothing but Python.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NotRequired, TypedDict

from afkit.bench.units import gbit_per_s, mbit_per_s

# The untyped record of afkit.campaign.processing and analysis.py (their owners type them), nothing else.
Record = dict[str, Any]


class IntervalRecord(TypedDict):
    """An interval record (``"type": "interval"``) of a benchmark's JSON lines."""

    type: str
    t: float  # start of the interval, wall-clock seconds (an int for one-second intervals)
    bytes: int
    ops: int
    events: NotRequired[int]  # only when the client counts events (analysis)
    events_per_s: NotRequired[float]
    covered: float  # the part of the interval the client ran, 0..1
    gbps: float
    mbps: float
    clients: NotRequired[int]  # a summed series: how many clients contributed


class SeriesSummary(TypedDict):
    """Totals of a (summed) series of interval records (``series_summary``)."""

    bytes: int
    seconds: float
    gbps: float
    first_t: NotRequired[float]  # the keys up to peak_gbps but the steady ones: not for no intervals
    last_t: NotRequired[float]
    max_clients: NotRequired[int]
    steady_seconds: int
    steady_gbps: float
    peak_gbps: NotRequired[float]
    events: NotRequired[int]
    events_per_s: NotRequired[float]


def _interval_record(
    t: float, nbytes: int, ops: int, events: int, covered: float, width: float = 1.0
) -> IntervalRecord:
    covered = round(min(max(covered, 0.0), 1.0), 6)
    seconds = covered * width
    gbps = round(gbit_per_s(nbytes, seconds), 6)
    mbps = round(mbit_per_s(nbytes, seconds), 3)
    if not events:
        return {"type": "interval", "t": t, "bytes": nbytes, "ops": ops, "covered": covered,
                "gbps": gbps, "mbps": mbps}  # fmt: skip
    per_s = round(events / seconds, 3) if seconds > 0 else 0.0
    return {"type": "interval", "t": t, "bytes": nbytes, "ops": ops, "events": events,
            "events_per_s": per_s, "covered": covered, "gbps": gbps, "mbps": mbps}  # fmt: skip


def interval_start(index: int, width: float) -> float:
    """``t`` of interval INDEX: whole seconds stay ints (the per-second records' format)."""
    return index if width == 1.0 else round(index * width, 6)


@dataclass
class IntervalCounter:
    """Counts work per wall-clock second and hands each finished second to ``emit``.

    ``add`` is on the benchmark's hot path: within a second it only adds to three counters.
    ``width``: the length of an interval in seconds (module docstring).
    """

    emit: Callable[[IntervalRecord], None]
    start: float = 0.0
    end: float = 0.0
    records: list[IntervalRecord] = field(default_factory=list)
    width: float = 1.0
    _sec: int = 0  # index of the current interval (the second itself when width is 1)
    _next: float = 0.0  # start of the next second
    _bytes: int = 0
    _ops: int = 0
    _events: int = 0
    _done_bytes: int = 0
    _done_ops: int = 0
    _done_events: int = 0

    def begin(self, now: float) -> None:
        self.start = self.end = now
        self._sec = int(now // self.width)
        self._next = (self._sec + 1) * self.width

    def _flush(self, upto: float) -> None:
        lo = max(self.start, self._sec * self.width)
        hi = min(upto, (self._sec + 1) * self.width)
        t = interval_start(self._sec, self.width)
        rec = _interval_record(t, self._bytes, self._ops, self._events, (hi - lo) / self.width, self.width)
        self.records.append(rec)
        self.emit(rec)
        self._done_bytes += self._bytes
        self._done_ops += self._ops
        self._done_events += self._events
        self._bytes = self._ops = self._events = 0

    def _advance(self, now: float) -> None:
        """Close the current second and any empty ones skipped over."""
        sec = int(now // self.width)
        while sec > self._sec:
            self._flush(now)
            self._sec += 1
        self._next = (self._sec + 1) * self.width

    def add(self, now: float, nbytes: int, ops: int = 1, events: int = 0) -> None:
        """Account work that completed at wall-clock time ``now``."""
        if now >= self._next:
            self._advance(now)
        self._bytes += nbytes
        self._ops += ops
        self._events += events
        self.end = now

    def finish(self, now: float) -> None:
        """Close the last (partial) second; ``now`` is the end of the run.

        A run ending exactly on a second boundary does not get an empty extra second.
        """
        self.add(now, 0, 0)
        self.end = now
        if now > self._sec * self.width or not self.records:
            self._flush(now)

    @property
    def total_bytes(self) -> int:
        return self._done_bytes + self._bytes

    @property
    def total_ops(self) -> int:
        return self._done_ops + self._ops

    @property
    def total_events(self) -> int:
        return self._done_events + self._events

    @property
    def seconds(self) -> float:
        return max(self.end - self.start, 0.0)


def sum_series(series: Iterable[Iterable[Mapping[str, object]]], width: float = 1.0) -> list[IntervalRecord]:
    """Sum several clients' interval records second by second (aligned on ``t``).

    Clients that start late or end early simply contribute to fewer seconds; ``clients`` says
    how many contributed to each second. The rate of a second is the summed bytes over the
    largest ``covered`` of its clients. WIDTH: the intervals' length when it is not one second.
    """
    acc: dict[float, dict[str, float]] = {}
    for records in series:
        for rec in records:
            if rec.get("type") != "interval":
                continue
            slot = acc.setdefault(
                _num(rec["t"]), {"bytes": 0, "ops": 0, "events": 0, "clients": 0, "covered": 0.0}
            )
            slot["bytes"] += int(_num(rec["bytes"]))
            slot["ops"] += int(_num(rec.get("ops", 0)))
            slot["events"] += int(_num(rec.get("events", 0)))
            slot["clients"] += int(_num(rec.get("clients", 1)))
            slot["covered"] = max(slot["covered"], float(_num(rec.get("covered", 1.0))))
    out = []
    for t in sorted(acc):
        slot = acc[t]
        rec = _interval_record(
            t, int(slot["bytes"]), int(slot["ops"]), int(slot["events"]), slot["covered"], width
        )
        rec["clients"] = int(slot["clients"])
        out.append(rec)
    return out


def _num(value: object) -> float:
    """A number of an interval record read back from JSON; ValueError for anything else."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"an interval record holds {value!r} where a number belongs")
    return float(value) if isinstance(value, str) else value


def series_summary(records: list[IntervalRecord]) -> SeriesSummary:
    """Totals of a (summed) series: bytes, span, mean rate, and the steady-state rate.

    The steady state is every full second (``covered == 1``) in which the largest number of
    clients ran at once; it excludes ramp-up and ramp-down.
    """
    intervals = [r for r in records if r.get("type") == "interval"]
    if not intervals:
        return {"bytes": 0, "seconds": 0.0, "gbps": 0.0, "steady_seconds": 0, "steady_gbps": 0.0}
    total = sum(r["bytes"] for r in intervals)
    events = sum(r.get("events", 0) for r in intervals)
    seconds = sum(r["covered"] for r in intervals)
    top = max(r.get("clients", 1) for r in intervals)
    steady = [r for r in intervals if r.get("clients", 1) == top and r["covered"] >= 1.0]
    steady_bytes = sum(r["bytes"] for r in steady)
    out: SeriesSummary = {
        "bytes": total,
        "seconds": round(seconds, 6),
        "gbps": round(gbit_per_s(total, seconds), 6),
        "first_t": intervals[0]["t"],
        "last_t": intervals[-1]["t"],
        "max_clients": top,
        "steady_seconds": len(steady),
        "steady_gbps": round(gbit_per_s(steady_bytes, len(steady)), 6),
        "peak_gbps": max(r["gbps"] for r in intervals),
    }
    if events:
        out["events"] = events
        out["events_per_s"] = round(events / seconds, 3) if seconds else 0.0
    return out
