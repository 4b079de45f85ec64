"""The shape criteria a study's claims are judged by: each takes measured points and the claim's
fixed thresholds and returns a verdict (pass / fail / not judgeable) with the measured values.

- ``knee``: a series of (concurrent jobs, rate) rises linearly, then plateaus. The breakpoint is the
  one whose two-piece fit (a line through the points up to it, a constant after it) leaves the
  least squared error, with at least three points on the line and two on the plateau. Passes when
  the line's R² ≥ ``r2_min``, the plateau is flat (its largest / smallest point ≤ ``flat_max``) and
  really bends (its level ≤ ``bend_max`` x the line's value at the last point).
- ``linear``: the whole series rises linearly: R² ≥ ``r2_min`` of a line, and the last point
  reaches ≥ ``tail_min`` x the line through the origin fitted on the first half (no plateau).
- ``agree``: values (one per series) agree: largest / smallest ≤ ``ratio_max``.
Standard library only.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

PASS, FAIL, NOT_JUDGEABLE = "pass", "fail", "not judgeable"
Point = tuple[float, float]


@dataclass(frozen=True)
class Verdict:
    status: str  # pass | fail | not judgeable
    measured: str  # the measured values beside the criterion, one line
    criterion: str  # the criterion with its thresholds
    values: dict[str, float] = field(default_factory=dict)


def r_squared(points: Sequence[Point]) -> tuple[float, float, float]:
    """(R², slope, intercept) of the least-squares line through POINTS (≥ 2 with distinct x)."""
    xs = [p[0] for p in points]
    ys = [p[1] for p in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    sxy = sum((x - mx) * (y - my) for x, y in points)
    slope = sxy / sxx if sxx else 0.0
    icpt = my - slope * mx
    ss_tot = sum((y - my) ** 2 for y in ys)
    ss_res = sum((y - (slope * x + icpt)) ** 2 for x, y in points)
    return (1.0 - ss_res / ss_tot if ss_tot else 1.0), slope, icpt


@dataclass(frozen=True)
class Knee:
    index: int  # last point on the line
    r2: float
    slope: float
    intercept: float
    plateau: float  # mean of the points after the knee
    flat: float  # largest / smallest plateau point
    bend: float  # plateau / the line's value at the last x


def find_knee(points: Sequence[Point], *, min_line: int = 3, min_flat: int = 2) -> Knee | None:
    """The two-piece fit of POINTS (sorted by x) with the least squared error; None when there are
    fewer than MIN_LINE + MIN_FLAT points."""
    pts = sorted(points)
    best: tuple[float, Knee] | None = None
    for k in range(min_line - 1, len(pts) - min_flat):
        line, flat = pts[: k + 1], pts[k + 1 :]
        r2, slope, icpt = r_squared(line)
        level = statistics.fmean(y for _, y in flat)
        sse = sum((y - (slope * x + icpt)) ** 2 for x, y in line) + sum((y - level) ** 2 for _, y in flat)
        lo = min(y for _, y in flat)
        at_last = slope * pts[-1][0] + icpt
        knee = Knee(
            k,
            r2,
            slope,
            icpt,
            level,
            (max(y for _, y in flat) / lo) if lo > 0 else float("inf"),
            level / at_last if at_last > 0 else float("inf"),
        )
        if best is None or sse < best[0]:
            best = (sse, knee)
    return best[1] if best else None


def knee(points: Sequence[Point], *, r2_min: float, flat_max: float, bend_max: float) -> Verdict:
    crit = f"R² ≥ {r2_min} below the knee, plateau max/min ≤ {flat_max}, plateau ≤ {bend_max} x the line"
    pts = sorted(points)
    k = find_knee(pts)
    if k is None:
        return Verdict(
            NOT_JUDGEABLE, f"{len(pts)} points: a knee needs at least 5 (3 on the line, 2 after)", crit
        )
    ok = k.r2 >= r2_min and k.flat <= flat_max and k.bend <= bend_max
    x_knee = pts[k.index][0]
    measured = (
        f"knee at {x_knee:g} jobs; R² {k.r2:.3f} over {k.index + 1} points; plateau {k.plateau:.3g} "
        f"(max/min {k.flat:.2f}, {k.bend:.2f} x the line at {pts[-1][0]:g} jobs)"
    )
    values = {
        "knee_jobs": x_knee,
        "r2": k.r2,
        "plateau": k.plateau,
        "flat": k.flat,
        "bend": k.bend,
        "slope": k.slope,
        "intercept": k.intercept,
    }
    return Verdict(PASS if ok else FAIL, measured, crit, values)


def linear(points: Sequence[Point], *, r2_min: float, tail_min: float) -> Verdict:
    crit = f"R² ≥ {r2_min} over the whole range, last point ≥ {tail_min} x the first half's line"
    pts = sorted(points)
    if len({x for x, _ in pts}) < 3:
        return Verdict(
            NOT_JUDGEABLE, f"{len(pts)} points at {len({x for x, _ in pts})} x values: need 3", crit
        )
    r2, slope, icpt = r_squared(pts)
    half = pts[: max(2, (len(pts) + 1) // 2)]
    through0 = sum(x * y for x, y in half) / sum(x * x for x, _ in half)
    tail = pts[-1][1] / (through0 * pts[-1][0]) if through0 > 0 else 0.0
    ok = r2 >= r2_min and tail >= tail_min
    measured = f"R² {r2:.3f}; last point {tail:.2f} x the first half's line; slope {slope:.3g} per job"
    values = {"r2": r2, "tail": tail, "slope": slope, "intercept": icpt}
    return Verdict(PASS if ok else FAIL, measured, crit, values)


def agree(values: dict[str, float], *, ratio_max: float) -> Verdict:
    crit = f"largest / smallest ≤ {ratio_max}"
    have = {k: v for k, v in values.items() if v > 0}
    if len(have) < 2:
        return Verdict(NOT_JUDGEABLE, f"{len(have)} series measured: need 2", crit)
    ratio = max(have.values()) / min(have.values())
    measured = ", ".join(f"{k} {v:.3g}" for k, v in have.items()) + f"; ratio {ratio:.2f}"
    return Verdict(PASS if ratio <= ratio_max else FAIL, measured, crit, {"ratio": ratio})


def medians(reps: Sequence[Sequence[Point]]) -> list[Point]:
    """Per x, the median over the repetitions REPS of y (the points a criterion is judged on)."""
    by_x: dict[float, list[float]] = {}
    for rep in reps:
        for x, y in rep:
            by_x.setdefault(x, []).append(y)
    return [(x, statistics.median(ys)) for x, ys in sorted(by_x.items())]


def with_spread(verdict: Verdict, per_rep: Sequence[Verdict], key: str) -> Verdict:
    """VERDICT (judged on the repetitions' medians) with the spread of VALUES[KEY] over PER_REP, the
    same criterion judged on each repetition alone."""
    vals = [v.values[key] for v in per_rep if v.status != NOT_JUDGEABLE and key in v.values]
    if len(vals) < 2:
        return verdict
    passed = sum(v.status == PASS for v in per_rep)
    spread = (
        f"; {key} per repetition {min(vals):.3g}-{max(vals):.3g}, "
        f"{passed} of {len(per_rep)} repetitions pass alone"
    )
    return Verdict(verdict.status, verdict.measured + spread, verdict.criterion, verdict.values)
