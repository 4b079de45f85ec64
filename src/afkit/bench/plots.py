"""Read-pattern plots from a trace: offset against time, and the histogram of read sizes."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from afkit.atomic import atomic_path
from afkit.bench.trace import TraceEntry


def _save(fig: object, dest: Path) -> None:
    with atomic_path(dest) as tmp:
        fig.savefig(tmp, dpi=110)  # type: ignore[attr-defined]


def plot_trace(entries: list[TraceEntry], outdir: Path, title: str = "") -> list[Path]:
    """Write ``offset_vs_time.png`` and ``read_sizes.png`` into ``outdir``; return their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    outdir.mkdir(parents=True, exist_ok=True)
    offsets = np.array([e.offset for e in entries], dtype=float)
    sizes = np.array([e.length for e in entries], dtype=float)
    if all(e.time is not None for e in entries):
        t0 = min(e.time for e in entries if e.time is not None)
        xs = np.array([(e.time or 0.0) - t0 for e in entries])
        xlabel = "time since first read [s]"
    else:
        xs = np.arange(len(entries), dtype=float)
        xlabel = "read number"
    paths = [outdir / "offset_vs_time.png", outdir / "read_sizes.png"]

    fig, ax = plt.subplots(figsize=(8, 4.5))
    ax.scatter(xs, offsets / 2**20, s=2, alpha=0.6)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("offset [MiB]")
    ax.set_title(f"{title} read offsets ({len(entries)} reads)".strip())
    fig.tight_layout()
    _save(fig, paths[0])
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(8, 4.5))
    lo, hi = max(sizes.min(), 1.0), max(sizes.max(), 2.0)
    bins: int | list[float] = 40
    if hi / lo > 10:
        bins = np.logspace(np.log10(lo), np.log10(hi * 1.01), 40).tolist()
    ax.hist(sizes, bins=bins)
    if hi / lo > 10:
        ax.set_xscale("log")
    ax.set_xlabel("read size [bytes]")
    ax.set_ylabel("reads")
    ax.set_title(f"{title} read sizes (median {int(np.median(sizes))} B)".strip())
    fig.tight_layout()
    _save(fig, paths[1])
    plt.close(fig)
    return paths
