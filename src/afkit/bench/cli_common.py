"""What the ``afkit bench`` subcommands share.

A single-client benchmark (``read``, ``analysis``, ``disk``) is its own options followed by the
``output`` group (``-o``, ``--monitor``, ``--no-monitor``) and runs through
``afkit.bench.output.run_benchmark``. A multi-client benchmark (``multi``, ``multi-analysis``) is
``-n/--clients``, ``--outdir`` and ``--no-monitor`` followed by the client's options, and runs
through ``afkit.bench.multi.run_clients``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from afkit.bench.multi import run_clients
from afkit.bench.output import add_output_options, public_args
from afkit.bench.readbench import ReadConfig
from afkit.bench.rootread import RootReadConfig
from afkit.errors import UsageError

if TYPE_CHECKING:  # afkit.bench.analysis imports numpy: only the analysis benchmark does
    from afkit.bench.analysis import AnalysisConfig

Options = Callable[[argparse.ArgumentParser], None]
Handler = Callable[[argparse.Namespace], int]


def check_duration(args: argparse.Namespace) -> float | None:
    """``--duration`` is optional; when given it must be positive (exit 2 otherwise). The duration
    (None: none given)."""
    duration: float | None = args.duration
    if duration is not None and duration <= 0:
        raise UsageError(f"--duration must be positive, got {duration}")
    return duration


def add_benchmark(
    bsub: Any, name: str, *, summary: str, description: str, options: Options, func: Handler
) -> argparse.ArgumentParser:
    """Register a single-client benchmark: ``options``, then the output group."""
    parser: argparse.ArgumentParser = bsub.add_parser(name, help=summary, description=description)
    options(parser)
    add_output_options(parser)
    parser.set_defaults(func=func)
    return parser


def add_multi_benchmark(
    bsub: Any, name: str, *, summary: str, description: str, options: Options, func: Handler
) -> argparse.ArgumentParser:
    """Register a multi-client benchmark: clients, result directory and monitor, then ``options``."""
    parser: argparse.ArgumentParser = bsub.add_parser(name, help=summary, description=description)
    parser.add_argument("-n", "--clients", type=int, required=True, help="number of client processes")
    parser.add_argument("--outdir", required=True, help="directory for the per-client and summed results")
    parser.add_argument("--no-monitor", action="store_true", help="do not sample the host")
    parser.add_argument(
        "--threads",
        action="store_true",
        help="run the clients as threads of one process (as a campaign job's builtin payload does): "
        "for many paced readers, whose start as processes would cost more CPU than their reads",
    )
    options(parser)
    parser.set_defaults(func=func)
    return parser


def run_multi(
    args: argparse.Namespace,
    kind: str,
    configs: list[ReadConfig] | list[AnalysisConfig] | list[RootReadConfig],
) -> int:
    """Run one client per config into ``--outdir``; the exit code of ``run_clients``."""
    return run_clients(
        configs,
        Path(args.outdir),
        no_monitor=args.no_monitor,
        kind=kind,
        args=public_args(args),
        threads=bool(getattr(args, "threads", False)),
    )
