"""``afkit bench gen random|aod|esd``: benchmark input files."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from afkit.bench import gen
from afkit.bench.units import human_bytes, parse_size
from afkit.errors import UsageError


def _outdir(args: argparse.Namespace) -> Path:
    out = Path(args.outdir)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--outdir '{out}' exists and is not a directory")
    out.mkdir(parents=True, exist_ok=True)
    return out


def _report(records: list[dict[str, Any]]) -> None:
    for rec in records:
        print(json.dumps(rec))


def cmd_random(args: argparse.Namespace) -> int:
    size = parse_size(args.size)
    if size <= 0 or args.copies < 1:
        raise UsageError("--size must be positive and --copies >= 1")
    out = _outdir(args)
    names = [out / f"{args.prefix}-{i:03d}.bin" for i in range(args.copies)]
    for dest in names:  # refuse before writing anything
        gen._check_dest(dest, args.force)
    gen.write_random(names[0], size, args.seed, args.force)
    for dest in names[1:]:
        gen.copy_file(names[0], dest, args.force)
    _report([{"type": "generated", "kind": "random", "file": str(p), "bytes": size} for p in names])
    print(f"afkit bench: {len(names)} x {human_bytes(size)} (same content) in {out}", file=sys.stderr)
    return 0


def cmd_root(args: argparse.Namespace) -> int:
    model = gen.MODELS[args.gen_kind]
    codec = gen._codec(args.compression)
    events = gen.events_for(parse_size(args.size), args.files, model)
    out = _outdir(args)
    names = [out / f"{args.prefix or model.name}-{i:03d}.root" for i in range(args.files)]
    for dest in names:
        gen._check_dest(dest, args.force)
    records = []
    for i, dest in enumerate(names):
        rec = gen.write_root(dest, model, events, codec, args.seed + i, args.force)
        rec.update({"type": "generated", "kind": model.name, "target_bytes_per_event": model.event_bytes})
        records.append(rec)
    _report(records)
    return 0


def register(bsub: Any) -> None:
    parser = bsub.add_parser(
        "gen",
        help="generate benchmark input files (random, AOD-like, ESD-like)",
        description="Generate input files. 'random': random bytes, one file copied under N names "
        "(same content, different files: no client profits from another's cache). 'aod'/'esd': "
        "ROOT TTrees with the experiments' on-disk event sizes (405 kB / 1.82 MB per event).",
    )
    gsub = parser.add_subparsers(dest="gen_kind", metavar="KIND", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--size", required=True, help="random: size of each file; aod/esd: total size")
        p.add_argument("--outdir", required=True, help="directory for the files (created if missing)")
        p.add_argument("--seed", type=int, default=1)
        p.add_argument("--force", action="store_true", help="overwrite existing files of the same names")

    rnd = gsub.add_parser("random", help="random-content files for 'afkit bench read'")
    common(rnd)
    rnd.add_argument("--copies", type=int, default=1, help="number of files (default 1)")
    rnd.add_argument("--prefix", default="random", help="file name prefix (default 'random')")
    rnd.set_defaults(func=cmd_random)
    for kind in ("aod", "esd"):
        sp = gsub.add_parser(
            kind, help=f"{kind.upper()}-like ROOT files ({gen.MODELS[kind].event_bytes} B/event)"
        )
        common(sp)
        sp.add_argument("--files", type=int, default=1, help="split the total size over this many files")
        sp.add_argument("--compression", default="zlib:4", help="zlib|lzma|lz4|zstd[:level] (default zlib:4)")
        sp.add_argument("--prefix", help=f"file name prefix (default '{kind}')")
        sp.set_defaults(func=cmd_root)
