"""The KIT coordinated-caches study's figures: Figure 1 redrawn (per data source, the processes'
summed input rate and their CPU usage, the processing share, against concurrent processes; each
network source's link rate drawn across) and Figure 6 (the workflow's walltimes with the node's
cache disabled and enabled)."""

from __future__ import annotations

import statistics
from pathlib import Path

from afkit.campaign.figures import new_figure, save
from afkit.study.kit import Measured
from afkit.study.model import Study

Figure = tuple[str, Path]


def figure1(m: Measured, out: Path) -> Figure | None:
    if not m.points:
        return None
    fig = new_figure(10, 4.2)
    rate_ax, share_ax = fig.subplots(1, 2)
    for i, source in enumerate(m.sources()):
        rate = m.series(source, "rate_MBps")
        share = m.series(source, "share")
        color = f"C{i}"
        rate_ax.plot([x for x, _ in rate], [y for _, y in rate], "o-", color=color, label=source)
        share_ax.plot([x for x, _ in share], [y * 100 for _, y in share], "o-", color=color, label=source)
        if any(int(str(p.get("background") or 0)) for p in m.points if p["source"] == source):
            total = m.series(source, "total_MBps")
            rate_ax.plot([x for x, _ in total], [y for _, y in total], "s--", color=color, ms=4,
                         label=f"{source}, with its background readers")  # fmt: skip
        link = m.link(source)
        if link > 0:
            rate_ax.axhline(link, ls=":", color=color, lw=1)
    rate_ax.set_xlabel("concurrent processes on the node")
    rate_ax.set_ylabel("sum of input rate [MB/s]")
    rate_ax.set_yscale("log")
    rate_ax.set_title("input rate (dotted: the source's link)")
    rate_ax.legend(fontsize="small")
    share_ax.set_xlabel("concurrent processes on the node")
    share_ax.set_ylabel("CPU usage: processing share [%]")
    share_ax.set_ylim(0, max([110.0, *(y * 100 + 10 for s in m.sources() for _, y in m.series(s, "share"))]))
    share_ax.set_title("average CPU usage of the processes")
    path = out / "fig1.png"
    save(fig, path)
    bg = {str(p["source"]): int(str(p.get("background") or 0)) for p in m.points}
    extra = "; ".join(f"{s}: +{n} background readers" for s, n in bg.items() if n)
    caption = (
        "Figure 1 redrawn: per data source, the processes' summed input rate and their CPU usage "
        f"(processing share: rate over demand) against concurrent processes{'; ' + extra if extra else ''}"
    )
    return caption, path


def figure6(m: Measured, out: Path) -> Figure | None:
    off, on = m.walltimes("disabled"), m.walltimes("enabled")
    if not off or not on:
        return None
    fig = new_figure(8, 4)
    ax = fig.subplots()
    top = max(off + on)
    bins = [top * k / 20 for k in range(21)]
    ax.hist(
        off, bins=bins, alpha=0.6, color="C3", label=f"cache disabled (median {statistics.median(off):.1f} s)"
    )
    ax.hist(
        on, bins=bins, alpha=0.6, color="C2", label=f"cache enabled (median {statistics.median(on):.1f} s)"
    )
    ax.set_xlabel("walltime of a job [s]")
    ax.set_ylabel("jobs")
    ax.set_title("Figure 6: the same workflow with the node's cache disabled and enabled")
    ax.legend(fontsize="small")
    path = out / "fig6.png"
    save(fig, path)
    ratio = statistics.median(off) / statistics.median(on)
    return (
        f"Figure 6 redrawn: walltimes of {len(off)} and {len(on)} jobs; speed-up of the median {ratio:.2f} x",
        path,
    )


def write_all(study: Study, m: Measured, out: Path) -> list[Figure]:
    del study
    out.mkdir(parents=True, exist_ok=True)
    return [f for f in (figure1(m, out), figure6(m, out)) if f]
