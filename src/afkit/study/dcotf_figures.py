"""The dcotf-xcache study's figures in the original's axes and units.

- micro: Gbit/s over time, summed over the clients (the wave's jobs) on wall-clock seconds, one
  panel per (scenario, nodes), stride 0, a warm repetition (the original measured warm caches);
- analysis: for AOD and ESD, total Gbit/s and events/s against clients, one line per scenario.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from matplotlib.figure import Figure

from afkit.campaign.figures import legend, new_figure, save
from afkit.campaign.rows import IntervalRow, JobRow

SCENARIOS = ("origin", "xcache", "xcache-dca", "dcotf")
LABEL = {"origin": "no cache", "xcache": "XCache", "xcache-dca": "XCache DCA", "dcotf": "DCOTF"}


def _wave_series(jobs: Sequence[JobRow], samples: dict[str, list[IntervalRow]]) -> list[tuple[float, float]]:
    """(seconds since the wave's first sample, Gbit/s) summed over JOBS on wall-clock seconds."""
    per_s: dict[int, float] = defaultdict(float)
    for j in jobs:
        for s in samples.get(j.id, []):
            if s.time is not None:
                per_s[math.floor(s.time)] += s.bytes
    if not per_s:
        return []
    t0 = min(per_s)
    return [(t - t0, b * 8 / 1e9) for t, b in sorted(per_s.items())]


def micro_figure(rows: Sequence[JobRow], intervals: Sequence[IntervalRow]) -> Figure | None:
    ok = [r for r in rows if r.bench == "micro" and r.status == "ok" and r.stride == "0"]
    if not ok:
        return None
    samples: dict[str, list[IntervalRow]] = defaultdict(list)
    for s in intervals:
        samples[s.id].append(s)
    nodes = sorted({r.wave_size for r in ok})
    last_rep = max((r.repetition or 0) for r in ok)
    fig = new_figure(3.2 * len(nodes) + 1, 2.4 * len(SCENARIOS) + 0.5)
    axes = fig.subplots(len(SCENARIOS), len(nodes), squeeze=False, sharex=True)
    for i, scen in enumerate(SCENARIOS):
        for k, n in enumerate(nodes):
            ax = axes[i][k]
            jobs = [
                r for r in ok if r.scenario == scen and r.wave_size == n and (r.repetition or 0) == last_rep
            ]
            series = _wave_series(jobs, samples)
            if series:
                ax.plot([t for t, _ in series], [g for _, g in series], "-", color="#1f4e9c")
            ax.set_title(f"{LABEL[scen]}, {n} node{'s' if n > 1 else ''}", fontsize=9)
            ax.set_ylim(bottom=0)
            if k == 0:
                ax.set_ylabel("Gbit/s")
            if i == len(SCENARIOS) - 1:
                ax.set_xlabel("time (s)")
    return fig


def analysis_figure(rows: Sequence[JobRow], bench: str) -> Figure | None:
    ok = [
        r
        for r in rows
        if r.bench == bench and r.status == "ok" and (r.scenario == "origin" or (r.repetition or 0) > 0)
    ]
    if not ok:
        return None
    fig = new_figure(8.0, 3.6)
    rate_ax, ev_ax = fig.subplots(1, 2)
    for scen in SCENARIOS:
        mine = sorted((r for r in ok if r.scenario == scen), key=lambda r: r.clients)
        if not mine:
            continue
        by_c: dict[int, list[JobRow]] = defaultdict(list)
        for r in mine:
            by_c[r.clients].append(r)
        cs = sorted(by_c)
        rate_ax.plot(
            cs,
            [max((r.throughput_MBps or 0) * 8 / 1000 for r in by_c[c]) for c in cs],
            "o-",
            label=LABEL[scen],
        )
        ev_ax.plot(cs, [max(r.events_per_s or 0 for r in by_c[c]) for c in cs], "o-", label=LABEL[scen])
    rate_ax.set_xlabel("clients")
    rate_ax.set_ylabel("total Gbit/s")
    ev_ax.set_xlabel("clients")
    ev_ax.set_ylabel("events/s")
    for ax in (rate_ax, ev_ax):
        ax.set_ylim(bottom=0)
    fig.suptitle(f"ALICE {bench.upper()} data in the image", fontsize=10)
    legend(ev_ax)
    return fig


def write_all(rows: Sequence[JobRow], intervals: Sequence[IntervalRow], out: Path) -> list[tuple[str, Path]]:
    made: list[tuple[str, Path]] = []
    path = save(micro_figure(rows, intervals), out / "micro.png")
    if path:
        made.append(
            ("micro: Gbit/s over time summed over the clients, per (scenario, nodes), stride 0, warm", path)
        )
    for bench in ("aod", "esd"):
        path = save(analysis_figure(rows, bench), out / f"analysis-{bench}.png")
        if path:
            made.append((f"analysis: {bench.upper()}, total Gbit/s and events/s against clients", path))
    return made
