"""``afkit bench disk``, ``afkit bench compare`` and ``afkit bench plot``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from afkit import argtypes
from afkit.bench.cli_common import add_benchmark, check_duration
from afkit.bench.disk import TESTS, DiskConfig, compare, run_disk, summary_of
from afkit.bench.output import run_benchmark
from afkit.bench.records import read_jsonl
from afkit.bench.trace import load_trace
from afkit.bench.units import parse_size
from afkit.errors import UsageError


def cmd_disk(args: argparse.Namespace) -> int:
    tests = tuple(t.strip() for t in args.tests.split(",") if t.strip())
    check_duration(args)
    cfg = DiskConfig(
        target=Path(args.target),
        size=parse_size(args.size),
        block=parse_size(args.block, what="block size"),
        rand_block=parse_size(args.rand_block, what="random block size"),
        tests=tests,
        duration=args.duration,
        trace=Path(args.trace) if args.trace else None,
        label=args.label,
        keep=False,
    )
    if cfg.size < cfg.block:
        raise UsageError(f"--size {args.size} is smaller than one block ({args.block})")
    return run_benchmark(args, lambda writer: run_disk(cfg, writer))


def cmd_compare(args: argparse.Namespace) -> int:
    before = summary_of(read_jsonl(Path(args.before)), Path(args.before))
    after = summary_of(read_jsonl(Path(args.after)), Path(args.after))
    result = compare(before, after)
    print(json.dumps(result))
    for t in result["tests"]:
        ratio = "n/a" if t["ratio"] is None else f"{t['ratio']:.3f}"
        line = f"{t['test']:9s} before {t['before_gbps']:8.3f}  after {t['after_gbps']:8.3f} Gbit/s"
        print(f"{line}  ratio {ratio}", file=sys.stderr)
    for key, (old, new) in result["changed_settings"].items():
        print(f"changed: {key}: {old} -> {new}", file=sys.stderr)
    return 0


def cmd_plot(args: argparse.Namespace) -> int:
    from afkit.bench.plots import plot_trace

    entries = load_trace(Path(args.trace))
    for path in plot_trace(entries, Path(args.outdir), title=args.title):
        print(path)
    return 0


def _disk_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", help="directory on the file system to test")
    parser.add_argument("--size", default="1GiB", help="test file size (default 1GiB)")
    parser.add_argument("--block", default="1MiB", help="sequential block size (default 1MiB)")
    parser.add_argument("--rand-block", default="64KiB", help="random-read block size (default 64KiB)")
    parser.add_argument(
        "--tests", default=",".join(TESTS), help=f"comma list of {', '.join(TESTS)} (default all)"
    )
    parser.add_argument(
        "--trace", help="trace to replay in the 'replay' test (default: the ROOT-like pattern)"
    )
    parser.add_argument("--duration", type=argtypes.finite, help="limit each read test to this many seconds")
    parser.add_argument(
        "--label", default="", help="a name for this configuration, e.g. 'before' or 'ra-4096'"
    )


def register(bsub: Any) -> None:
    add_benchmark(
        bsub,
        "disk",
        summary="disk-server tests: sequential write/read, random read, ROOT-like replay",
        description="Write a test file in TARGET, then read it sequentially, randomly and with the "
        "ROOT-like small-read pattern (or a recorded trace), dropping its pages from the page "
        "cache before each read test. Records the device's read-ahead, I/O scheduler and mount "
        "options with the result. The test file is removed afterwards.",
        options=_disk_options,
        func=cmd_disk,
    )

    cmp_ = bsub.add_parser(
        "compare",
        help="compare two 'bench disk' results (after/before ratio per test, changed settings)",
        description="Print the after/before throughput ratio of every test and the device settings "
        "that differ between two 'afkit bench disk' result files.",
    )
    cmp_.add_argument("before")
    cmp_.add_argument("after")
    cmp_.set_defaults(func=cmd_compare)

    plot = bsub.add_parser(
        "plot",
        help="read-pattern plots from a trace (offset vs time, read-size histogram)",
        description="Plot a trace (from 'afkit bench read --trace-out', or CSV/JSON offset,length) as "
        "OUTDIR/offset_vs_time.png and OUTDIR/read_sizes.png (matplotlib, Agg backend).",
    )
    plot.add_argument("trace")
    plot.add_argument("--outdir", required=True)
    plot.add_argument("--title", default="")
    plot.set_defaults(func=cmd_plot)
