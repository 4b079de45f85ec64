"""``afkit bench analysis``: reads of TTree branches with uproot, or with ROOT itself (``--engine root``)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from afkit import argtypes
from afkit.bench.cli_common import add_benchmark, add_multi_benchmark, check_duration, run_multi
from afkit.bench.multi import split_files
from afkit.bench.output import public_args, run_benchmark
from afkit.bench.rootread import READERS, RootReadConfig, check_config, find_root, run_rootread
from afkit.errors import UsageError

if TYPE_CHECKING:
    from afkit.bench.analysis import AnalysisConfig

ENGINES = ("uproot", "root")


def _config(args: argparse.Namespace, files: list[str]) -> AnalysisConfig | RootReadConfig:
    if args.engine == "root":
        cfg = RootReadConfig(
            files=files,
            branches=args.branch or [],
            tree=args.tree,
            reader=args.reader,
            work="histogram" if args.fill_hist else "read",
            cache_mb=args.cache_mb,
            duration=args.duration,
            trace_out=Path(args.trace_out) if getattr(args, "trace_out", None) else None,
            args=public_args(args),
        )
        check_config(cfg)
        find_root()  # exit 3 before any output when there is no ROOT
        return cfg
    # the uproot engine's module is imported here: it imports numpy, a third of the start-up of
    # every other `afkit bench` command (each read job runs one) and of the ROOT engine's
    from afkit.bench.analysis import AnalysisConfig

    if getattr(args, "trace_out", None):
        raise UsageError("--trace-out needs --engine root (ROOT's TTreePerfStats records the reads)")
    if not args.branch:
        raise UsageError("the uproot engine needs at least one branch: -b BRANCH",
                         hint="or --engine root, which reads every branch when none is named")  # fmt: skip
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
    if isinstance(cfg, RootReadConfig):
        return run_benchmark(args, lambda writer: run_rootread(cfg, writer))
    from afkit.bench.analysis import run_analysis

    return run_benchmark(args, lambda writer: run_analysis(cfg, writer))


def cmd_multi_analysis(args: argparse.Namespace) -> int:
    check_duration(args)
    configs = [_config(args, files) for files in split_files(args.files, args.clients)]
    return run_multi(args, "multi-analysis", configs)  # type: ignore[arg-type]  # one engine per run


def _analysis_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE|URL")
    parser.add_argument(
        "--engine", choices=ENGINES, default="uproot",
        help="who reads: uproot (default) or ROOT itself, root.exe on PATH running afkit's reader macro",
    )  # fmt: skip
    parser.add_argument(
        "-b", "--branch", action="append",
        help="branch to read (repeat for several; uproot needs one, root reads every branch without)",
    )  # fmt: skip
    parser.add_argument(
        "-t", "--tree",
        help="TTree name or tree pattern matched against key paths, e.g. 'DF_*/O2track': every "
        "matching tree is read (default: the file's only tree)",
    )  # fmt: skip
    parser.add_argument("--step-size", default="100 MB", help="uproot step_size (default '100 MB', uproot's)")
    parser.add_argument(
        "--library", choices=("ak", "np"), default="ak", help="uproot's array library (default ak)"
    )
    parser.add_argument(
        "--fill-hist", action="store_true",
        help="also fill a 100-bin histogram (root: of the first numeric branch's values)",
    )  # fmt: skip
    parser.add_argument("--reader", choices=READERS, default="ttree",
                        help="root engine: TTree + TTreeCache (default) or RDataFrame")  # fmt: skip
    parser.add_argument(
        "--cache-mb", type=argtypes.non_negative, metavar="MB",
        help="root engine: TTreeCache size in MiB (default ROOT's own; 0: no cache)",
    )  # fmt: skip
    parser.add_argument("--duration", type=argtypes.finite, help="stop after this many seconds")


def _single_options(parser: argparse.ArgumentParser) -> None:
    _analysis_options(parser)
    parser.add_argument(
        "--trace-out", metavar="FILE",
        help="root engine: record every read of the files (time, offset, length; ROOT's TTreePerfStats) "
        "here as JSON lines, for 'afkit bench plot'",
    )  # fmt: skip


def register(bsub: Any) -> None:
    add_benchmark(
        bsub,
        "analysis",
        summary="read TTree branches with uproot or ROOT (events/s, Mbit/s)",
        description="Read one or more branches of a TTree from ROOT files (paths or root:// URLs) "
        "with uproot, or with ROOT itself (--engine root: root.exe on PATH, TTree + TTreeCache or "
        "RDataFrame), and do nothing further (or fill a histogram). Reports events/s and Mbit/s "
        "per wall-clock second and in total, as JSON lines; the root engine adds ROOT's own I/O "
        "figures (bytes read, read calls, vector reads).",
        options=_single_options,
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
