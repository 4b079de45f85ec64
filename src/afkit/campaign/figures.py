"""The campaign figures (PNG, matplotlib Agg), each from the tidy tables."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from afkit.atomic import atomic_path
from afkit.campaign.scaling import WavePoint, server_of


def _save(fig: Figure, path: Path) -> Path:
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=90)
    return path


def source(r: dict[str, str]) -> str:
    """Who read from where: 'SITE <- ENDPOINT' (host:port the job read from, or 'local'). Figures
    keep these apart: sites and storage endpoints are never added together."""
    return f"{r['site']} <- {server_of(r.get('url', ''))}"


def rate_series(
    rows: list[dict[str, str]], intervals: list[dict[str, str]]
) -> dict[tuple[str, str, str, int], dict[float, float]]:
    """(source, scenario, access, clients) → {t: Gbit/s}: summed over a job's clients, mean over
    repetitions; one series per site and endpoint."""
    kinds = {r["id"]: r for r in rows if r["type"] == "read" and r["status"] == "ok"}
    series: dict[tuple[str, str, str, int], dict[float, list[float]]] = defaultdict(lambda: defaultdict(list))
    interval_of = {i: float(r.get("interval") or 1.0) for i, r in kinds.items()}
    for s in intervals:
        r = kinds.get(s["id"])
        if not r:
            continue
        key = (source(r), r["scenario"], r["access"], int(r["clients"]))
        step = interval_of[s["id"]]
        t_bin = round(round(float(s["t"]) / step) * step, 3)  # samples of repetitions line up per interval
        series[key][t_bin].append(float(s["bytes"]) * 8 / 1e9 / step)
    return {k: {t: sum(v) / len(v) for t, v in pts.items()} for k, pts in series.items()}


def rate_vs_time(rows: list[dict[str, str]], intervals: list[dict[str, str]], path: Path) -> Path | None:
    """Gbit/s vs time per site, endpoint and scenario (read benchmarks)."""
    series = rate_series(rows, intervals)
    if not series:
        return None
    fig = Figure(figsize=(7, 4))
    ax = fig.subplots()
    for (src, scen, access, clients), pts in sorted(series.items()):
        ts = sorted(pts)
        ax.plot(ts, [pts[t] for t in ts], marker=".", label=f"{src}: {scen} {access} {clients} cl.")
    ax.set_xlabel("time since start of processing [s]")
    ax.set_ylabel("throughput [Gbit/s]")
    ax.set_title("Read throughput vs time, per site, endpoint and cache scenario")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    return _save(fig, path)


def client_lines(
    rows: list[dict[str, str]], kind: str
) -> dict[tuple[str, str, str, str], dict[int, tuple[float, float]]]:
    """(source, scenario, access, nodes) → {clients: (MB/s, events/s)}: the sum over a wave's jobs
    (its nodes, all at one site), mean over repetitions; sites and endpoints are separate lines."""
    sums: dict[tuple[str, str, str, str, int], dict[str, list[float]]] = defaultdict(
        lambda: defaultdict(lambda: [0.0, 0.0])
    )
    for r in rows:
        if r["type"] != kind or r["status"] != "ok":
            continue
        acc = sums[(source(r), r["scenario"], r["access"], r["wave_size"], int(r["clients"]))][
            r["repetition"]
        ]
        acc[0] += float(r["throughput_MBps"])
        acc[1] += float(r["events_per_s"] or 0)
    lines: dict[tuple[str, str, str, str], dict[int, tuple[float, float]]] = defaultdict(dict)
    for (src, scen, access, nodes, clients), reps in sums.items():
        n = len(reps)
        lines[(src, scen, access, nodes)][clients] = (
            sum(v[0] for v in reps.values()) / n,
            sum(v[1] for v in reps.values()) / n,
        )
    return dict(lines)


def vs_clients(rows: list[dict[str, str]], path: Path, kind: str) -> Path | None:
    """Throughput (MB/s) and, for analysis, events/s versus clients per node, one line per site,
    endpoint, scenario (and node count)."""
    lines = client_lines(rows, kind)
    if not lines:
        return None
    ncols = 2 if kind == "analysis" else 1
    fig = Figure(figsize=(6 * ncols, 4))
    axes = fig.subplots(1, ncols, squeeze=False)
    for (src, scen, access, nodes), pts in sorted(lines.items()):
        cs = sorted(pts)
        label = f"{src}: {scen} {access}" + (f" {nodes} node(s)" if kind == "analysis" else "")
        axes[0][0].plot(cs, [pts[c][0] for c in cs], marker="o", label=label)
        if kind == "analysis":
            axes[0][1].plot(cs, [pts[c][1] for c in cs], marker="o", label=label)
    axes[0][0].set_ylabel("throughput [MB/s]")
    axes[0][0].set_title(f"{kind}: throughput vs clients, per site and endpoint")
    if kind == "analysis":
        axes[0][1].set_ylabel("events/s")
        axes[0][1].set_title("analysis: event rate vs clients")
    for ax in axes[0]:
        ax.set_xlabel("clients per node")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    return _save(fig, path)


def train_scaling(points: list[WavePoint], path: Path) -> Path | None:
    """Aggregate throughput vs concurrent jobs: all jobs and first-minute / 98 % series."""
    if not points:
        return None
    fig = Figure(figsize=(7, 4))
    ax = fig.subplots()
    groups: dict[tuple[str, ...], list[WavePoint]] = defaultdict(list)
    for p in points:
        groups[p.key].append(p)
    for key, pts in groups.items():
        xs = [p.concurrent for p in pts]
        name = " ".join(key[2:]) if len(key) > 2 else " ".join(key)
        ax.plot(xs, [p.throughput_all / 1e6 for p in pts], marker="s", ls="--", label=f"{name}: all jobs")
        ax.plot(xs, [p.throughput_98 / 1e6 for p in pts], marker="o", label=f"{name}: first minute, 98 %")
    ax.set_xlabel("concurrent jobs")
    ax.set_ylabel("aggregate throughput [MB/s]")
    ax.set_title("Analysis-train scaling")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    return _save(fig, path)


def step_ranges(rows: list[dict[str, str]]) -> list[dict[str, Any]]:
    """min-max of each step per (WN site, dataset, access mode), over successful jobs."""
    groups: dict[tuple[str, str, str, str], list[dict[str, str]]] = defaultdict(list)
    for r in rows:
        if r["status"] == "ok":
            groups[(r["site"], r["dataset"], r["scenario"], r["access"])].append(r)
    out = []
    for (site, ds, scen, access), rs in sorted(groups.items()):
        entry: dict[str, Any] = {
            "site": site,
            "dataset": ds,
            "scenario": scen,
            "access": access,
            "jobs": len(rs),
        }
        for step in ("setup", "stage_in", "processing", "stage_out"):
            vals = [float(r[f"{step}_s"]) for r in rs if r[f"{step}_s"] != ""]
            entry[step] = (min(vals), max(vals)) if vals else None
        out.append(entry)
    return out


def comparison(cells: list[Any], path: Path) -> Path | None:
    """NEW/BASE throughput ratio per cell with its 95 % bootstrap interval, coloured by verdict."""
    if not cells:
        return None
    colours = {"worse": "tab:red", "better": "tab:green", "same": "tab:gray", "lost": "black"}
    fig = Figure(figsize=(7, 1.5 + 0.35 * len(cells)))
    ax = fig.subplots()
    for y, c in enumerate(cells):
        err = [[max(c.ratio - c.low, 0.0)], [max(c.high - c.ratio, 0.0)]]
        ax.errorbar([c.ratio], [y], xerr=err, fmt="o", color=colours.get(c.verdict, "tab:blue"), capsize=3)
    ax.axvline(1.0, color="black", lw=0.8)
    ax.set_yticks(range(len(cells)), [f"{c.label} ({c.verdict})" for c in cells], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("throughput NEW / BASE (median, 95 % bootstrap interval)")
    ax.set_title("Comparison with the baseline")
    ax.grid(alpha=0.3, axis="x")
    return _save(fig, path)
