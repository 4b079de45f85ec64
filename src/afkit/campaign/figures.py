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

from matplotlib.axes import Axes
from matplotlib.axis import Axis
from matplotlib.figure import Figure
from matplotlib.ticker import FormatStrFormatter, LogLocator

from afkit.atomic import atomic_path
from afkit.campaign import cells
from afkit.campaign.cells import CellComparison
from afkit.campaign.rows import IntervalRow, JobRow
from afkit.campaign.scaling import WavePoint, server_of

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


Series = tuple[str, cells.Cell]  # (source, the cell without the figure's axis keys)
TIME_KEYS = cells.keys()  # a time series is one cell (the x axis is time)
CLIENT_KEYS = cells.keys(without=("clients",))  # a line of the clients figures: clients on the x axis


def _wave(r: JobRow) -> object:
    """The jobs that ran together at one sweep point: the repetition of the job's cell (a table
    without repetitions: each job on its own)."""
    return r.id if r.repetition is None else r.repetition


def series_label(series: Series, shown: list[str], among: list[cells.Cell], ks: tuple[cells.Key, ...]) -> str:
    """'SOURCE: ' and the SERIES' cell named by the keys SHOWN and every other key whose values
    differ AMONG the figure's series (the site is in the source)."""
    src, cell = series
    differ = {k.column for k in cells.varying(among, ks)}
    named = [k for k in ks if k.column != "site" and (k.column in shown or k.column in differ)]
    return f"{src}: {cells.describe(cell, named, ks)}"


def rate_series(rows: list[JobRow], intervals: list[IntervalRow]) -> dict[Series, dict[float, float]]:
    """(source, cell) → {t: Gbit/s} of the read benchmarks: per repetition the sum over the jobs
    that ran together (a job's samples already hold all its clients; a wave's jobs are aligned on
    wall-clock seconds since the wave's first processing start), then the mean over repetitions.
    Never summed across cells (sweep values) or sources (sites and endpoints)."""
    kinds = {r.id: r for r in rows if r.type == "read" and r.status == "ok"}
    t0: dict[tuple[Series, object], float] = {}
    for s in intervals:
        r = kinds.get(s.id)
        if r is not None and s.time is not None:
            at = ((source(r), cells.cell_of(r, TIME_KEYS)), _wave(r))
            t0[at] = min(t0.get(at, s.time - s.t), s.time - s.t)  # the wave's processing start
    sums: dict[Series, dict[object, dict[float, float]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(float))
    )
    for s in intervals:
        r = kinds.get(s.id)
        if not r:
            continue
        key: Series = (source(r), cells.cell_of(r, TIME_KEYS))
        wave = _wave(r)
        t = s.t if s.time is None else s.time - t0[(key, wave)]
        step = r.interval or 1.0
        t_bin = round(round(t / step) * step, 3)  # samples of repetitions line up per interval
        sums[key][wave][t_bin] += s.bytes * 8 / 1e9 / step
    out: dict[Series, dict[float, float]] = {}
    for key, waves in sums.items():
        per_t: dict[float, list[float]] = defaultdict(list)
        for pts in waves.values():
            for t, v in pts.items():
                per_t[t].append(v)
        out[key] = {t: sum(v) / len(v) for t, v in per_t.items()}
    return out


def repetitions_of(rows: list[JobRow]) -> dict[Series, int]:
    """(source, cell) → how many repetitions rate_series averages there."""
    reps: dict[Series, set[object]] = defaultdict(set)
    for r in rows:
        if r.type == "read" and r.status == "ok":
            reps[(source(r), cells.cell_of(r, TIME_KEYS))].add(_wave(r))
    return {k: len(v) for k, v in reps.items()}


def rate_vs_time_figure(rows: list[JobRow], intervals: list[IntervalRow]) -> Figure | None:
    """Gbit/s vs time per site, endpoint and cell (read benchmarks)."""
    series = rate_series(rows, intervals)
    if not series:
        return None
    reps = repetitions_of(rows)
    among = [cell for _, cell in series]
    fig = new_figure(8, 4.5 + 0.14 * len(series))
    ax = fig.subplots()
    for key, pts in sorted(series.items(), key=lambda kv: (kv[0][0], cells.sort_key(kv[0][1], TIME_KEYS))):
        ts = sorted(pts)
        n = reps.get(key, 1)
        mean = f", mean of {n} repetitions" if n > 1 else ""
        label = series_label(key, ["scenario", "access", "clients"], among, TIME_KEYS)
        ax.plot(ts, [pts[t] for t in ts], marker=".", label=f"{label}{mean}")
    rate_axis(ax, (pts.values() for pts in series.values()), "throughput [Gbit/s]")
    ax.set_xlabel("time since start of processing [s]")
    ax.set_title("Read throughput vs time, per site, endpoint and sweep point")
    ax.grid(alpha=0.3, which="both")
    legend(ax)
    return fig


def rate_vs_time(rows: list[JobRow], intervals: list[IntervalRow], path: Path) -> Path | None:
    return save(rate_vs_time_figure(rows, intervals), path)


def client_lines(rows: list[JobRow], kind: str) -> dict[Series, dict[int, tuple[float, float]]]:
    """(source, cell without clients) → {clients: (MB/s, events/s)}: per repetition the sum over
    the jobs that ran together (a wave's jobs, its nodes, all at one site), then the mean over
    repetitions; never summed across sweep values, sites or endpoints."""
    sums: dict[tuple[Series, int], dict[object, list[float]]] = defaultdict(
        lambda: defaultdict(lambda: [0.0, 0.0])
    )
    for r in rows:
        if r.type != kind or r.status != "ok":
            continue
        acc = sums[((source(r), cells.cell_of(r, CLIENT_KEYS)), r.clients)][_wave(r)]
        acc[0] += r.throughput_MBps or 0.0
        acc[1] += r.events_per_s or 0.0
    lines: dict[Series, dict[int, tuple[float, float]]] = defaultdict(dict)
    for (key, clients), reps in sums.items():
        n = len(reps)
        lines[key][clients] = (sum(v[0] for v in reps.values()) / n, sum(v[1] for v in reps.values()) / n)
    return dict(lines)


def vs_clients_figure(rows: list[JobRow], kind: str) -> Figure | None:
    """Throughput (MB/s; analysis: Mbit/s) and, for analysis, events/s versus clients per node, one
    line per site, endpoint and cell (scenario, access, jobs per wave, and what else differs)."""
    lines = client_lines(rows, kind)
    if not lines:
        return None
    ncols = 2 if kind == "analysis" else 1
    # analysis: Mbit/s beside events/s, the papers' pair (read: MB/s, as the tables)
    scale, unit = (8.0, "Mbit/s") if kind == "analysis" else (1.0, "MB/s")
    fig = new_figure(6 * ncols + 1, 4.5 + 0.14 * len(lines))
    axes = fig.subplots(1, ncols, squeeze=False)[0]
    among = [cell for _, cell in lines]
    shown = ["scenario", "access"] + (["wave_size"] if kind == "analysis" else [])
    for key, pts in sorted(lines.items(), key=lambda kv: (kv[0][0], cells.sort_key(kv[0][1], CLIENT_KEYS))):
        cs = sorted(pts)
        label = series_label(key, shown, among, CLIENT_KEYS)
        axes[0].plot(cs, [scale * pts[c][0] for c in cs], marker="o", label=label)
        if kind == "analysis":
            axes[1].plot(cs, [pts[c][1] for c in cs], marker="o", label=label)
    rate_axis(
        axes[0], ([scale * v[0] for v in pts.values()] for pts in lines.values()), f"throughput [{unit}]"
    )
    axes[0].set_title(f"{kind}: throughput vs clients, per site, endpoint and sweep point")
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


STEP_COLUMNS = ("site", "dataset", "scenario", "access")  # the step table's own key columns


def step_ranges(rows: list[JobRow]) -> list[dict[str, object]]:
    """min-max of each step per cell (afkit.campaign.cells) and endpoint, over successful jobs;
    ``endpoint`` is where the job read from (direct) or staged its input in from (copy:
    processing then read the local copy). ``extra``: {label: value} of the cell keys beyond
    (WN site, dataset, scenario, access) whose values differ among the rows (the table's further
    columns, the same in every row)."""
    groups: dict[tuple[cells.Cell, str], list[JobRow]] = defaultdict(list)
    for r in rows:
        if r.status == "ok":
            groups[(cells.cell_of(r), server_of(r.url))].append(r)
    extra = [k for k in cells.varying(cell for cell, _ in groups) if k.column not in STEP_COLUMNS]
    out = []
    for (cell, endpoint), rs in sorted(groups.items(), key=lambda kv: (cells.sort_key(kv[0][0]), kv[0][1])):
        named = cells.named(cell)
        copy = named["access"] == "copy"
        entry: dict[str, object] = {
            **{c: named[c] for c in STEP_COLUMNS},
            "staged_from": endpoint if copy else "",
            "read_from": "local copy" if copy else endpoint,
            "jobs": len(rs),
            "extra": {k.label: k.show(named[k.column]) for k in extra},
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
