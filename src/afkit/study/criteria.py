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
- ``spread_beyond_shift``: ranges (low, high) per group (an input location): each group's spread
  (high - low) is at least ``ratio_min`` x the largest difference between its midpoint and another
  group's (the spread among worker nodes against the shift between locations).
- ``shift_within_spread``: per group a measured range and a reference range: the difference of
  their midpoints is less than ``ratio_max`` x the reference's spread.
- ``variation_ratio``: the largest / smallest of one set of durations is at least ``ratio_min`` x
  the largest / smallest of another.
- ``runtime_cut``: paired runtimes (default, tuned): 1 - median(tuned) / median(default) is at
  least ``cut_min``.
- ``share_below``: of a set of sizes, the share under ``bytes`` is at least ``share_min``.
- ``offset_bands``: reads (time, offset) over a file: the run is cut into ``windows`` equal spans
  of time; in each span with reads, the sorted offsets split into bands wherever two neighbours lie
  more than ``gap`` x the file's size apart; the median count over the spans is at most
  ``bands_max``.
- ``fewer_reads``: a count with against one without (a cache): their ratio is at most ``ratio_max``.
- ``all_of``: one verdict from several parts (fail if one fails, not judgeable if one is).
Standard library only.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

PASS, FAIL, NOT_JUDGEABLE = "pass", "fail", "not judgeable"
Point = tuple[float, float]
Range = tuple[float, float]  # (low, high)


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


def midpoint(r: Range) -> float:
    return (r[0] + r[1]) / 2


def spread(r: Range) -> float:
    return r[1] - r[0]


def _ratio(num: float, den: float) -> float:
    """NUM / DEN, with 0 / 0 = 0 and x / 0 = inf."""
    if den:
        return num / den
    return 0.0 if num == 0 else float("inf")


def spread_beyond_shift(groups: Mapping[str, Range], *, ratio_min: float) -> Verdict:
    crit = (
        f"per group, spread (high - low) ≥ {ratio_min} x the largest difference of its midpoint "
        "from another group's"
    )
    if len(groups) < 2:
        return Verdict(NOT_JUDGEABLE, f"{len(groups)} groups measured: need 2", crit)
    ratios = {}
    parts = []
    for name, r in groups.items():
        shift = max(abs(midpoint(r) - midpoint(o)) for n, o in groups.items() if n != name)
        ratios[name] = _ratio(spread(r), shift)
        parts.append(f"{name} {r[0]:.4g}-{r[1]:.4g} (spread {spread(r):.3g}, shift {shift:.3g})")
    worst = min(ratios.values())
    measured = ", ".join(parts) + f"; smallest spread / shift {worst:.2f}"
    return Verdict(PASS if worst >= ratio_min else FAIL, measured, crit, {"ratio": worst})


def shift_within_spread(groups: Mapping[str, tuple[Range, Range]], *, ratio_max: float) -> Verdict:
    """GROUPS: name → (the measured range, the reference range)."""
    crit = f"per group, |midpoint - the reference's midpoint| < {ratio_max} x the reference's spread"
    if not groups:
        return Verdict(NOT_JUDGEABLE, "no group measured", crit)
    ratios = {}
    parts = []
    for name, (r, ref) in groups.items():
        shift = abs(midpoint(r) - midpoint(ref))
        ratios[name] = _ratio(shift, spread(ref))
        parts.append(
            f"{name} {r[0]:.4g}-{r[1]:.4g} against {ref[0]:.4g}-{ref[1]:.4g} "
            f"(shift {shift:.3g}, spread {spread(ref):.3g})"
        )
    worst = max(ratios.values())
    ok = all(v < ratio_max for v in ratios.values())
    measured = ", ".join(parts) + f"; largest shift / spread {worst:.2f}"
    return Verdict(PASS if ok else FAIL, measured, crit, {"ratio": worst})


def variation_ratio(large: Sequence[float], small: Sequence[float], *, ratio_min: float) -> Verdict:
    crit = f"largest / smallest of the first ≥ {ratio_min} x largest / smallest of the second"
    for what, vals in (("first", large), ("second", small)):
        if len(vals) < 2 or min(vals) <= 0:
            return Verdict(NOT_JUDGEABLE, f"the {what} set has {len(vals)} positive values: need 2", crit)
    v_large, v_small = max(large) / min(large), max(small) / min(small)
    ratio = v_large / v_small
    measured = (
        f"{min(large):.4g}-{max(large):.4g} (x {v_large:.2f}) against {min(small):.4g}-{max(small):.4g} "
        f"(x {v_small:.2f}); ratio {ratio:.2f}"
    )
    values = {"ratio": ratio, "variation_large": v_large, "variation_small": v_small}
    return Verdict(PASS if ratio >= ratio_min else FAIL, measured, crit, values)


def runtime_cut(default: Sequence[float], tuned: Sequence[float], *, cut_min: float) -> Verdict:
    crit = f"1 - median(tuned) / median(default) ≥ {cut_min:.0%}"
    if not default or not tuned or min(*default, *tuned) <= 0:
        return Verdict(
            NOT_JUDGEABLE, f"{len(default)} default and {len(tuned)} tuned runs: need one each", crit
        )
    md, mt = statistics.median(default), statistics.median(tuned)
    cut = 1.0 - mt / md
    pairs = [1.0 - t / d for d, t in zip(default, tuned, strict=False)]
    measured = f"median {md:.4g} s -> {mt:.4g} s: cut {cut:.1%} over {len(default)} + {len(tuned)} runs" + (
        f" (per pair {min(pairs):.1%} to {max(pairs):.1%})" if len(pairs) > 1 else ""
    )
    values = {"cut": cut, "default_s": md, "tuned_s": mt}
    return Verdict(PASS if cut >= cut_min else FAIL, measured, crit, values)


def share_below(sizes: Sequence[float], *, limit: float, share_min: float) -> Verdict:
    crit = f"share of reads under {limit:g} bytes ≥ {share_min:.0%}"
    if not sizes:
        return Verdict(NOT_JUDGEABLE, "no reads recorded", crit)
    share = sum(s < limit for s in sizes) / len(sizes)
    median = float(statistics.median(sizes))
    measured = f"{share:.1%} of {len(sizes)} reads under {limit:g} bytes; median read {median:.0f} bytes"
    values = {"share": share, "reads": float(len(sizes)), "median_bytes": median}
    return Verdict(PASS if share >= share_min else FAIL, measured, crit, values)


def bands_per_window(reads: Sequence[Point], size: float, *, windows: int, gap: float) -> list[int]:
    """Per span of time with reads (READS: (time, offset), cut into WINDOWS equal spans), the number
    of offset bands: neighbours more than GAP x SIZE apart start a new one."""
    if not reads:
        return []
    t0, t1 = min(t for t, _ in reads), max(t for t, _ in reads)
    width = (t1 - t0) / windows or 1.0
    spans: dict[int, list[float]] = {}
    for t, off in reads:
        spans.setdefault(min(windows - 1, int((t - t0) / width)), []).append(off)
    counts = []
    for _k, offs in sorted(spans.items()):
        offs.sort()
        counts.append(1 + sum(1 for a, b in itertools.pairwise(offs) if b - a > gap * size))
    return counts


def offset_bands(
    reads: Sequence[Point], size: float, *, windows: int, gap: float, bands_max: float
) -> Verdict:
    crit = (
        f"median over {windows} spans of time of the offset bands (split at gaps > {gap:.0%} of the file) "
        f"≤ {bands_max:g}"
    )
    counts = bands_per_window(reads, size, windows=windows, gap=gap)
    if len(counts) < 2 or size <= 0:
        return Verdict(NOT_JUDGEABLE, f"reads in {len(counts)} spans of time: need 2", crit)
    med = statistics.median(counts)
    measured = f"bands per span {', '.join(map(str, counts))}: median {med:g}, at most {max(counts)}"
    return Verdict(
        PASS if med <= bands_max else FAIL, measured, crit, {"median_bands": med, "max_bands": max(counts)}
    )


def fewer_reads(with_: int, without: int, *, ratio_max: float) -> Verdict:
    crit = f"reads with / reads without ≤ {ratio_max:g}"
    if without <= 0:
        return Verdict(NOT_JUDGEABLE, "no reads recorded without the cache", crit)
    ratio = with_ / without
    measured = f"{with_} reads with, {without} without: ratio {ratio:.2f}"
    return Verdict(PASS if ratio <= ratio_max else FAIL, measured, crit, {"ratio": ratio})


def all_of(parts: Mapping[str, Verdict]) -> Verdict:
    """One verdict of PARTS (name → verdict): not judgeable if one is, else fail if one fails."""
    statuses = {v.status for v in parts.values()}
    status = NOT_JUDGEABLE if NOT_JUDGEABLE in statuses else FAIL if FAIL in statuses else PASS
    if not parts:
        status = NOT_JUDGEABLE
    measured = "; ".join(f"{n}: {v.status}, {v.measured}" for n, v in parts.items())
    crit = next(iter(parts.values())).criterion + f" (each of {', '.join(parts)})" if parts else ""
    values = {f"{n}_{k}": x for n, v in parts.items() for k, x in v.values.items()}
    return Verdict(status, measured, crit, values)
