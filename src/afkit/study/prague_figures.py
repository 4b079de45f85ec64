"""The disk-server study's figures: Table 2 redrawn (runtimes relative to the default setting, the
original's five filesystems beside afkit's runs) and Figures 10-12 from ROOT's recorded reads
(offset against time since the open, a detail of it, the read sizes), each without and with the
tree cache."""

from __future__ import annotations

import statistics
from pathlib import Path

from afkit.bench.trace import TraceEntry
from afkit.campaign.figures import new_figure, save
from afkit.study.model import Study
from afkit.study.prague import Measured, original_cuts

Figure = tuple[str, Path]


def table2(study: Study, m: Measured, out: Path) -> Figure | None:
    d, t = m.seconds("default"), m.seconds("tuned")
    if not d or not t:
        return None
    ref = statistics.median(d)
    fig = new_figure(8, 4)
    ax = fig.subplots()
    cuts = original_cuts(study)
    labels = [f"fs #{i + 1}" for i in range(len(cuts))]
    ax.bar(
        [i - 0.2 for i in range(len(cuts))], [1.0] * len(cuts), 0.4, color="#bbb", label="original, default"
    )
    ax.bar(
        [i + 0.2 for i in range(len(cuts))], [1 - c for c in cuts], 0.4, color="#777", label="original, tuned"
    )
    reps = sorted({int(str(r["rep"])) for r in m.runs})
    base = len(cuts) + 0.5
    for k, rep in enumerate(reps):
        sec = {str(r["setting"]): float(str(r["seconds"])) for r in m.runs if int(str(r["rep"])) == rep}
        x = base + k
        ax.bar(
            x - 0.2,
            sec.get("default", 0) / ref,
            0.4,
            color="#9ecae1",
            label="afkit, default" if k == 0 else None,
        )
        ax.bar(
            x + 0.2, sec.get("tuned", 0) / ref, 0.4, color="#3182bd", label="afkit, tuned" if k == 0 else None
        )
        labels.append(f"afkit run {rep + 1}")
    ax.set_xticks([*range(len(cuts)), *[base + k for k in range(len(reps))]], labels, rotation=30, ha="right")
    ax.set_ylabel("runtime / default runtime")
    ax.set_title("Table 2: reading generated files, default and tuned read-ahead + scheduler")
    ax.legend(fontsize="small", loc="lower left")
    path = out / "table2.png"
    save(fig, path)
    caption = (
        f"Table 2 redrawn: each runtime divided by its default's (the original: five filesystems, "
        f"{min(cuts):.0%}-{max(cuts):.0%} shorter tuned; afkit: median default {ref:.3g} s)"
    )
    return caption, path


def course(entries: list[TraceEntry], out: Path, name: str, what: str, middle: bool = False) -> Figure | None:
    """Figure 10 (every read) or 11 (MIDDLE: the reads of the middle tenth of the run) in the
    original's axes: the offset across, the time since the first read up; each read a short line
    over its bytes (the original's 'small lines')."""
    timed = [e for e in entries if e.time is not None]
    if len(timed) < 2:
        return None
    t0 = min(e.time or 0.0 for e in timed)
    t1 = max(e.time or 0.0 for e in timed)
    lo, hi = (t0 + 0.45 * (t1 - t0), t0 + 0.55 * (t1 - t0)) if middle else (t0, t1)
    part = [e for e in timed if lo <= (e.time or 0.0) <= hi]
    fig = new_figure(8, 4.5)
    ax = fig.subplots()
    ax.hlines([(e.time or 0.0) - t0 for e in part], [e.offset / 2**20 for e in part],
              [(e.offset + e.length) / 2**20 for e in part], lw=2, color="C0")  # fmt: skip
    if not middle:
        ax.plot([e.offset / 2**20 for e in part], [(e.time or 0.0) - t0 for e in part], ".", ms=2, color="C0")
    ax.set_xlabel("offset in the file [MiB]")
    ax.set_ylabel("time since the first read [s]")
    fig_no = 11 if middle else 10
    ax.set_title(
        f"Figure {fig_no}: {len(part)} reads {what}" + (" (the middle tenth of the run)" if middle else "")
    )
    path = out / f"fig{fig_no}-{name}.png"
    save(fig, path)
    caption = (
        f"Figure 11 redrawn ({what}): the reads between {lo - t0:.2f} s and {hi - t0:.2f} s"
        if middle
        else f"Figure 10 redrawn ({what}): the offset of every read against the time since the first"
    )
    return caption, path


def sizes(entries: list[TraceEntry], out: Path, name: str, what: str, small: float) -> Figure:
    """Figure 12: the histogram of the read sizes (log bins), the original's 'small' line marked."""
    import numpy as np

    lengths = np.array([e.length for e in entries], dtype=float)
    fig = new_figure(8, 4.5)
    ax = fig.subplots()
    lo, hi = max(lengths.min(), 1.0), max(lengths.max(), 2.0)
    ax.hist(lengths, bins=np.logspace(np.log10(lo), np.log10(hi * 1.01), 40).tolist())
    ax.set_xscale("log")
    ax.axvline(small, color="C3", ls="--", label=f"{small / 1000:g} kB (the original: mostly below)")
    share = float((lengths < small).mean())
    ax.set_xlabel("read size [bytes]")
    ax.set_ylabel("reads")
    ax.set_title(f"Figure 12: {len(lengths)} reads {what}: {share:.0%} under {small / 1000:g} kB")
    ax.legend(fontsize="small")
    path = out / f"fig12-{name}.png"
    save(fig, path)
    return f"Figure 12 redrawn ({what}): the sizes of the reads", path


def write_all(study: Study, m: Measured, out: Path) -> list[Figure]:
    out.mkdir(parents=True, exist_ok=True)
    figures: list[Figure] = []
    t2 = table2(study, m, out)
    if t2:
        figures.append(t2)
    small = study.value("small_read") * 1000
    for name, what in (("nocache", "without a tree cache"), ("cache", "with ROOT's TTreeCache")):
        entries = m.traces.get(name)
        if not entries:
            continue
        for middle in (False, True):
            fig = course(entries, out, name, what, middle)
            if fig:
                figures.append(fig)
        figures.append(sizes(entries, out, name, what, small))
    return figures
