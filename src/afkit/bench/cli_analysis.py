"""``afkit bench analysis``: uproot reads of TTree branches."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from afkit.bench.analysis import AnalysisConfig, run_analysis
from afkit.bench.multi import run_clients, split_files
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


def cmd_multi_analysis(args: argparse.Namespace) -> int:
    if args.duration is not None and args.duration <= 0:
        raise UsageError(f"--duration must be positive, got {args.duration}")
    outdir = Path(args.outdir)
    configs = [
        AnalysisConfig(
            files=files,
            branches=args.branch,
            tree=args.tree,
            step_size=args.step_size,
            library=args.library,
            fill_hist=args.fill_hist,
            duration=args.duration,
            args=public_args(args),
        )
        for files in split_files(args.files, args.clients)
    ]
    return run_clients(
        configs, outdir, no_monitor=args.no_monitor, kind="multi-analysis", args=public_args(args)
    )


def _analysis_options(parser: argparse.ArgumentParser) -> None:
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


def register(bsub: Any) -> None:
    parser = bsub.add_parser(
        "analysis",
        help="read TTree branches with uproot (events/s, Mbit/s)",
        description="Read one or more branches of a TTree from ROOT files (paths or root:// URLs) "
        "with uproot and do nothing further (or fill a histogram). Reports events/s and Mbit/s "
        "per wall-clock second and in total, as JSON lines.",
    )
    _analysis_options(parser)
    add_output_options(parser)
    parser.set_defaults(func=cmd_analysis)

    multi = bsub.add_parser(
        "multi-analysis",
        help="N analysis clients at once, released by a barrier, summed per second",
        description="Start N 'afkit bench analysis' clients as separate processes, each on different "
        "files, released at the same instant. Writes OUTDIR/client-NNN.jsonl, OUTDIR/sum.jsonl "
        "(events and bytes summed per wall-clock second) and OUTDIR/monitor.jsonl.",
    )
    multi.add_argument("-n", "--clients", type=int, required=True, help="number of client processes")
    multi.add_argument("--outdir", required=True, help="directory for the per-client and summed results")
    multi.add_argument("--no-monitor", action="store_true", help="do not sample the host")
    _analysis_options(multi)
    multi.set_defaults(func=cmd_multi_analysis)
