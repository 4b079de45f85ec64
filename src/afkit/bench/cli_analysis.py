"""``afkit bench analysis``: uproot reads of TTree branches."""

from __future__ import annotations

import argparse
from typing import Any

from afkit.bench.analysis import AnalysisConfig, run_analysis
from afkit.bench.cli_common import add_benchmark, add_multi_benchmark, check_duration, run_multi
from afkit.bench.multi import split_files
from afkit.bench.output import public_args, run_benchmark


def _config(args: argparse.Namespace, files: list[str]) -> AnalysisConfig:
    return AnalysisConfig(
        files=files,
        branches=args.branch,
        tree=args.tree,
        step_size=args.step_size,
        library=args.library,
        fill_hist=args.fill_hist,
        duration=args.duration,
        args=public_args(args),
    )


def cmd_analysis(args: argparse.Namespace) -> int:
    check_duration(args)
    cfg = _config(args, args.files)
    return run_benchmark(args, lambda writer: run_analysis(cfg, writer))


def cmd_multi_analysis(args: argparse.Namespace) -> int:
    check_duration(args)
    configs = [_config(args, files) for files in split_files(args.files, args.clients)]
    return run_multi(args, "multi-analysis", configs)


def _analysis_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE|URL")
    parser.add_argument(
        "-b", "--branch", action="append", required=True, help="branch to read (repeat for several)"
    )
    parser.add_argument(
        "-t",
        "--tree",
        help="TTree name or pattern, e.g. DF_*/O2track: every matching tree (default: the file's only tree)",
    )
    parser.add_argument("--step-size", default="100 MB", help="uproot step_size (default '100 MB', uproot's)")
    parser.add_argument("--library", choices=("ak", "np"), default="ak", help="array library (default ak)")
    parser.add_argument(
        "--fill-hist", action="store_true", help="also fill a 100-bin histogram of the values"
    )
    parser.add_argument("--duration", type=float, help="stop after this many seconds")


def register(bsub: Any) -> None:
    add_benchmark(
        bsub,
        "analysis",
        summary="read TTree branches with uproot (events/s, Mbit/s)",
        description="Read one or more branches of a TTree from ROOT files (paths or root:// URLs) "
        "with uproot and do nothing further (or fill a histogram). Reports events/s and Mbit/s "
        "per wall-clock second and in total, as JSON lines.",
        options=_analysis_options,
        func=cmd_analysis,
    )
    add_multi_benchmark(
        bsub,
        "multi-analysis",
        summary="N analysis clients at once, released by a barrier, summed per second",
        description="Start N 'afkit bench analysis' clients as separate processes, each on different "
        "files, released at the same instant. Writes OUTDIR/client-NNN.jsonl, OUTDIR/sum.jsonl "
        "(events and bytes summed per wall-clock second) and OUTDIR/monitor.jsonl.",
        options=_analysis_options,
        func=cmd_multi_analysis,
    )
