"""Study gsi-trains: the analysis-train scaling series and the claims judged on them.

The series are afkit's train scaling (afkit.campaign.scaling, the original's method: jobs started
within the first minute, evaluated when 98 % of them have finished; and all jobs): one benchmark
per part of the original, ``target``, ``server`` and ``all`` (the reads of ``all`` spread evenly
over the servers). A point is (concurrent jobs, MB/s) per wave and repetition.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from afkit.campaign import extrapolate, scaling
from afkit.campaign.rows import IntervalRow, JobRow
from afkit.study import criteria
from afkit.study.criteria import NOT_JUDGEABLE, PASS, Point, Verdict
from afkit.study.model import Claim, Study

SERIES = ("target", "server", "all")
MB = 1e6


@dataclass
class TrainData:
    """Per series (benchmark) and repetition, the points (jobs, MB/s) of the 98 % and all-jobs rates."""

    p98: dict[str, dict[int, list[Point]]] = field(default_factory=dict)
    pall: dict[str, dict[int, list[Point]]] = field(default_factory=dict)
    servers: dict[str, int] = field(default_factory=dict)  # series -> servers its jobs read from
    failed: dict[str, int] = field(default_factory=dict)  # series -> jobs not ok

    def reps(self, series: str) -> list[list[Point]]:
        return [pts for _, pts in sorted(self.p98.get(series, {}).items())]

    def median_points(self, series: str) -> list[Point]:
        return criteria.medians(self.reps(series))


def measure(rows: Sequence[JobRow], intervals: Sequence[IntervalRow]) -> TrainData:
    data = TrainData()
    for series in SERIES:
        mine = [r for r in rows if r.bench == series and r.type == "train"]
        if not mine:
            continue
        data.failed[series] = sum(r.status != "ok" for r in mine)
        data.servers[series] = len({scaling.server_of(r.url) for r in mine if r.url})
        by_rep: dict[int, list[JobRow]] = {}
        for r in mine:
            by_rep.setdefault(r.repetition or 0, []).append(r)
        for rep, jobs in by_rep.items():
            for p in scaling.scaling_series(jobs, intervals, grouping="all"):
                data.p98.setdefault(series, {}).setdefault(rep, []).append(
                    (p.concurrent, p.throughput_98 / MB)
                )
                data.pall.setdefault(series, {}).setdefault(rep, []).append(
                    (p.concurrent, p.throughput_all / MB)
                )
    return data


def per_job_rate(points: Sequence[Point], knee_jobs: float | None) -> float:
    """The median of rate / jobs over the points up to the knee (all points when there is none)."""
    below = [(x, y) for x, y in points if knee_jobs is None or x <= knee_jobs]
    return statistics.median(y / x for x, y in below) if below else 0.0


def _shape(series: str, data: TrainData, claim: Claim) -> Verdict:
    c = claim.criterion
    reps = data.reps(series)
    if not reps:
        return Verdict(
            NOT_JUDGEABLE, f"no '{series}' jobs ran (the role is not filled or no job succeeded)", str(c)
        )
    if data.failed.get(series):
        return Verdict(
            NOT_JUDGEABLE,
            f"{data.failed[series]} '{series}' jobs did not succeed: no verdict on "
            "what was not measured (afkit campaign retry, then afkit study page)",
            str(c),
        )
    kind = claim.kind
    if kind == "knee":
        opts = {
            "r2_min": float(str(c["r2_min"])),
            "flat_max": float(str(c["flat_max"])),
            "bend_max": float(str(c["bend_max"])),
        }
        pooled = criteria.knee(data.median_points(series), **opts)
        return criteria.with_spread(pooled, [criteria.knee(r, **opts) for r in reps], "r2")
    opts_l = {"r2_min": float(str(c["r2_min"])), "tail_min": float(str(c["tail_min"]))}
    pooled = criteria.linear(data.median_points(series), **opts_l)
    return criteria.with_spread(pooled, [criteria.linear(r, **opts_l) for r in reps], "r2")


def per_job_rates(data: TrainData, verdicts: dict[str, Verdict]) -> dict[str, float]:
    """Per series, the per-job MB/s below its knee (the knee claims' knee; no knee for ``all``)."""
    out = {}
    for series in SERIES:
        pts = data.median_points(series)
        if not pts:
            continue
        v = verdicts.get(f"{series}-knee")
        knee = v.values.get("knee_jobs") if v is not None and v.status != NOT_JUDGEABLE else None
        out[series] = per_job_rate(pts, knee)
    return out


def _extrapolation(study: Study, claim: Claim, data: TrainData, verdicts: dict[str, Verdict]) -> Verdict:
    goal = extrapolate.parse_rate(f"{study.value('goal'):g}PB/24h")
    formula = "jobs = ceil(goal / per-job rate), servers = ceil(goal / per-server rate)"
    if claim.criterion.get("source") == "original":
        tol = float(str(claim.criterion.get("tolerance", 0.15)))
        per_job = study.value("all_max") / float(str(study.original["all_max"]["at_jobs"]))
        per_server = study.value("server_max")
        p = extrapolate.plan(goal, per_job * MB, per_server * MB)
        jobs_dev = p.jobs / study.value("stated_jobs") - 1
        srv_dev = (p.servers or 0) / study.value("stated_servers") - 1
        ok = abs(jobs_dev) <= tol and abs(srv_dev) <= tol
        alt = math.ceil(goal / (study.value("all_max") * MB / study.value("servers_all")))
        measured = (
            f"goal {goal / 1e9:.1f} GB/s; {p.jobs} jobs at {per_job:g} MB/s per job "
            f"({jobs_dev:+.1%} against the stated {study.value('stated_jobs'):g}); {p.servers} servers "
            f"at one OSS's plateau {per_server:g} MB/s ({srv_dev:+.1%} against the stated "
            f"{study.value('stated_servers'):g}: the original rounds down; from the 30-OSS run's "
            f"{study.value('all_max') / study.value('servers_all'):.0f} MB/s per OSS, which were not "
            f"at their plateau, it would be {alt})"
        )
        return Verdict(
            PASS if ok else "fail",
            measured,
            f"{formula}; each within ±{tol:.0%} of the statement",
            {"jobs": p.jobs, "servers": float(p.servers or 0)},
        )
    rates = per_job_rates(data, verdicts)
    job_rate = rates.get("all") or rates.get("server")
    knee = verdicts.get("server-knee")
    server_rate = knee.values.get("plateau") if knee is not None and knee.status != NOT_JUDGEABLE else None
    if not job_rate or not server_rate:
        return Verdict(NOT_JUDGEABLE, "needs a measured per-job rate and one server's plateau", formula)
    p = extrapolate.plan(goal, job_rate * MB, server_rate * MB)
    measured = (
        f"{p.jobs} jobs at {job_rate:.3g} MB/s per job, {p.servers} servers at {server_rate:.3g} MB/s "
        f"per server (this run's scaled rates: the counts are for the box's jobs and servers)"
    )
    return Verdict(PASS, measured, formula, {"jobs": p.jobs, "servers": float(p.servers or 0)})


def judge(study: Study, data: TrainData) -> dict[str, Verdict]:
    """Each claim's verdict, in the study's order."""
    out: dict[str, Verdict] = {}
    for claim in study.claims:
        if claim.kind in ("knee", "linear"):
            out[claim.id] = _shape(str(claim.criterion["series"]), data, claim)
    for claim in study.claims:
        if claim.kind == "agree":
            rates = per_job_rates(data, out)
            wanted = {s: rates[s] for s in claim.criterion["series"] if s in rates}  # type: ignore[attr-defined]
            out[claim.id] = criteria.agree(wanted, ratio_max=float(str(claim.criterion["ratio_max"])))
        elif claim.kind == "extrapolation":
            out[claim.id] = _extrapolation(study, claim, data, out)
    return {c.id: out[c.id] for c in study.claims if c.id in out}


def numbers(study: Study, data: TrainData, verdicts: dict[str, Verdict]) -> list[tuple[str, str, str, str]]:
    """(what, original, afkit, scale) rows of the page's numbers table."""
    rows: list[tuple[str, str, str, str]] = []
    for series, key in (("target", "target_max"), ("server", "server_max")):
        o = study.original[key]
        v = verdicts.get(f"{series}-knee")
        if v is not None and "plateau" in v.values:
            mine = f"{v.values['plateau']:.3g} MB/s from {v.values['knee_jobs']:g} jobs"
            scale = f"rate x {v.values['plateau'] / float(str(o['value'])):.3g}"
        else:
            mine, scale = "not measured" if not data.reps(series) else "no knee found", ""
        rows.append(
            (
                f"{CAPTION_SHORT[series]}: plateau",
                f"{o['value']} {o['unit']} at {o['at_jobs']} jobs",
                mine,
                scale,
            )
        )
    pts = data.median_points("all")
    o = study.original["all_max"]
    if pts:
        x, y = pts[-1]
        rows.append(
            (
                "all servers: highest point",
                f"{o['value']} {o['unit']} at {o['at_jobs']} jobs",
                f"{y:.3g} MB/s at {x:g} jobs over {data.servers.get('all', 0)} servers",
                f"jobs x {x / float(str(o['at_jobs'])):.3g}",
            )
        )
    rates = per_job_rates(data, verdicts)
    for series in SERIES:
        o = study.original[f"per_job_{series}"]
        if series in rates:
            rows.append(
                (
                    f"{CAPTION_SHORT[series]}: MB/s per job below the knee",
                    f"{o['value']} {o['unit']}",
                    f"{rates[series]:.3g} MB/s",
                    f"x {rates[series] / float(str(o['value'])):.3g}",
                )
            )
    return rows


CAPTION_SHORT = {"target": "one target", "server": "one server", "all": "all servers"}
