"""Run a benchmark with its JSON-lines writer and host monitor, and stamp the summary."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping

from afkit.bench.monitor import HostMonitor, monitor_path_for
from afkit.bench.records import JsonlWriter, provenance
from afkit.errors import AfkitError, ExitCode


def add_output_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("output")
    group.add_argument(
        "-o", "--output", metavar="FILE", default="-", help="JSON-lines result file (default: stdout)"
    )
    group.add_argument(
        "--monitor",
        metavar="FILE",
        help="host monitor samples (default: OUTPUT.monitor.jsonl beside a file output)",
    )
    group.add_argument("--no-monitor", action="store_true", help="do not sample the host")


def public_args(args: argparse.Namespace) -> dict[str, object]:
    return {k: v for k, v in vars(args).items() if k != "func" and not callable(v)}


def run_benchmark(args: argparse.Namespace, body: Callable[[JsonlWriter], Mapping[str, object]]) -> int:
    """Open the output and monitor, run ``body``, append the summary with provenance.

    A body that fails with a ``ReadError``-like error after measuring still gets its summary
    written (``status: failed``) by returning it; an ``AfkitError`` raised before any
    measurement leaves no result file behind.
    """
    mon_path = monitor_path_for(args.output, args.monitor, args.no_monitor)
    writer = JsonlWriter(args.output)
    try:
        with HostMonitor(mon_path) as mon:
            summary = body(writer)
        stamps: dict[str, object] = {"provenance": provenance(public_args(args))}
        if mon_path is not None:
            stamps["monitor"] = {"file": str(mon_path), "samples": mon.samples}
        writer.write({**summary, **stamps})
    except AfkitError:
        writer.discard()
        raise
    except BaseException:
        writer.close()
        raise
    writer.close()
    return int(ExitCode.OK if summary.get("status", "ok") == "ok" else ExitCode.FAILURE)
