"""``afkit bench``: read, multi, merge, analysis, gen, disk, plot.

Every benchmark writes JSON lines (``-o FILE``, default stdout): ``interval`` records as each
wall-clock second ends and one ``summary`` record with the provenance. See docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
from typing import Any

from afkit.bench import cli_analysis, cli_disk, cli_gen, cli_read
from afkit.cli import usage_handler


def register(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "bench",
        help="storage and analysis benchmark clients",
        description="Benchmark clients: XRootD/POSIX read benchmark, multi-client runner, "
        "uproot analysis benchmark, data generators, disk-server tests. Output: JSON lines.",
    )
    parser.set_defaults(func=usage_handler(parser))
    bsub = parser.add_subparsers(dest="bench_command", metavar="BENCH_COMMAND")
    cli_read.register(bsub)
    cli_analysis.register(bsub)
    cli_gen.register(bsub)
    cli_disk.register(bsub)
