"""N read (or analysis) clients as separate processes, released together by a barrier, and their sum.

Each client is its own process (``spawn``: no state shared with the parent) and reads its own
files, so no client profits from another's page cache. All clients open their files first, then
wait on one barrier and start measuring at the same instant. The per-client results are summed
second by second (:func:`afkit.bench.intervals.sum_series`).

``run_threads`` runs the same clients as threads of one process (the campaign job's builtin
payload, afkit.campaign.processing). Analysis clients import uproot (afkit.bench.analysis) only when run.
"""

from __future__ import annotations

import multiprocessing
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_all
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from afkit.bench.intervals import Record, SeriesSummary, series_summary, sum_series
from afkit.bench.readbench import ReadConfig, ReadSummary, run_read
from afkit.bench.records import JsonlWriter, JsonObject, Provenance, provenance, read_jsonl
from afkit.bench.sources import ReadError
from afkit.errors import AfkitError, ExitCode, UsageError

if TYPE_CHECKING:
    from afkit.bench.analysis import AnalysisConfig
    from afkit.bench.rootread import RootReadConfig

BARRIER_TIMEOUT = 120.0
# On Ctrl-C, how long run_threads waits for its clients to end (a client opening its file takes up
# to sources.OPEN_TIMEOUT) before it lets the interrupt go on to take the servers away
STOP_GRACE_S = 20.0

# A client's summary: the read benchmark's, or the analysis benchmark's (untyped in analysis.py)
ClientSummary = ReadSummary | Record


class SumExtra(TypedDict, total=False):
    """What the command adds to the summed summary: the clients (multi) and the provenance."""

    clients: int
    clients_ok: int
    client_bytes: list[int]
    client_events: list[int]
    provenance: Provenance


class SumSummary(SeriesSummary, SumExtra):
    """The last record of sum.jsonl (``afkit bench multi``, ``multi-analysis``, ``merge``)."""

    type: str
    kind: str
    inputs: list[str]  # the per-client files summed


def split_files(files: list[str], clients: int) -> list[list[str]]:
    """Client ``i`` gets files ``i, i+N, i+2N, ...``: every client a different file."""
    if clients < 1:
        raise UsageError(f"the number of clients must be >= 1, got {clients}")
    if len(files) < clients:
        raise UsageError(
            f"{clients} clients need at least {clients} different files, got {len(files)}",
            hint="give one file per client, e.g. made with 'afkit bench gen random --copies N'",
        )
    if len(set(files)) != len(files):
        raise UsageError("the same file is given twice: clients would share its page cache")
    return [files[i::clients] for i in range(clients)]


def client_path(outdir: Path, index: int) -> Path:
    return outdir / f"client-{index:03d}.jsonl"


def client_events(summary: Mapping[str, object]) -> int:
    """The events a client counted: an analysis client's summary has them, a read client's not."""
    events = summary.get("events", 0)
    return events if isinstance(events, int) else 0


def run_client(
    cfg: ReadConfig | AnalysisConfig | RootReadConfig, writer: JsonlWriter, wait: Callable[[], None]
) -> ClientSummary:
    """One client: the read or the analysis benchmark (uproot or ROOT), measuring once WAIT returns."""
    if isinstance(cfg, ReadConfig):
        return run_read(cfg, writer, barrier=wait)
    from afkit.bench.rootread import RootReadConfig, run_rootread

    if isinstance(cfg, RootReadConfig):
        return run_rootread(cfg, writer, barrier=wait)
    from afkit.bench.analysis import run_analysis

    return run_analysis(cfg, writer, barrier=wait)


def _client_main(
    index: int, cfg: ReadConfig | AnalysisConfig | RootReadConfig, path: str, barrier: Any
) -> None:
    def wait() -> None:
        barrier.wait(timeout=BARRIER_TIMEOUT)

    try:
        with JsonlWriter(path) as writer:
            summary = run_client(cfg, writer, wait)
            summary["client"] = index
            summary["provenance"] = provenance(cfg.args | {"client": index})
            writer.write(summary)
    except threading.BrokenBarrierError:
        print(f"afkit bench: client {index}: another client failed before the start", file=sys.stderr)
        Path(path).unlink(missing_ok=True)
        sys.exit(int(ExitCode.FAILURE))
    except AfkitError as err:
        barrier.abort()
        print(f"afkit: error: client {index}: {err}", file=sys.stderr)
        if err.hint:
            print(f"afkit: hint: {err.hint}", file=sys.stderr)
        Path(path).unlink(missing_ok=True)
        sys.exit(int(err.code))
    except BaseException:
        barrier.abort()
        raise
    sys.exit(0 if summary["status"] == "ok" else int(ExitCode.FAILURE))


def run_multi(
    configs: list[ReadConfig] | list[AnalysisConfig] | list[RootReadConfig], outdir: Path
) -> tuple[int, list[JsonObject]]:
    """Run one process per config; return (exit code, per-client summaries as read back)."""
    outdir.mkdir(parents=True, exist_ok=True)
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(len(configs))
    procs = []
    for i, cfg in enumerate(configs):
        proc = ctx.Process(target=_client_main, args=(i, cfg, str(client_path(outdir, i)), barrier))
        proc.start()
        procs.append(proc)
    codes = []
    for proc in procs:
        proc.join()
        codes.append(proc.exitcode or 0)
    failed = [c for c in codes if c != 0]
    summaries = read_summaries(outdir, len(configs))
    # the first real error (not the "another client failed" knock-on) decides the exit code
    code = next((c for c in failed if c != int(ExitCode.FAILURE)), failed[0] if failed else 0)
    return code, summaries


def run_threads(
    configs: Sequence[ReadConfig | AnalysisConfig | RootReadConfig], outdir: Path
) -> list[ClientSummary]:
    """Run one client thread per config, released together, into ``OUTDIR/client-NNN.jsonl``;
    return their summaries. The first real failure (not a client's knock-on "another client
    failed before the start") is raised, a failed read as ReadError."""
    outdir.mkdir(parents=True, exist_ok=True)
    barrier = threading.Barrier(len(configs))

    def wait() -> None:
        barrier.wait(BARRIER_TIMEOUT)

    def client(index: int) -> ClientSummary:
        try:
            with JsonlWriter(client_path(outdir, index)) as writer:
                summary = run_client(configs[index], writer, wait)
                writer.write(summary)
        except BaseException:
            barrier.abort()
            raise
        return summary

    pool = ThreadPoolExecutor(max_workers=len(configs))
    futures: list[Future[ClientSummary]] = []
    try:
        futures.extend(pool.submit(client, i) for i in range(len(configs)))
        while wait_all(futures, timeout=1.0).not_done:
            pass  # a timed wait: a Ctrl-C that came just as this thread went to sleep is seen within 1 s
    except BaseException:
        _stop_clients(configs, barrier, futures)
        raise
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    errors = [err for err in (f.exception() for f in futures) if err is not None]
    if errors:
        raise next((e for e in errors if not isinstance(e, threading.BrokenBarrierError)), errors[0])
    summaries = [f.result() for f in futures]
    failed = next((s for s in summaries if s.get("status") != "ok"), None)
    if failed is not None:
        raise ReadError(str(failed.get("error", "a client failed")))
    return summaries


def _stop_clients(
    configs: Sequence[ReadConfig | AnalysisConfig | RootReadConfig],
    barrier: threading.Barrier,
    futures: Sequence[Future[ClientSummary]],
) -> None:
    """An interrupt in the main thread: no client waits at the barrier for clients that will never
    come (it would for BARRIER_TIMEOUT), every reader stops at its next request, and they end (up to
    STOP_GRACE_S) while the servers they read from are still there."""
    barrier.abort()
    for cfg in configs:
        stop = getattr(cfg, "stop", None)
        if stop is not None:
            stop.set()
    wait_all(futures, timeout=STOP_GRACE_S)


def _in_threads(
    configs: Sequence[ReadConfig | AnalysisConfig | RootReadConfig], outdir: Path
) -> tuple[int, list[JsonObject]]:
    """run_threads as run_multi reports: (exit code, the summaries read back); an error is printed."""
    try:
        run_threads(configs, outdir)
        code = 0
    except AfkitError as err:
        print(f"afkit: error: {err}", file=sys.stderr)
        code = int(err.code)
    return code, read_summaries(outdir, len(configs))


def read_summaries(outdir: Path, clients: int) -> list[JsonObject]:
    """The summaries the CLIENTS wrote into OUTDIR, read back (a failed client's file is gone)."""
    summaries: list[JsonObject] = []
    for i in range(clients):
        path = client_path(outdir, i)
        if path.is_file():
            summaries.extend(r for r in read_jsonl(path) if r.get("type") == "summary")
    return summaries


def write_sum(outputs: list[Path], dest: Path, kind: str, extra: SumExtra) -> SumSummary:
    """Sum the interval records of ``outputs`` into ``dest`` (intervals, then one summary)."""
    series = [read_jsonl(p) for p in outputs]
    summed = sum_series(series)
    summary = SumSummary(
        type="summary", kind=kind, **series_summary(summed), **extra, inputs=[str(p) for p in outputs]
    )
    with JsonlWriter(dest) as out:
        for rec in summed:
            out.write(rec)
        out.write(summary)
    return summary


def run_clients(
    configs: list[ReadConfig] | list[AnalysisConfig] | list[RootReadConfig],
    outdir: Path,
    *,
    no_monitor: bool,
    kind: str,
    args: dict[str, object],
    threads: bool = False,
) -> int:
    """Run the clients (processes, or THREADS of this one) with a host monitor, then write
    ``OUTDIR/sum.jsonl``; return the exit code."""
    from afkit.bench.monitor import HostMonitor

    with HostMonitor(None if no_monitor else outdir / "monitor.jsonl"):
        code, summaries = _in_threads(configs, outdir) if threads else run_multi(configs, outdir)
    outputs = [p for p in (client_path(outdir, i) for i in range(len(configs))) if p.is_file()]
    if not summaries or not outputs:
        return code or int(ExitCode.FAILURE)
    summary = write_sum(
        outputs,
        outdir / "sum.jsonl",
        kind,
        {
            "clients": len(configs),
            "clients_ok": sum(1 for s in summaries if s.get("status") == "ok"),
            "client_bytes": [s.get("bytes", 0) for s in summaries],
            "client_events": [client_events(s) for s in summaries],
            "provenance": provenance(args),
        },
    )
    rate = f"{summary['gbps']:.3f} Gbit/s mean, {summary['steady_gbps']:.3f} Gbit/s steady"
    if summary.get("events"):
        rate += f", {summary['events_per_s']:.0f} events/s"
    print(f"afkit bench: {len(configs)} clients: {rate} -> {outdir / 'sum.jsonl'}", file=sys.stderr)
    return code
