"""The campaign's HTML report: figures (embedded PNG), cells with failures marked, tables (the
bottleneck verdict of every job among them)."""

from __future__ import annotations

import base64
import datetime as dt
import shutil
from collections import defaultdict
from pathlib import Path

import jinja2

from afkit.atomic import write_atomic
from afkit.campaign import cells, figures, payload_table
from afkit.campaign.aggregate import SKEW_GOAL_S, wave_skews
from afkit.campaign.extrapolate import parse_rate, plan
from afkit.campaign.rows import IntervalRow, JobRow, read_intervals, read_jobs
from afkit.campaign.scaling import WavePoint, best_wave, scaling_series
from afkit.paths import workflow_files


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def cell_table(rows: list[JobRow]) -> list[dict[str, object]]:
    """The Cells table: one row per cell (afkit.campaign.cells: every swept parameter and every
    fixed one that differs), in sweep order. ``keys``: {label: value} of the table's key columns
    (those always shown and those whose values differ among the cells)."""
    groups: dict[cells.Cell, list[JobRow]] = defaultdict(list)
    for r in rows:
        groups[cells.cell_of(r)].append(r)
    shown = cells.columns(groups)
    out = []
    for key, rs in sorted(groups.items(), key=lambda kv: cells.sort_key(kv[0])):
        ok = [r for r in rs if r.status == "ok"]
        bad = [r for r in rs if r.status != "ok"]
        status = "ok" if not bad else ("missing" if all(r.status == "missing" for r in bad) else "failed")
        named = cells.named(key)
        cell: dict[str, object] = dict(named)
        cell.update(
            keys={k.label: k.show(named[k.column]) for k in shown},
            status=status,
            label=f"{len(ok)}/{len(rs)} ok" if bad else "ok",
            repetitions=_repetitions(ok, rs),
            mbps=f"{_mean([r.throughput_MBps or 0.0 for r in ok]):.2f}" if ok else "",
            eps=f"{_mean([r.events_per_s or 0.0 for r in ok]):.1f}" if ok else "",
            error=bad[0].error if bad else "",
        )
        out.append(cell)
    return out


def image(rows: list[JobRow]) -> dict[str, str]:
    """The report header's image: the campaign's image as given (``image_ref``: the SIF file, the
    oras:// reference, build TAG), its sha256 and tag. Tables from before ``image_ref`` name the
    SIF the jobs ran when they all ran the same file, else say where each job's is. Never one
    worker's copy for the campaign's: a worker that pulled the image itself records its own path."""
    ran = [r for r in rows if r.status != "missing"] or rows

    def values(name: str) -> list[str]:
        return sorted({v for r in ran if (v := str(getattr(r, name)))})

    refs, paths = values("image_ref"), values("image_path")
    if refs:
        ref = ", ".join(refs)
    elif len(paths) == 1:
        ref = paths[0]
    else:
        ref = "(not recorded; the jobs' own copies are in jobs.csv, column image_path)" if paths else ""
    return {"ref": ref, "sha256": ", ".join(values("image_sha256")), "tag": ", ".join(values("image_tag"))}


def _repetitions(ok: list[JobRow], rows: list[JobRow]) -> str:
    """'N' (every repetition has a successful job) or 'N of M'."""
    done, ran = ({r.repetition for r in rs} for rs in (ok, rows))
    return str(len(done)) if len(done) == len(ran) else f"{len(done)} of {len(ran)}"


# what one point of each grouping's series is (the report's table header and texts)
GROUPING_LABELS: dict[str, str] = {
    "target": "storage target",
    "server": "server",
    "all": "all storage targets",
}


def extrapolation(points: list[WavePoint], target: str) -> str:
    if not points:
        return ""
    best = best_wave(points)
    p = plan(parse_rate(target), best.per_job, best.per_server)
    servers = "one server" if best.servers == 1 else f"{best.servers} servers"
    return (
        f"From the wave with the highest aggregate throughput ({best.concurrent} concurrent jobs): "
        f"{p.describe()} (per-server rate = that wave's aggregate / the servers its jobs read from, "
        f"{servers})."
    )


def bottlenecks(rows: list[JobRow]) -> list[dict[str, object]]:
    """The jobs that ran, with their verdict ('unknown' in tables written before there was one)."""
    return [_verdict_line(r) for r in rows if r.status != "missing"]


def _verdict_line(r: JobRow) -> dict[str, object]:
    mbps = "" if r.throughput_MBps is None else r.throughput_MBps  # a failed job: an empty cell
    return {"bench": r.bench, "id": r.id, "site": r.site, "scenario": r.scenario, "access": r.access,
            "clients": r.clients, "throughput_MBps": mbps, "bottleneck": r.bottleneck or "unknown",
            "bottleneck_reason": r.bottleneck_reason}  # fmt: skip


def compare_section(out_dir: Path) -> dict[str, object] | None:
    """``afkit campaign compare``'s result beside the report (compare.json, compare.png), if any."""
    from afkit.campaign.compare import load_section

    section = load_section(out_dir)
    png = out_dir / "compare.png"
    if section is not None:
        section["figure"] = base64.b64encode(png.read_bytes()).decode() if png.is_file() else ""
    return section


def render(
    rows: list[JobRow],
    intervals: list[IntervalRow],
    out_dir: Path,
    *,
    target: str = "10PB/24h",
    first_window: float = 60.0,
    grouping: str = "target",
    figures_dir: Path | None = None,
) -> Path:
    """Write OUT_DIR/report.html (and the figure PNGs beside it); return the HTML path.

    GROUPING: the train-scaling series, per storage ``target``, per ``server`` or ``all``
    (afkit.campaign.scaling). FIGURES_DIR (default OUT_DIR/figures): a copy of exactly the figures
    made here, the workflow's report() directory for ``snakemake --report``, whoever made the report
    (the workflow's rule, ``afkit campaign report``, ``afkit campaign compare``). ROWS and
    INTERVALS: the tables read back typed (afkit.campaign.rows; :func:`render_tables` reads them)."""
    points = scaling_series(rows, intervals, first_window=first_window, grouping=grouping)
    out_dir.mkdir(parents=True, exist_ok=True)
    made = [
        ("Read throughput vs time per scenario",
         figures.rate_vs_time(rows, intervals, out_dir / "rate_vs_time.png")),
        ("Read throughput vs clients", figures.vs_clients(rows, out_dir / "read_vs_clients.png", "read")),
        ("Analysis throughput and event rate vs clients",
         figures.vs_clients(rows, out_dir / "analysis_vs_clients.png", "analysis")),
        ("Throughput vs concurrent jobs", figures.train_scaling(points, out_dir / "train_scaling.png")),
    ]  # fmt: skip
    figures_dir = figures_dir or out_dir / "figures"
    figures_dir.mkdir(parents=True, exist_ok=True)
    names = {made_path.name for _, made_path in made if made_path}
    for stale in figures_dir.glob("*.png"):
        if stale.name not in names:
            stale.unlink()  # a figure an earlier report had and this one has not
    for _, made_path in made:
        if made_path:
            shutil.copy2(made_path, figures_dir / made_path.name)
    figs = [
        {"title": title, "data": base64.b64encode(path.read_bytes()).decode()} for title, path in made if path
    ]
    comparison = compare_section(out_dir)
    first = next((r for r in rows if r.status == "ok"), rows[0] if rows else JobRow())
    counts = {s: sum(1 for r in rows if r.status == s) for s in ("ok", "failed", "missing")}
    files = workflow_files()
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(files.report_templates),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )
    html = env.get_template(files.report_template).render(
        campaign=first.campaign,
        hash=first.campaign_hash,
        image=image(rows),
        counts=counts,
        generated=dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        cells=cell_table(rows),
        figures=figs,
        scaling=points,
        grouping=grouping,
        grouping_label=GROUPING_LABELS[grouping],
        first_window=first_window,
        plan=extrapolation(points, target),
        steps=figures.step_ranges(rows),
        skews=wave_skews(rows),
        skew_goal=SKEW_GOAL_S,
        comparison=comparison,
        bottlenecks=bottlenecks(rows),
        payloads=payload_table.section(rows),
    )
    return write_atomic(out_dir / "report.html", html, mode=0o644)


def render_tables(
    jobs_csv: Path,
    intervals_csv: Path | None,
    out_dir: Path,
    *,
    target: str = "10PB/24h",
    first_window: float = 60.0,
    grouping: str = "target",
    figures_dir: Path | None = None,
) -> Path:
    """:func:`render` from the tables at JOBS_CSV and INTERVALS_CSV (none when absent or None),
    each read once as typed rows (afkit.campaign.rows)."""
    return render(read_jobs(jobs_csv), read_intervals(intervals_csv), out_dir, target=target,
                  first_window=first_window, grouping=grouping, figures_dir=figures_dir)  # fmt: skip
