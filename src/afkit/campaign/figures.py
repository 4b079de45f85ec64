"""The campaign figures (PNG, matplotlib Agg), each from the tidy tables.

Each figure is built by a function that returns the matplotlib ``Figure`` (what the tests look
at: data, labels, axes) and written by one that saves it. Every figure uses matplotlib's
constrained layout, so tick labels, titles and legends stay inside the picture; rates that differ
by an order of magnitude or more (a WAN-capped read beside a local one) get a log axis, where a
linear one would draw the slow series flat on zero.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from statistics import median
from typing import TYPE_CHECKING

from matplotlib.axes import Axes
from matplotlib.axis import Axis
from matplotlib.figure import Figure
from matplotlib.ticker import FormatStrFormatter, LogLocator

from afkit.atomic import atomic_path
from afkit.campaign.rows import IntervalRow, JobRow
from afkit.campaign.scaling import WavePoint, server_of

if TYPE_CHECKING:
    from afkit.campaign.compare import CellComparison

# series whose typical rates differ by this factor or more share a log axis
LOG_SPREAD = 10.0


def new_figure(width: float, height: float) -> Figure:
    return Figure(figsize=(width, height), layout="constrained")


def save(fig: Figure | None, path: Path) -> Path | None:
    if fig is None:
        return None
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=90)
    return path


def log_scale(ax: Axes, which: str) -> None:
    """A log scale on AX's WHICH ('x' or 'y') axis, numbers written plainly at 1, 2 and 5 of each
    decade (not 10^k); values <= 0 (an interval without a byte) are left out, not drawn at 0."""
    axis: Axis = ax.xaxis if which == "x" else ax.yaxis
    if which == "x":
        ax.set_xscale("log", nonpositive="mask")
    else:
        ax.set_yscale("log", nonpositive="mask")
    axis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(FormatStrFormatter("%g"))


def rate_axis(ax: Axes, series: Iterable[Iterable[float]], label: str) -> bool:
    """Label AX's y axis; a log scale when the series' medians (their positive values) differ by
    LOG_SPREAD or more. True when the axis is logarithmic."""
    typical = [median(pos) for vals in series if (pos := [v for v in vals if v > 0])]
    log = bool(typical) and max(typical) >= LOG_SPREAD * min(typical)
    if log:
        log_scale(ax, "y")
    ax.set_ylabel(f"{label} (log scale)" if log else label)
    return log


def legend(ax: Axes) -> None:
    """The legend below the axes, inside the figure (constrained layout makes room)."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.18), ncols=1, frameon=False)


def source(r: JobRow) -> str:
    """What the job's processing read: 'SITE <- ENDPOINT' (host:port it read from, or 'local'), and
    in copy mode 'SITE <- local copy (staged from ENDPOINT)': the job copied the input to its
    scratch first and read that copy (the stage-in is in the step table). Figures keep these
    apart: sites and storage endpoints are never added together."""
    endpoint = server_of(r.url)
    if r.access == "copy":
        return f"{r.site} <- local copy (staged from {endpoint})"
    return f"{r.site} <- {endpoint}"


def rate_series(
    rows: list[JobRow], intervals: list[IntervalRow]
) -> dict[tuple[str, str, str, int], dict[float, float]]:
    """(source, scenario, access, clients) → {t: Gbit/s}: summed over a job's clients, mean over
    repetitions; one series per site and endpoint."""
    kinds = {r.id: r for r in rows if r.type == "read" and r.status == "ok"}
    series: dict[tuple[str, str, str, int], dict[float, list[float]]] = defaultdict(lambda: defaultdict(list))
    for s in intervals:
        r = kinds.get(s.id)
        if not r:
            continue
        key = (source(r), r.scenario, r.access, r.clients)
        step = r.interval or 1.0
        t_bin = round(round(s.t / step) * step, 3)  # samples of repetitions line up per interval
        series[key][t_bin].append(s.bytes * 8 / 1e9 / step)
    return {k: {t: sum(v) / len(v) for t, v in pts.items()} for k, pts in series.items()}


def repetitions_of(rows: list[JobRow]) -> dict[tuple[str, str, str, int], int]:
    """(source, scenario, access, clients) → how many repetitions rate_series averages there."""
    reps: dict[tuple[str, str, str, int], set[int | None]] = defaultdict(set)
    for r in rows:
        if r.type == "read" and r.status == "ok":
            reps[(source(r), r.scenario, r.access, r.clients)].add(r.repetition)
    return {k: len(v) for k, v in reps.items()}


def rate_vs_time_figure(rows: list[JobRow], intervals: list[IntervalRow]) -> Figure | None:
    """Gbit/s vs time per site, endpoint and scenario (read benchmarks)."""
    series = rate_series(rows, intervals)
    if not series:
        return None
    reps = repetitions_of(rows)
    fig = new_figure(8, 4.5 + 0.14 * len(series))
    ax = fig.subplots()
    for key, pts in sorted(series.items()):
        src, scen, access, clients = key
        ts = sorted(pts)
        n = reps.get(key, 1)
        mean = f", mean of {n} repetitions" if n > 1 else ""
        ax.plot(ts, [pts[t] for t in ts], marker=".", label=f"{src}: {scen} {access} {clients} cl.{mean}")
    rate_axis(ax, (pts.values() for pts in series.values()), "throughput [Gbit/s]")
    ax.set_xlabel("time since start of processing [s]")
    ax.set_title("Read throughput vs time, per site, endpoint and cache scenario")
    ax.grid(alpha=0.3, which="both")
    legend(ax)
    return fig


def rate_vs_time(rows: list[JobRow], intervals: list[IntervalRow], path: Path) -> Path | None:
    return save(rate_vs_time_figure(rows, intervals), path)


def client_lines(
    rows: list[JobRow], kind: str
) -> dict[tuple[str, str, str, int], dict[int, tuple[float, float]]]:
    """(source, scenario, access, nodes) → {clients: (MB/s, events/s)}: the sum over a wave's jobs
    (its nodes, all at one site), mean over repetitions; sites and endpoints are separate lines."""
    sums: dict[tuple[str, str, str, int, int], dict[int | None, list[float]]] = defaultdict(
        lambda: defaultdict(lambda: [0.0, 0.0])
    )
    for r in rows:
        if r.type != kind or r.status != "ok":
            continue
        acc = sums[(source(r), r.scenario, r.access, r.wave_size, r.clients)][r.repetition]
        acc[0] += r.throughput_MBps or 0.0
        acc[1] += r.events_per_s or 0.0
    lines: dict[tuple[str, str, str, int], dict[int, tuple[float, float]]] = defaultdict(dict)
    for (src, scen, access, nodes, clients), reps in sums.items():
        n = len(reps)
        lines[(src, scen, access, nodes)][clients] = (
            sum(v[0] for v in reps.values()) / n,
            sum(v[1] for v in reps.values()) / n,
        )
    return dict(lines)


def vs_clients_figure(rows: list[JobRow], kind: str) -> Figure | None:
    """Throughput (MB/s; analysis: Mbit/s) and, for analysis, events/s versus clients per node, one
    line per site, endpoint, scenario (and node count)."""
    lines = client_lines(rows, kind)
    if not lines:
        return None
    ncols = 2 if kind == "analysis" else 1
    # analysis: Mbit/s beside events/s, the papers' pair (read: MB/s, as the tables)
    scale, unit = (8.0, "Mbit/s") if kind == "analysis" else (1.0, "MB/s")
    fig = new_figure(6 * ncols + 1, 4.5 + 0.14 * len(lines))
    axes = fig.subplots(1, ncols, squeeze=False)[0]
    for (src, scen, access, nodes), pts in sorted(lines.items()):
        cs = sorted(pts)
        label = f"{src}: {scen} {access}" + (f" {nodes} node(s)" if kind == "analysis" else "")
        axes[0].plot(cs, [scale * pts[c][0] for c in cs], marker="o", label=label)
        if kind == "analysis":
            axes[1].plot(cs, [pts[c][1] for c in cs], marker="o", label=label)
    rate_axis(
        axes[0], ([scale * v[0] for v in pts.values()] for pts in lines.values()), f"throughput [{unit}]"
    )
    axes[0].set_title(f"{kind}: throughput vs clients, per site and endpoint")
    if kind == "analysis":
        rate_axis(axes[1], ([v[1] for v in pts.values()] for pts in lines.values()), "events/s")
        axes[1].set_title("analysis: event rate vs clients")
    for ax in axes:
        ax.set_xlabel("clients per node")
        ax.set_xticks(sorted({c for pts in lines.values() for c in pts}))  # the client counts run
        ax.grid(alpha=0.3, which="both")
    legend(axes[0])
    return fig


def vs_clients(rows: list[JobRow], path: Path, kind: str) -> Path | None:
    return save(vs_clients_figure(rows, kind), path)


def train_scaling_figure(points: list[WavePoint]) -> Figure | None:
    """Aggregate throughput vs concurrent jobs: all jobs and first-minute / 98 % series."""
    if not points:
        return None
    groups: dict[tuple[str, ...], list[WavePoint]] = defaultdict(list)
    for p in points:
        groups[p.key].append(p)
    fig = new_figure(8, 4.5 + 0.28 * len(groups))
    ax = fig.subplots()
    for key, pts in groups.items():
        xs = [p.concurrent for p in pts]
        name = " ".join(key[2:]) if len(key) > 2 else " ".join(key)
        ax.plot(xs, [p.throughput_all / 1e6 for p in pts], marker="s", ls="--", label=f"{name}: all jobs")
        ax.plot(xs, [p.throughput_98 / 1e6 for p in pts], marker="o", label=f"{name}: first minute, 98 %")
    rate_axis(ax, ([p.throughput_98 / 1e6 for p in pts] for pts in groups.values()),
              "aggregate throughput [MB/s]")  # fmt: skip
    ax.set_xlabel("concurrent jobs")
    ax.set_title("Analysis-train scaling")
    ax.grid(alpha=0.3, which="both")
    legend(ax)
    return fig


def train_scaling(points: list[WavePoint], path: Path) -> Path | None:
    return save(train_scaling_figure(points), path)


def step_ranges(rows: list[JobRow]) -> list[dict[str, object]]:
    """min-max of each step per (WN site, dataset, scenario, access mode, endpoint), over successful
    jobs; ``endpoint`` is where the job read from (direct) or staged its input in from (copy:
    processing then read the local copy)."""
    groups: dict[tuple[str, str, str, str, str], list[JobRow]] = defaultdict(list)
    for r in rows:
        if r.status == "ok":
            groups[(r.site, r.dataset, r.scenario, r.access, server_of(r.url))].append(r)
    out = []
    for (site, ds, scen, access, endpoint), rs in sorted(groups.items()):
        copy = access == "copy"
        entry: dict[str, object] = {
            "site": site,
            "dataset": ds,
            "scenario": scen,
            "access": access,
            "staged_from": endpoint if copy else "",
            "read_from": "local copy" if copy else endpoint,
            "jobs": len(rs),
        }
        for step in ("setup", "stage_in", "processing", "stage_out"):
            vals = [v for r in rs if (v := r.step_s(step)) is not None]
            entry[step] = (min(vals), max(vals)) if vals else None
        pulls = [r.image_pull_s for r in rs if r.image_pull_s is not None]
        entry["image_pull"] = (min(pulls), max(pulls)) if pulls else None
        entry["image_cache"] = image_cache_counts(rs)
        out.append(entry)
    return out


def image_cache_counts(rows: list[JobRow]) -> str:
    """How the image pulls of ROWS (jobs at a shared_fs: false site) met the node's image cache,
    e.g. "1 miss, 3 hit" (afkit.campaign.imagecache); empty when none pulled."""
    from afkit.campaign.imagecache import STATES

    counts = Counter(r.image_cache for r in rows if r.image_cache)
    states = [s for s in STATES if s in counts] + sorted(set(counts) - set(STATES))
    return ", ".join(f"{counts[s]} {s}" for s in states)


VERDICT_COLOURS = {
    "worse": "tab:red",
    "better": "tab:green",
    "same": "tab:gray",
    "inconclusive": "tab:orange",
    "lost": "black",
}


def comparison_figure(cells: list[CellComparison], tolerance: float | None = None) -> Figure | None:
    """NEW/BASE throughput ratio per cell with its 95 % bootstrap interval, coloured by verdict;
    the tolerance band (same) shaded. A log axis when the ratios span an order of magnitude."""
    if not cells:
        return None
    labels = [f"{c.label} ({c.verdict}, {c.reps_base}/{c.reps_new} rep.)" for c in cells]
    fig = new_figure(max(7.0, 4.0 + 0.07 * max(map(len, labels))), 1.8 + 0.32 * len(cells))
    ax = fig.subplots()
    for y, c in enumerate(cells):
        if c.verdict == "lost":  # no ratio: NEW has no successful job (the label says so)
            continue
        err = [[max(c.ratio - c.low, 0.0)], [max(c.high - c.ratio, 0.0)]]
        ax.errorbar([c.ratio], [y], xerr=err, fmt="o", color=VERDICT_COLOURS.get(c.verdict, "tab:blue"),
                    capsize=3)  # fmt: skip
    if tolerance is not None:
        ax.axvspan(1 - tolerance, 1 + tolerance, color="tab:gray", alpha=0.15, lw=0,
                   label=f"same: within {tolerance:.0%}")  # fmt: skip
    ax.axvline(1.0, color="black", lw=0.8)
    ratios = [v for c in cells if c.verdict != "lost" for v in (c.low, c.high) if v > 0]
    if ratios and max(ratios) >= LOG_SPREAD * min(ratios):
        log_scale(ax, "x")
    ax.set_yticks(range(len(cells)), labels, fontsize=7)
    ax.set_ylim(len(cells) - 0.5, -0.5)
    ax.set_xlabel("throughput NEW / BASE (median, 95 % bootstrap interval)")
    ax.set_title("Comparison with the baseline")
    ax.grid(alpha=0.3, axis="x", which="both")
    if tolerance is not None:
        ax.legend(fontsize=7, loc="lower right")
    return fig


def comparison(cells: list[CellComparison], path: Path, tolerance: float | None = None) -> Path | None:
    return save(comparison_figure(cells, tolerance), path)
