"""``afkit bench analysis``: uproot reads of TTree branches."""

from __future__ import annotations

import argparse
from typing import Any

from afkit.bench.analysis import AnalysisConfig, run_analysis
from afkit.bench.output import add_output_options, public_args, run_benchmark
from afkit.errors import UsageError


def cmd_analysis(args: argparse.Namespace) -> int:
    if args.duration is not None and args.duration <= 0:
        raise UsageError(f"--duration must be positive, got {args.duration}")
    cfg = AnalysisConfig(
        files=args.files,
        branches=args.branch,
        tree=args.tree,
        step_size=args.step_size,
        library=args.library,
        fill_hist=args.fill_hist,
        duration=args.duration,
        args=public_args(args),
    )
    return run_benchmark(args, lambda writer: run_analysis(cfg, writer))


def register(bsub: Any) -> None:
    parser = bsub.add_parser(
        "analysis",
        help="read TTree branches with uproot (events/s, Mbit/s)",
        description="Read one or more branches of a TTree from ROOT files (paths or root:// URLs) "
        "with uproot and do nothing further (or fill a histogram). Reports events/s and Mbit/s "
        "per wall-clock second and in total, as JSON lines.",
    )
    parser.add_argument("files", nargs="+", metavar="FILE|URL")
    parser.add_argument(
        "-b", "--branch", action="append", required=True, help="branch to read (repeat for several)"
    )
    parser.add_argument("-t", "--tree", help="TTree name (default: the file's only tree)")
    parser.add_argument("--step-size", default="100 MB", help="uproot step_size (default '100 MB', uproot's)")
    parser.add_argument("--library", choices=("ak", "np"), default="ak", help="array library (default ak)")
    parser.add_argument(
        "--fill-hist", action="store_true", help="also fill a 100-bin histogram of the values"
    )
    parser.add_argument("--duration", type=float, help="stop after this many seconds")
    add_output_options(parser)
    parser.set_defaults(func=cmd_analysis)
