"""Study fr-alpes: the job steps per (worker-node site, dataset site) pair and the claims judged on them.

The original's Tables 1 and 2 give, per input location, the range over every worker-node location
of three durations; afkit's are made the same way from its job records (successful jobs only):

- ``input_copy``: the ``stage_in`` step of a copy-mode job (its input copied to scratch);
- ``processing``: the ``processing`` step of a copy-mode job (reading the local copy);
- ``direct``: the ``processing`` step of a direct-mode job (reading the input where it is);
- ``busy_copy``: the ``stage_in`` of the busy benchmark's jobs (``TABLE-busy``: a wave of copies of
  the same pair released together on the same links, the original's other jobs on the WAN).

Tables are the benchmarks ``sim`` (Table 1, the small input) and ``reco`` (Table 2, the large
one). A job's dataset site is the storage its dataset is pinned to (``recipe.dataset_name``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from afkit.campaign.rows import JobRow
from afkit.study import criteria
from afkit.study.criteria import NOT_JUDGEABLE, Range, Verdict
from afkit.study.model import Claim, Study

TABLES = {"sim": 1, "reco": 2}
ACTIONS = ("input_copy", "processing", "direct")
LABEL = {
    "input_copy": "input copy",
    "processing": "processing",
    "direct": "direct access",
    "busy_copy": "input copy, with other copies on the links",
}
BUSY = "-busy"
ORIGINAL_LOCATIONS = ("lapp", "lpsc")
Pair = tuple[str, str]  # (worker-node site, dataset site)


@dataclass
class Steps:
    """Per table and action, the durations (s) of each (WN site, dataset site) pair's jobs."""

    durations: dict[str, dict[str, dict[Pair, list[float]]]] = field(default_factory=dict)
    failed: dict[str, int] = field(default_factory=dict)  # benchmark -> jobs not ok
    busy_jobs: int = 0  # jobs per busy wave

    def of(self, table: str, action: str) -> dict[Pair, list[float]]:
        return self.durations.get(table, {}).get(action, {})

    def ranges(self, table: str, action: str) -> dict[str, Range]:
        """Per dataset site, the range over every WN site's jobs (the original's cell)."""
        by_loc: dict[str, list[float]] = defaultdict(list)
        for (_, loc), vals in self.of(table, action).items():
            by_loc[loc] += vals
        return {loc: (min(v), max(v)) for loc, v in by_loc.items() if v}

    def all_of(self, table: str, action: str) -> list[float]:
        return [v for vals in self.of(table, action).values() for v in vals]


def data_site(dataset: str, storages: Sequence[str]) -> str:
    """The storage DATASET (``TEMPLATE-STORAGE``) is pinned to: the longest storage name it ends with."""
    ends = [s for s in storages if dataset.endswith(f"-{s}")]
    return max(ends, key=len) if ends else dataset


def measure(rows: Sequence[JobRow], storages: Sequence[str]) -> Steps:
    out = Steps()
    for r in rows:
        table = r.bench.removesuffix(BUSY)
        if table not in TABLES:
            continue
        if r.status != "ok":
            out.failed[r.bench] = out.failed.get(r.bench, 0) + 1
            continue
        pair = (r.site, data_site(r.dataset, storages))
        found: list[tuple[str, float | None]]
        if r.bench.endswith(BUSY):
            out.busy_jobs = max(out.busy_jobs, r.wave_size)
            found = [("busy_copy", r.stage_in_s)]
        elif r.access == "copy":
            found = [("input_copy", r.stage_in_s), ("processing", r.processing_s)]
        else:
            found = [("direct", r.processing_s)]
        for action, value in found:
            if value is not None:
                out.durations.setdefault(table, {}).setdefault(action, {}).setdefault(pair, []).append(value)
    return out


def original_ranges(study: Study, table: str, action: str) -> dict[str, Range]:
    """The original's cells of TABLE's ACTION row, per input location (LAPP, LPSC)."""
    out = {}
    for loc in ORIGINAL_LOCATIONS:
        o = study.original[f"{table}_{loc}_{action}"]
        out[loc.upper()] = (float(str(o["low"])), float(str(o["high"])))
    return out


def _spread_beyond_shift(c: dict[str, object], ranges: dict[str, dict[str, Range]]) -> Verdict:
    ratio = float(str(c["ratio_min"]))
    return criteria.all_of(
        {LABEL[a]: criteria.spread_beyond_shift(ranges[a], ratio_min=ratio) for a in ranges}
    )


def _shift_within_spread(c: dict[str, object], ranges: dict[str, dict[str, Range]]) -> Verdict:
    m, ref = str(c["measure"]), str(c["reference"])
    groups = {loc: (ranges[m][loc], ranges[ref][loc]) for loc in ranges[m] if loc in ranges[ref]}
    return criteria.shift_within_spread(groups, ratio_max=float(str(c["ratio_max"])))


def _benches(claim: Claim) -> set[str]:
    c = claim.criterion
    if claim.kind == "variation_ratio":
        return {str(c["large"]), str(c["small"]), f"{c['large']}{BUSY}", f"{c['small']}{BUSY}"}
    return {str(c["table"])}


def _judged(claim: Claim, steps: Steps | None, study: Study) -> Verdict:
    """CLAIM judged on STEPS (afkit's jobs) or, STEPS None, on the original's tables."""
    c = claim.criterion
    if claim.kind == "variation_ratio":
        large, small = str(c["large"]), str(c["small"])
        if steps is None:  # the original's cells: each low and high a copy it measured
            lg = [x for r in original_ranges(study, large, "input_copy").values() for x in r]
            sm = [x for r in original_ranges(study, small, "input_copy").values() for x in r]
        else:
            lg = steps.all_of(large, "input_copy") + steps.all_of(large, "busy_copy")
            sm = steps.all_of(small, "input_copy") + steps.all_of(small, "busy_copy")
        return criteria.variation_ratio(lg, sm, ratio_min=float(str(c["ratio_min"])))
    table = str(c["table"])
    listed = c.get("actions")
    actions = [str(a) for a in listed] if isinstance(listed, list) else []
    wanted = actions or [str(c["measure"]), str(c["reference"])]
    if steps is None:
        ranges = {a: original_ranges(study, table, a) for a in wanted}
    else:
        ranges = {a: steps.ranges(table, a) for a in wanted}
    if claim.kind == "spread_beyond_shift":
        return _spread_beyond_shift(c, ranges)
    if claim.kind == "shift_within_spread":
        return _shift_within_spread(c, ranges)
    return Verdict(NOT_JUDGEABLE, f"unknown criterion kind {claim.kind!r}", str(c))


def judge_original(study: Study) -> dict[str, Verdict]:
    """Each claim judged by its own criterion on the original's Tables 1 and 2."""
    return {claim.id: _judged(claim, None, study) for claim in study.claims}


def judge(study: Study, steps: Steps) -> dict[str, Verdict]:
    """Each claim's verdict on afkit's jobs, the original's tables judged by the same rule beside it;
    a claim whose benchmarks have failed jobs is not judged."""
    orig = judge_original(study)
    out: dict[str, Verdict] = {}
    for claim in study.claims:
        failed = {b: steps.failed[b] for b in sorted(_benches(claim)) if steps.failed.get(b)}
        v = _judged(claim, steps, study)
        if failed:
            v = Verdict(
                NOT_JUDGEABLE,
                ", ".join(f"{n} '{b}' jobs" for b, n in failed.items())
                + " did not succeed: no verdict on what was not measured "
                "(afkit campaign retry, then afkit study page)",
                v.criterion,
            )
        o = orig[claim.id]
        out[claim.id] = Verdict(
            v.status,
            f"{v.measured} [the original's tables by the same rule: {o.status}, {o.measured}]",
            v.criterion,
            v.values,
        )
    return out


def _cells(ranges: dict[str, Range], unit: str = "s") -> str:
    return ", ".join(f"{loc} {lo:.4g}-{hi:.4g} {unit}" for loc, (lo, hi) in ranges.items()) or "not measured"


def numbers(study: Study, steps: Steps) -> list[tuple[str, str, str, str]]:
    """(what, original, afkit, scale) rows of the page's numbers table: every cell of both tables."""
    rows: list[tuple[str, str, str, str]] = []
    for table, n in TABLES.items():
        for action in (*ACTIONS, "busy_copy"):
            mine = steps.ranges(table, action)
            what = f"Table {n}: {LABEL[action]}"
            if action == "busy_copy":
                what += f" ({steps.busy_jobs} at once)" if steps.busy_jobs else ""
                rows.append((what, "not measured apart (other jobs' traffic)", _cells(mine), ""))
                continue
            orig = original_ranges(study, table, action)
            scale = ""
            if mine:
                m_mid = sum(criteria.midpoint(r) for r in mine.values()) / len(mine)
                o_mid = sum(criteria.midpoint(r) for r in orig.values()) / len(orig)
                scale = f"midpoints x {m_mid / o_mid:.3g}"
            rows.append((what, _cells(orig), _cells(mine), scale))
    return rows


def pair_medians(steps: Steps, table: str, action: str) -> dict[Pair, float]:
    """Per (WN site, dataset site), the median of ACTION's durations (afkit's per-pair detail)."""
    import statistics

    return {pair: statistics.median(v) for pair, v in steps.of(table, action).items() if v}
