"""Data generators: random-content files for the read benchmark, Run 2 AOD-like ROOT files.

Random files: one file of random bytes, then byte-identical copies under other names. Every
copy is its own file (own inode, own page-cache pages, own cache entry) while the content, and
so anything content-dependent, stays the same for every client.

AOD-like files: a TTree written with uproot whose *on-disk* size per event matches the
experiment's figure (AOD ≈ 10530 MB / 25990 events ≈ 405 kB). Values are physics-like
(exponential momenta, Gaussian angles, small integers) and quantised like lossy-compressed
experiment data, so the codec compresses them realistically (about 1.5-2.5x); the multiplicities
are calibrated against the chosen codec before writing. AO2D- and ESD-shaped files are written
by ROOT itself (afkit.bench.rootgen).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from afkit.atomic import atomic_path
from afkit.bench.rootgen import AOD_EVENT_BYTES, events_per_file
from afkit.errors import UnsafeError, UsageError

if TYPE_CHECKING:  # numpy is imported where data is made: `afkit bench` starts without it
    import numpy as np

MB = 1_000_000
CHUNK = 8 << 20
BASKET_BYTES = 4 * MB  # on-disk bytes of one extend() call (one basket per branch)


@dataclass(frozen=True)
class EventModel:
    name: str
    event_bytes: int  # target on-disk bytes per event
    collections: dict[str, dict[str, str]]  # collection -> field -> kind


AOD = EventModel(
    "aod",
    AOD_EVENT_BYTES,
    {
        "Track": {
            "pt": "pt",
            "eta": "eta",
            "phi": "phi",
            "d0": "small",
            "z0": "small",
            "chi2": "chi2",
            "nHits": "count",
        },
        "Cluster": {"e": "pt", "eta": "eta", "phi": "phi", "time": "small"},
    },
)
MODELS = {"aod": AOD}


def _values(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """Physics-like values, quantised as experiments store them."""
    import numpy as np

    if kind == "pt":
        return np.round(rng.exponential(12.0, n), 2).astype(np.float32)
    if kind == "eta":
        return np.round(rng.normal(0.0, 1.6, n), 3).astype(np.float32)
    if kind == "phi":
        return np.round(rng.uniform(-np.pi, np.pi, n), 3).astype(np.float32)
    if kind == "small":
        return np.round(rng.normal(0.0, 0.05, n), 4).astype(np.float32)
    if kind == "chi2":
        return np.round(rng.chisquare(5, n), 2).astype(np.float32)
    if kind == "pos":
        return np.round(rng.normal(0.0, 300.0, n), 1).astype(np.float32)
    if kind == "adc":
        return rng.poisson(60, n).astype(np.uint16)
    if kind == "count":
        return rng.integers(0, 40, n).astype(np.int16)
    raise ValueError(kind)


def _batch(
    model: EventModel, counts: np.ndarray, rng: np.random.Generator, first_event: int
) -> dict[str, Any]:
    import awkward as ak
    import numpy as np

    out: dict[str, Any] = {
        "run": np.full(len(counts), 1, dtype=np.int32),
        "event": np.arange(first_event, first_event + len(counts), dtype=np.int64),
    }
    for coll, fields in model.collections.items():
        total = int(counts.sum())
        cols = {f: ak.unflatten(_values(kind, total, rng), counts) for f, kind in fields.items()}
        out[coll] = ak.zip(cols)
    return out


def _codec(spec: str) -> Any:
    import uproot

    name, _, level = spec.partition(":")
    codecs: dict[str, Callable[[int], Any]] = {
        "zlib": uproot.ZLIB,
        "lzma": uproot.LZMA,
        "lz4": uproot.LZ4,
        "zstd": uproot.ZSTD,
    }
    if name.lower() not in codecs:
        raise UsageError(f"unknown compression '{spec}'", hint="use zlib:N, lzma:N, lz4:N or zstd:N")
    try:
        return codecs[name.lower()](int(level) if level else 4)
    except (ValueError, TypeError) as err:
        raise UsageError(f"invalid compression level in '{spec}': {err}") from err


def calibrate(model: EventModel, codec: Any, seed: int = 1) -> float:
    """Mean multiplicity per collection that gives ``model.event_bytes`` compressed bytes."""
    import numpy as np
    import uproot

    rng = np.random.default_rng(seed)
    unit = 200_000
    compressed = 0
    for fields in model.collections.values():
        for kind in fields.values():
            raw = _values(kind, unit, rng).tobytes()
            compressed += len(uproot.compression.compress(raw, codec))
    return max(1.0, model.event_bytes / (compressed / unit))


def _check_dest(dest: Path, force: bool) -> None:
    if dest.exists() and not force:
        raise UnsafeError(f"'{dest}' exists; not overwriting it", hint="remove it or pass --force")


def write_root(
    dest: Path, model: EventModel, events: int, codec: Any, seed: int, force: bool
) -> dict[str, Any]:
    """One AOD/ESD-like file of ``events`` events (atomic: temporary name, then rename)."""
    import numpy as np
    import uproot

    _check_dest(dest, force)
    mean = calibrate(model, codec, seed)
    rng = np.random.default_rng(seed)
    per_basket = max(1, BASKET_BYTES // model.event_bytes)
    with atomic_path(dest) as tmp, uproot.recreate(tmp, compression=codec) as out:
        tree = None
        done = 0
        while done < events:
            n = min(per_basket, events - done)
            counts = np.maximum(rng.poisson(mean, n), 1)
            batch = _batch(model, counts, rng, done)
            if tree is None:  # a TTree (uproot's default for a dict would be an RNTuple)
                types = {k: v.dtype if isinstance(v, np.ndarray) else v.type for k, v in batch.items()}
                tree = out.mktree("Events", types)
            tree.extend(batch)
            done += n
    size = dest.stat().st_size
    return {"file": str(dest), "events": events, "bytes": size, "bytes_per_event": round(size / events, 1)}


def write_random(dest: Path, size: int, seed: int, force: bool) -> None:
    import numpy as np

    _check_dest(dest, force)
    rng = np.random.default_rng(seed)
    with atomic_path(dest) as tmp, tmp.open("wb") as fh:
        left = size
        while left > 0:
            n = min(CHUNK, left)
            fh.write(rng.bytes(n))
            left -= n
        fh.flush()
        os.fsync(fh.fileno())


def copy_file(src: Path, dest: Path, force: bool) -> None:
    _check_dest(dest, force)
    with atomic_path(dest) as tmp:
        shutil.copyfile(src, tmp)


def events_for(size: int, files: int, model: EventModel) -> int:
    return events_per_file(size, files, model.event_bytes, model.name)
