"""The gsi-trains study's figures, in the original's axes and units (MB/s against concurrent jobs).

Figures 4 and 5 of the original show the train's rate against its concurrent jobs, blue squares
at 98 % of the first minute's jobs finished and red stars over all jobs. Each series is drawn so
here from afkit's points (every repetition), with the knee fit of its claim. The shape figure sets
afkit's series beside the original's stated maxima, both divided by their own knee (jobs) and
plateau (MB/s): shapes, never absolute rates, are compared across hardware.
"""

from __future__ import annotations

from pathlib import Path

from matplotlib.figure import Figure

from afkit.campaign.figures import legend, new_figure, save
from afkit.study.criteria import Verdict
from afkit.study.model import Study
from afkit.study.trains import SERIES, TrainData

BLUE, RED = "#1f4e9c", "#c0392b"
CAPTION = {"target": "one storage target", "server": "one server", "all": "all servers, reads spread evenly"}


def series_figure(series: str, data: TrainData, verdict: Verdict | None, where: str) -> Figure | None:
    reps = data.p98.get(series)
    if not reps:
        return None
    fig = new_figure(6.4, 4.2)
    ax = fig.add_subplot()
    for i, (rep, pts) in enumerate(sorted(reps.items())):
        ax.plot(
            [p[0] for p in pts],
            [p[1] for p in pts],
            "s",
            color=BLUE,
            alpha=0.8,
            label="98 % of the first minute's jobs finished" if i == 0 else None,
        )
        alls = data.pall.get(series, {}).get(rep, [])
        ax.plot(
            [p[0] for p in alls],
            [p[1] for p in alls],
            "*",
            color=RED,
            markersize=9,
            alpha=0.8,
            label="all jobs" if i == 0 else None,
        )
    if verdict is not None and "slope" in verdict.values:
        xs = sorted({p[0] for pts in reps.values() for p in pts})
        knee = verdict.values.get("knee_jobs", xs[-1])
        slope = verdict.values["slope"]
        icpt = verdict.values.get("intercept", 0.0)
        line = [x for x in xs if x <= knee]
        ax.plot(
            [0, *line],
            [icpt, *(slope * x + icpt for x in line)],
            "--",
            color="grey",
            linewidth=1,
            label=f"fit: {slope:.3g} MB/s per job",
        )
        if "plateau" in verdict.values:
            ax.axhline(
                verdict.values["plateau"],
                color="grey",
                linestyle=":",
                linewidth=1,
                label=f"plateau {verdict.values['plateau']:.3g} MB/s",
            )
    ax.set_xlabel("concurrent jobs")
    ax.set_ylabel("analysis throughput (MB/s)")
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    ax.set_title(f"{CAPTION.get(series, series)} ({where})", fontsize=10)
    legend(ax)
    return fig


def shape_figure(study: Study, data: TrainData, verdicts: dict[str, Verdict]) -> Figure | None:
    """Rate / plateau against jobs / knee jobs: afkit's knee series beside the original's maxima."""
    fig = new_figure(6.4, 4.2)
    ax = fig.add_subplot()
    drawn = False
    for series in ("target", "server"):
        v = verdicts.get(f"{series}-knee")
        pts = data.median_points(series)
        if not pts or v is None or "knee_jobs" not in v.values or not v.values.get("plateau"):
            continue
        k, top = v.values["knee_jobs"], v.values["plateau"]
        ax.plot([x / k for x, _ in pts], [y / top for _, y in pts], "o-", label=f"afkit: {CAPTION[series]}")
        drawn = True
    for key, label in (("target_max", "original: one OST"), ("server_max", "original: one OSS")):
        o = study.original[key]
        ax.plot([1.0], [1.0], "x", markersize=10, label=f"{label} ({o['value']} MB/s at {o['at_jobs']} jobs)")
    if not drawn:
        return None
    ax.plot([0, 1, 2.5], [0, 1, 1], ":", color="grey", label="linear, then flat")
    ax.set_xlabel("concurrent jobs / jobs at the knee")
    ax.set_ylabel("throughput / plateau")
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    ax.set_title("the shape, each divided by its own knee and plateau", fontsize=10)
    legend(ax)
    return fig


def per_job_figure(study: Study, rates: dict[str, float]) -> Figure | None:
    """Per-job MB/s below the knee: afkit's per series (left) and the original's (right)."""
    if not rates:
        return None
    fig = new_figure(7.2, 3.6)
    left, right = fig.subplots(1, 2)
    left.bar(list(rates), list(rates.values()), color=BLUE)
    left.set_ylabel("MB/s per job")
    left.set_title("afkit (this run)", fontsize=10)
    orig = {s: study.value(f"per_job_{s}") for s in SERIES}
    right.bar(list(orig), list(orig.values()), color="grey")
    right.set_title("original", fontsize=10)
    return fig


def write_all(
    study: Study,
    data: TrainData,
    verdicts: dict[str, Verdict],
    rates: dict[str, float],
    out: Path,
    where: str,
) -> list[tuple[str, Path]]:
    """(caption, path) of every figure written into OUT."""
    made: list[tuple[str, Path]] = []
    for series, fig_id in (("server", "fig4"), ("all", "fig5"), ("target", "text-ost")):
        v = verdicts.get(f"{series}-knee") or verdicts.get(f"{series}-linear")
        path = save(series_figure(series, data, v, where), out / f"{fig_id}-{series}.png")
        if path:
            made.append((f"{fig_id}: {CAPTION[series]}, MB/s against concurrent jobs", path))
    path = save(shape_figure(study, data, verdicts), out / "shape.png")
    if path:
        made.append(
            ("shape: afkit's knee beside the original's, each divided by its own knee and plateau", path)
        )
    path = save(per_job_figure(study, rates), out / "per-job.png")
    if path:
        made.append(("per-job MB/s below the knee: afkit and the original", path))
    return made
