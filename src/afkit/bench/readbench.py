"""The read benchmark: issue a plan's requests against files and count bytes per second.

Standard library only (with a sequential plan): ``afkit bench read|multi`` and the campaign job
(afkit.campaign.processing, inside the image) run this one read loop.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NotRequired, Protocol, TypedDict

from afkit.bench.intervals import IntervalCounter
from afkit.bench.offsets import BlockPlan, Request
from afkit.bench.records import JsonlWriter, Provenance, utc_iso
from afkit.bench.sources import ReadError, Source, is_xrootd_url, open_source
from afkit.bench.trace import write_trace
from afkit.bench.units import gbit_per_s, human_bytes


class Plan(Protocol):
    def requests(self, size: int) -> Iterator[Request]: ...


@dataclass
class ReadConfig:
    urls: list[str]
    plan: Plan
    duration: float | None = None
    reconnect_timeout: float = 10.0
    trace_out: Path | None = None
    drop_cache: bool = False
    args: dict[str, object] = field(default_factory=dict)  # the command's options, for provenance
    repeat: bool = False  # read the files over and over until `duration` (campaign read jobs)
    interval: float = 1.0  # seconds per interval record
    rate: float | None = None  # bytes/s at most (a campaign's `demand`): the reads are paced to it
    # set by whoever runs the client as a thread of its own process: the reads end as at the
    # deadline (a study's Ctrl-C); a client in a process of its own is stopped by its signal
    stop: threading.Event | None = None


class GapRecord(TypedDict):
    """A read that failed and how long the file was away (``"type": "gap"``)."""

    type: str
    t: float  # when the read failed
    seconds: float
    url: str
    recovered: bool


class FileRead(TypedDict):
    url: str
    size: int
    bytes_read: int


class ReadSummary(TypedDict):
    """The summary record of the read benchmark (``"kind": "read"``)."""

    type: str
    kind: str
    status: str  # ok or failed
    ended_by: str  # end-of-data, duration, stopped (a thread told to stop) or error
    bytes: int
    ops: int
    seconds: float
    gbps: float
    start: str
    end: str
    open_seconds: float
    files: list[FileRead]
    gaps: list[GapRecord]
    error: NotRequired[str]  # a failed run: why
    client: NotRequired[int]  # one of several clients (afkit bench multi): its index
    provenance: NotRequired[Provenance]


@dataclass
class _FileState:
    url: str
    size: int = 0
    bytes_read: int = 0
    source: Source | None = None
    requests: Iterator[Request] = field(default_factory=lambda: iter(()))


def _note(writer: JsonlWriter, message: str, **extra: Any) -> None:
    print(f"afkit bench: {message}", file=sys.stderr)
    writer.write({"type": "note", "t": round(time.time(), 3), "message": message, **extra})


def _reconnect(state: _FileState, timeout: float, opener: Callable[[str], Source]) -> bool:
    """Reopen ``state.url`` until ``timeout`` seconds have passed; True when it is back."""
    if state.source is not None:
        state.source.close()
        state.source = None
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            state.source = opener(state.url)
            return True
        except Exception:
            time.sleep(0.5)
    return False


def run_read(
    cfg: ReadConfig,
    writer: JsonlWriter,
    *,
    barrier: Callable[[], None] | None = None,
    opener: Callable[[str], Source] = open_source,
) -> ReadSummary:
    """Run the benchmark, writing interval records as they finish; return the summary."""
    files = [_FileState(url) for url in cfg.urls]
    t_open = time.time()
    for state in files:
        state.source = opener(state.url)
        state.size = state.source.size
        # the plan's set-up (a random order, a trace) is done now, before the clock starts
        state.requests = cfg.plan.requests(state.size)
        if cfg.drop_cache and not is_xrootd_url(state.url):
            _drop_page_cache(state.url)
        block = getattr(cfg.plan, "block", None)
        if isinstance(cfg.plan, BlockPlan) and block and state.size < block:
            _note(
                writer,
                f"{state.url} holds {state.size} bytes, less than one block ({block}): reading what there is",
                url=state.url,
                size=state.size,
            )
    open_seconds = time.time() - t_open
    if barrier is not None:
        barrier()
    counter = IntervalCounter(writer.write, width=cfg.interval)
    trace: list[tuple[float, int, int]] = []
    errors: list[GapRecord] = []
    ended_by = "end-of-data"
    now = time.time()
    counter.begin(now)
    deadline = now + cfg.duration if cfg.duration else float("inf")
    trace_list = trace if cfg.trace_out is not None else None
    try:
        for state in _in_turn(files, cfg.repeat, deadline):
            if _read_file(state, cfg, counter, writer, errors, trace_list, deadline, opener):
                ended_by = "stopped" if cfg.stop is not None and cfg.stop.is_set() else "duration"
                break
    except ReadError as err:
        ended_by = "error"
        failure = str(err)
    else:
        failure = ""
    finally:
        end = time.time()
        counter.finish(end)
        for state in files:
            if state.source is not None:
                state.source.close()
    summary: ReadSummary = {
        "type": "summary",
        "kind": "read",
        "status": "failed" if failure else "ok",
        "ended_by": ended_by,
        "bytes": counter.total_bytes,
        "ops": counter.total_ops,
        "seconds": round(counter.seconds, 6),
        "gbps": round(gbit_per_s(counter.total_bytes, counter.seconds), 6),
        "start": utc_iso(counter.start),
        "end": utc_iso(end),
        "open_seconds": round(open_seconds, 6),
        "files": [{"url": s.url, "size": s.size, "bytes_read": s.bytes_read} for s in files],
        "gaps": errors,
    }
    if failure:
        summary["error"] = failure
    if cfg.trace_out is not None:
        write_trace(cfg.trace_out, trace)
    print(
        f"afkit bench: read {human_bytes(counter.total_bytes)} in {counter.seconds:.2f} s: "
        f"{summary['gbps']:.3f} Gbit/s ({ended_by})",
        file=sys.stderr,
    )
    return summary


def _in_turn(files: list[_FileState], repeat: bool, deadline: float) -> Iterator[_FileState]:
    """The files one after the other: once, or (REPEAT, with a deadline) again until the deadline."""
    yield from files
    while repeat and files and deadline != float("inf") and time.time() < deadline:
        yield from files


def _drop_page_cache(path: str) -> None:
    """Evict a local file's pages so the reads come from the device (``posix_fadvise``)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def _read_file(
    state: _FileState,
    cfg: ReadConfig,
    counter: IntervalCounter,
    writer: JsonlWriter,
    errors: list[GapRecord],
    trace: list[tuple[float, int, int]] | None,
    deadline: float,
    opener: Callable[[str], Source],
) -> bool:
    """Issue the plan's requests against one file; True when the deadline ended the run.

    The loop is the benchmark's hot path: local names, no allocation besides the plan's.
    """
    clock = time.time
    add = counter.add
    pace = _pacer(counter, cfg.rate, deadline, cfg.stop) if cfg.rate else None
    stopped = cfg.stop.is_set if cfg.stop is not None else None
    got = 0
    try:
        for request in state.requests:
            src = state.source
            assert src is not None
            try:
                n = src.read(*request[0]) if len(request) == 1 else src.vector_read(request)
            except ReadError as err:
                n = _recover(state, request, err, cfg, counter, writer, errors, opener)
            now = clock()
            add(now, n, len(request))
            got += n
            if trace is not None:
                trace.extend((now, off, ln) for off, ln in request)
            if now >= deadline or (stopped is not None and stopped()):
                return True
            if pace is not None:
                pace()
        return False
    finally:
        state.bytes_read += got
        if cfg.repeat:  # the next turn over this file reads the plan again (the first was drawn untimed)
            state.requests = cfg.plan.requests(state.size)


def _pacer(
    counter: IntervalCounter, rate: float, deadline: float, stop: threading.Event | None = None
) -> Callable[[], None]:
    """A call that waits until the bytes read so far are due at RATE bytes/s since the start (no
    later than DEADLINE, or until STOP is set): a client that demands RATE, as a CPU-bound analysis
    job reads its data."""

    def pace() -> None:
        due = counter.start + counter.total_bytes / rate
        wait = min(due, deadline) - time.time()
        if wait > 0:
            if stop is not None:
                stop.wait(wait)
            else:
                time.sleep(wait)  # the demand's pace, not a wait for a condition

    return pace


def _recover(
    state: _FileState,
    request: Request,
    err: ReadError,
    cfg: ReadConfig,
    counter: IntervalCounter,
    writer: JsonlWriter,
    errors: list[GapRecord],
    opener: Callable[[str], Source],
) -> int:
    """Record the failure, reopen the file and retry ``request``; re-raise if it stays down."""
    while True:
        t_err = time.time()
        counter.add(t_err, 0, 0)
        writer.write({"type": "error", "t": round(t_err, 3), "url": state.url, "message": str(err)})
        print(f"afkit bench: {err}; reconnecting", file=sys.stderr)
        back = _reconnect(state, cfg.reconnect_timeout, opener)
        gap: GapRecord = {
            "type": "gap",
            "t": round(t_err, 3),
            "seconds": round(time.time() - t_err, 3),
            "url": state.url,
            "recovered": back,
        }
        writer.write(gap)
        errors.append(gap)
        if not back or state.source is None:
            raise err
        try:
            src = state.source
            return src.read(*request[0]) if len(request) == 1 else src.vector_read(request)
        except ReadError as again:
            err = again
