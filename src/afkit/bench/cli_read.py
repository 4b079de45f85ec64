"""``afkit bench read``, ``afkit bench multi`` and ``afkit bench merge``."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Any

from afkit import argtypes
from afkit.bench.cli_common import add_benchmark, add_multi_benchmark, check_duration, run_multi
from afkit.bench.multi import split_files, write_sum
from afkit.bench.offsets import BlockPlan, ReplayPlan, RootLikePlan, parse_stride
from afkit.bench.output import public_args, run_benchmark
from afkit.bench.readbench import Plan, ReadConfig, run_read
from afkit.bench.records import JsonlWriter, provenance
from afkit.bench.trace import load_trace
from afkit.bench.units import parse_rate, parse_size
from afkit.errors import UsageError


def _add_read_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE|URL", help="POSIX paths or root:// URLs")
    parser.add_argument("--block", default="8MiB", help="block size (default 8MiB; k/M/G are binary)")
    parser.add_argument(
        "--stride", default="0", help="gap between blocks: 0 (sequential), a size, or 'random' (permutation)"
    )
    parser.add_argument("--start", default="0", help="offset of the first block (default 0)")
    parser.add_argument(
        "--duration", type=argtypes.finite, help="stop after this many seconds (default: end of data)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the random orders (default 0)")
    parser.add_argument(
        "--demand",
        metavar="RATE",
        help="read at most RATE per client, e.g. 2MB/s: a CPU-bound analysis's pace (default: no limit)",
    )
    parser.add_argument(
        "--loop", action="store_true", help="read the files again from the start until --duration ends"
    )
    parser.add_argument(
        "--pattern",
        choices=("blocks", "root-like"),
        default="blocks",
        help="'blocks' (default) or 'root-like': small (<3 kB) vector reads in several regions",
    )
    parser.add_argument("--regions", type=int, default=8, help="root-like: regions read at once (default 8)")
    parser.add_argument("--per-region", type=int, default=4, help="root-like: reads per region per call")
    parser.add_argument(
        "--replay", metavar="TRACE", help="replay a recorded (offset, length) trace (CSV/JSON)"
    )
    parser.add_argument(
        "--vector", type=int, default=1, help="replay: reads per vector read (default 1: plain reads)"
    )
    parser.add_argument(
        "--reconnect-timeout",
        type=argtypes.non_negative,
        default=10.0,
        help="after a failed read, try to reopen for this long before giving up (default 10 s)",
    )
    parser.add_argument("--trace-out", metavar="FILE", help="record every read (time, offset, length) here")
    parser.add_argument(
        "--drop-cache",
        action="store_true",
        help="evict local files' pages from the page cache before reading (posix_fadvise DONTNEED)",
    )


def build_plan(args: argparse.Namespace) -> Plan:
    if args.replay and args.pattern != "blocks":
        raise UsageError("--replay and --pattern root-like exclude each other")
    if args.replay:
        if args.vector < 1:
            raise UsageError(f"--vector must be >= 1, got {args.vector}")
        entries = load_trace(Path(args.replay))
        return ReplayPlan(tuple((e.offset, e.length) for e in entries), vector=args.vector)
    if args.pattern == "root-like":
        return RootLikePlan(regions=args.regions, per_region=args.per_region, seed=args.seed)
    return BlockPlan(
        block=parse_size(args.block, what="block size"),
        stride=parse_stride(args.stride),
        start=parse_size(args.start, what="start offset"),
        seed=args.seed,
    )


def read_config(args: argparse.Namespace, files: list[str]) -> ReadConfig:
    check_duration(args)
    if args.loop and args.duration is None:
        raise UsageError("--loop reads until --duration ends: give --duration SECONDS")
    return ReadConfig(
        urls=files,
        plan=build_plan(args),
        duration=args.duration,
        reconnect_timeout=args.reconnect_timeout,
        trace_out=Path(args.trace_out) if getattr(args, "trace_out", None) else None,
        drop_cache=args.drop_cache,
        args=public_args(args),
        repeat=args.loop,
        rate=parse_rate(args.demand) if args.demand else None,
    )


def cmd_read(args: argparse.Namespace) -> int:
    cfg = read_config(args, args.files)
    return run_benchmark(args, lambda writer: run_read(cfg, writer))


def cmd_multi(args: argparse.Namespace) -> int:
    groups = split_files(args.files, args.clients)
    base = read_config(args, args.files)
    if base.trace_out is not None:
        raise UsageError("--trace-out is for a single client; use 'afkit bench read'")
    return run_multi(args, "multi", [dataclasses.replace(base, urls=files) for files in groups])


def cmd_merge(args: argparse.Namespace) -> int:
    inputs = [Path(p) for p in args.inputs]
    summary = write_sum(inputs, Path(args.output), "merge", {"provenance": provenance(public_args(args))})
    print(f"afkit bench: merged {len(inputs)} series: {summary['gbps']:.3f} Gbit/s mean", file=sys.stderr)
    return 0


def register(bsub: Any) -> None:
    add_benchmark(
        bsub,
        "read",
        summary="generic read benchmark (XrdCl or POSIX)",
        description="Read files by root:// URL (XRootD.client.File) or POSIX path in blocks; count "
        "bytes per wall-clock second; report Gbit/s (10^9 bit/s) as JSON lines.",
        options=_add_read_options,
        func=cmd_read,
    )
    add_multi_benchmark(
        bsub,
        "multi",
        summary="N read clients at once, released by a barrier, summed per second",
        description="Start N read clients as separate processes, each on different files, released "
        "at the same instant. Writes OUTDIR/client-NNN.jsonl, OUTDIR/sum.jsonl, OUTDIR/monitor.jsonl.",
        options=_add_read_options,
        func=cmd_multi,
    )

    merge = bsub.add_parser(
        "merge",
        help="sum the per-second series of several result files (e.g. one per node)",
        description="Sum the 'interval' records of several JSON-lines results second by second "
        "(wall-clock aligned). Give each client's (or each node's sum.jsonl) once.",
    )
    merge.add_argument("inputs", nargs="+", metavar="RESULT.jsonl")
    merge.add_argument("-o", "--output", required=True, help="where to write the summed series")
    merge.set_defaults(func=cmd_merge)


__all__ = ["JsonlWriter", "register"]
