"""AO2D- and ESD-shaped files written by ROOT itself (``afkit bench gen ao2d|esd``).

The writer is a ROOT macro shipped beside this module (``afkit_gen.C``, run by ``root.exe -b -q
-l``); this module finds ROOT, turns the options into the macro's arguments, shows its progress and
makes the result atomic (temporary name, then rename). Standard library only: campaigns run it
inside the image of the tag, whose ROOT writes the files (afkit.campaign.dataset).

Sizes follow the papers' bytes per event: AOD 10,530 MB / 25,990 events (405 kB per
collision), ESD 31,457 MB / 17,290 events (1.82 MB per event). The layouts are documented in the
macro and in docs/benchmarks.md.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from afkit.atomic import atomic_path
from afkit.errors import AfkitError, PrereqError, UnsafeError, UsageError
from afkit.signals import pdeathsig_prefix

MB = 1_000_000
AOD_EVENT_BYTES = round(10530 * MB / 25990)
ESD_EVENT_BYTES = round(31457 * MB / 17290)
MACRO = Path(__file__).with_name("afkit_gen.C")
MACRO_VERSION = 1  # part of a file's parameters: a changed writer rewrites the files
# ROOT's compression algorithms (Compression.h: ROOT::RCompressionSetting::EAlgorithm)
ALGORITHMS = {"zlib": 1, "lzma": 2, "lz4": 4, "zstd": 5}
DEFAULT = -1  # ROOT's compiled-in default (101 = zlib:1 in ROOT 6.40)
ROOT_HINT = (
    "put ROOT's bin/ on PATH (source thisroot.sh, `pip install root`, or load the tag's ROOT "
    "module) or pass --root DIR (the directory holding bin/root.exe)"
)


@dataclass(frozen=True)
class Shape:
    name: str
    event_bytes: int  # on-disk bytes per event (collision)
    trees: tuple[str, ...]  # the trees it writes (patterns: DF_* stands for every time frame)


SHAPES = {
    "ao2d": Shape(
        "ao2d",
        AOD_EVENT_BYTES,
        ("DF_*/O2bc", "DF_*/O2collision", "DF_*/O2track", "DF_*/O2trackcov", "DF_*/O2trackextra"),
    ),
    "esd": Shape("esd", ESD_EVENT_BYTES, ("esdTree",)),
}
DF_BYTES = 16 * MB  # a time frame's size (DF_<n>): collisions per DF = DF_BYTES / event bytes


def events_per_file(size: int, files: int, event_bytes: int, name: str) -> int:
    """Events in each of FILES files that share SIZE bytes (usage error below one event)."""
    if files < 1:
        raise UsageError(f"--files must be >= 1, got {files}")
    per_file = size // files // event_bytes
    if per_file < 1:
        raise UsageError(
            f"{size} bytes in {files} file(s) is less than one {name.upper()} event ({event_bytes} bytes)",
            hint="ask for a larger --size",
        )
    return per_file


def parse_compression(spec: str) -> int:
    """ROOT's compression setting (algorithm x 100 + level) from ``default``, ``none``, ``505``
    or ``zstd:5``; -1 stands for ROOT's compiled-in default."""
    text = spec.strip().lower()
    if text == "default":
        return DEFAULT
    if text in ("none", "0"):
        return 0
    name, sep, level = text.partition(":")
    if sep:
        if name not in ALGORITHMS or not level.isdigit() or not 1 <= int(level) <= 9:
            raise UsageError(
                f"invalid compression '{spec}'",
                hint="use ALGORITHM:LEVEL with ALGORITHM zlib|lzma|lz4|zstd and LEVEL 1-9 (e.g. zstd:5)",
            )
        return ALGORITHMS[name] * 100 + int(level)
    if text.isdigit() and int(text) // 100 in ALGORITHMS.values() and 1 <= int(text) % 100 <= 9:
        return int(text)
    raise UsageError(
        f"invalid compression '{spec}'",
        hint="use ROOT's setting (e.g. 505 = zstd level 5, 101 = zlib 1), zstd:5, 'default' or 'none'",
    )


def find_root(root_dir: str | None) -> Path:
    """root.exe of --root DIR, else of PATH, else of $ROOTSYS; exit 3 naming what to install."""
    if root_dir:
        for cand in (Path(root_dir) / "bin" / "root.exe", Path(root_dir) / "root.exe"):
            if cand.is_file() and os.access(cand, os.X_OK):
                return cand
        raise PrereqError(f"no bin/root.exe under --root '{root_dir}'", hint=ROOT_HINT)
    found = shutil.which("root.exe")
    if found:
        return Path(found)
    rootsys = os.environ.get("ROOTSYS")
    if rootsys and (Path(rootsys) / "bin" / "root.exe").is_file():
        return Path(rootsys) / "bin" / "root.exe"
    raise PrereqError("ROOT not found: afkit bench gen ao2d|esd writes its files with ROOT", hint=ROOT_HINT)


def _c_string(text: str) -> str:
    return json.dumps(text)  # a C string literal for these inputs (no control characters)


def write(
    root_cmd: list[str],
    shape: Shape,
    dest: Path,
    events: int,
    *,
    compression: int,
    seed: int,
    df_events: int,
    force: bool,
    progress: Callable[[int, int, int], None] | None = None,
    macro: str = str(MACRO),
    kept_at: str | None = None,
    kept_bytes: int = 0,
) -> dict[str, Any]:
    """One file of EVENTS events, written by ROOT_CMD (``[root.exe]``, or an ``apptainer exec
    IMAGE root.exe`` that sees DEST's directory at the same path and MACRO); its record. Kept as
    is when it holds the same parameters: DEST, or the file KEPT_AT (another path or a URL ROOT
    reads; "": none, write) of KEPT_BYTES bytes, DEST then not written."""
    params = json.dumps(
        {
            "kind": shape.name,
            "events": events,
            "event_bytes": shape.event_bytes,
            "compression": compression,
            "seed": seed,
            "df_events": df_events,
            "writer": MACRO_VERSION,
        },
        sort_keys=True,
    )
    start = time.time()
    done: dict[str, Any] = {}
    kept = False

    class _Kept(Exception):
        pass

    try:
        with atomic_path(dest, mode=0o644) as tmp:
            final = "" if force else str(dest.absolute()) if kept_at is None else kept_at
            where = f"{_c_string(str(tmp.absolute()))}, {_c_string(final)}"
            call = (
                f"{macro}({_c_string(shape.name)}, {where}, {events}, "
                f"{shape.event_bytes}, {compression}, {seed}, {df_events}, {_c_string(params)})"
            )
            # killed with this process, however it ends: an interrupted dataset step (snakemake's
            # SIGTERM to its job) left ROOT writing on, reparented to init
            proc = subprocess.Popen(
                [*pdeathsig_prefix(), *root_cmd, "-b", "-q", "-l", "-n", call],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            assert proc.stdout is not None and proc.stderr is not None
            for line in proc.stdout:
                word, _, rest = line.removeprefix("afkit-gen: ").strip().partition(" ")
                if not line.startswith("afkit-gen: "):
                    continue
                if word == "progress" and progress is not None:
                    e, n, b = (int(x) for x in rest.split())
                    progress(e, n, b)
                elif word == "done":
                    done = json.loads(rest)
                elif word == "kept":
                    kept = True
                elif word == "differs":
                    raise UnsafeError(
                        f"'{dest}' exists with other contents; not overwriting it",
                        hint="remove it or pass --force",
                    )
            err = proc.stderr.read()
            code = proc.wait()
            if kept:
                raise _Kept
            if code != 0 or not done:
                lines = [ln for ln in err.splitlines() if ln.strip() and "warning:" not in ln]
                raise AfkitError(
                    f"ROOT ({root_cmd[-1]}) failed writing '{dest}' (exit {code}): "
                    + (" | ".join(lines[-3:]) or "no message"),
                    hint="run the command again with the same options to see ROOT's messages",
                )
    except _Kept:
        pass
    size = dest.stat().st_size if not kept or kept_at is None else kept_bytes
    return {
        "type": "generated",
        "kind": shape.name,
        "file": str(dest),
        "events": events,
        "bytes": size,
        "bytes_per_event": round(size / events, 1),
        "target_bytes_per_event": shape.event_bytes,
        "trees": list(shape.trees),
        "kept": kept,
        "seconds": round(time.time() - start, 3),
        **({"compression": done["compression"], "root_version": done["root_version"]} if done else {}),
        **({"mean_tracks": round(float(done["mean_tracks"]), 1)} if done else {}),
    }


def progress_printer(name: str) -> Callable[[int, int, int], None]:
    """A progress callback: one stderr line per 10 % (and at the end)."""
    shown = [-1]

    def show(events: int, total: int, nbytes: int) -> None:
        tenth = events * 10 // total
        if tenth > shown[0]:
            shown[0] = tenth
            print(f"afkit bench: {name}: {events}/{total} events, {nbytes / MB:.1f} MB", file=sys.stderr)

    return show


def generate(
    kind: str,
    outdir: Path,
    *,
    size: int,
    files: int,
    prefix: str | None,
    compression: str,
    seed: int,
    force: bool,
    root_dir: str | None,
    df_events: int | None = None,
) -> list[dict[str, Any]]:
    """FILES files of KIND sharing SIZE bytes in OUTDIR: their records."""
    shape = SHAPES[kind]
    setting = parse_compression(compression)
    events = events_per_file(size, files, shape.event_bytes, kind)
    per_df = df_events if df_events else max(1, DF_BYTES // shape.event_bytes)
    if per_df < 1:
        raise UsageError(f"--df-events must be >= 1, got {per_df}")
    root_exe = find_root(root_dir)
    names = [outdir / f"{prefix or kind}-{i:03d}.root" for i in range(files)]
    records = []
    for i, dest in enumerate(names):
        rec = write(
            [str(root_exe)],
            shape,
            dest,
            events,
            compression=setting,
            seed=seed + i,
            df_events=per_df,
            force=force,
            progress=progress_printer(dest.name),
        )
        records.append(rec)
    return records
