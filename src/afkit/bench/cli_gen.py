"""``afkit bench gen random|aod|ao2d|esd``: benchmark input files."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from afkit.bench import gen, rootgen
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


def cmd_rootgen(args: argparse.Namespace) -> int:
    size = parse_size(args.size)
    records = rootgen.generate(
        args.gen_kind,
        _outdir(args),
        size=size,
        files=args.files,
        prefix=args.prefix,
        compression=args.compression,
        seed=args.seed,
        force=args.force,
        root_dir=args.root,
        df_events=args.df_events,
    )
    _report(records)
    return 0


def register(bsub: Any) -> None:
    parser = bsub.add_parser(
        "gen",
        help="generate benchmark input files (random, AOD-like, AO2D- and ESD-shaped)",
        description="Generate input files. 'random': random bytes, one file copied under N names "
        "(same content, different files: no client profits from another's cache). 'aod': a Run 2 "
        "AOD-like TTree 'Events' written with uproot (405 kB per event). 'ao2d'/'esd': written by "
        "ROOT (root.exe on PATH or --root DIR): AO2D with DF_<n> folders of O2 tables (405 kB per "
        "collision), ESD with a split 'esdTree' (1.82 MB per event).",
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
    sp = gsub.add_parser("aod", help=f"Run 2 AOD-like TTree 'Events' ({gen.AOD.event_bytes} B/event, uproot)")
    common(sp)
    sp.add_argument("--files", type=int, default=1, help="split the total size over this many files")
    sp.add_argument("--compression", default="zlib:4", help="zlib|lzma|lz4|zstd[:level] (default zlib:4)")
    sp.add_argument("--prefix", help="file name prefix (default 'aod')")
    sp.set_defaults(func=cmd_root)
    shapes = {
        "ao2d": "AO2D-shaped files written by ROOT: DF_<n> folders with O2bc, O2collision, O2track "
        "(fIndexCollisions), O2trackcov, O2trackextra",
        "esd": "ESD-shaped files written by ROOT: a split 'esdTree' (AliESDRun., AliESDHeader., "
        "PrimaryVertex., Tracks, V0s, CaloClusters ...)",
    }
    for kind, text in shapes.items():
        shape = rootgen.SHAPES[kind]
        sp = gsub.add_parser(kind, help=f"{text} ({shape.event_bytes} B/event)", description=text + ".")
        common(sp)
        sp.add_argument("--files", type=int, default=1, help="split the total size over this many files")
        sp.add_argument(
            "--compression",
            default="default",
            help="ROOT's setting: ALGORITHM*100+LEVEL (505 = zstd 5, as O2 writes AO2D; 101 = zlib 1), "
            "zlib|lzma|lz4|zstd:LEVEL, 'none', or 'default' (ROOT's own, the default)",
        )
        sp.add_argument("--prefix", help=f"file name prefix (default '{kind}')")
        sp.add_argument("--root", metavar="DIR", help="ROOT installation (DIR/bin/root.exe; default: PATH)")
        if kind == "ao2d":
            sp.add_argument(
                "--df-events",
                type=int,
                help=f"collisions per DF_<n> folder (default: {rootgen.DF_BYTES // rootgen.MB} MB worth)",
            )
        else:
            sp.set_defaults(df_events=None)
        sp.set_defaults(func=cmd_rootgen)
