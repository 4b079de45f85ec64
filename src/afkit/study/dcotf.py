"""Study dcotf-xcache: the measures of the micro and analysis benchmarks and the claims judged on them.

Measures (MB/s unless named otherwise), each from the jobs that succeeded:

- micro: a wave's rate is the sum of its jobs' rates (its jobs, one per client node, ran together);
  ``micro_SCEN_warm`` is the highest such rate of scenario SCEN at stride 0 in a warm repetition
  (not the scenario's first, which fills the cache); ``micro_origin_max`` the highest no-cache rate;
  ``micro_stride0_per_client`` / ``micro_random_per_client`` the median per-client rate of the warm
  waves at stride 0 / at a random stride.
- analysis (jobs of the ``aod`` and ``esd`` benchmarks, ROOT's reads): ``analysis_SCEN_warm`` the
  median over the two datasets of the scenario's rate at the most clients, warm;
  ``analysis_per_client_1`` / ``analysis_per_client_max_clients`` the median per-client rate with
  one client / with the most clients; ``esd_mbps_1``, ``aod_mbps_1``, ``esd_events_1``,
  ``aod_events_1`` the per-client Mbit/s and events/s with one client (median over the warm
  scenarios).
- ``wan_rate``: the slower of the two WAN links a no-cache read crosses (the box's link file; at a
  user's sites the ``wan_rate`` parameter).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence

from afkit.campaign.rows import JobRow
from afkit.study.criteria import FAIL, NOT_JUDGEABLE, PASS, Verdict, agree
from afkit.study.model import Claim, Study

CACHES = ("xcache", "xcache-dca", "dcotf")
SHORT = {"xcache": "xcache", "xcache-dca": "dca", "dcotf": "dcotf", "origin": "origin"}
Measures = dict[str, float]


def _warm(rows: Sequence[JobRow]) -> list[JobRow]:
    """The jobs of warm repetitions: every repetition but the first of a cache scenario, whose
    first read fills the cache (no-cache jobs are all kept)."""
    return [r for r in rows if r.scenario == "origin" or (r.repetition or 0) > 0]


def _waves(rows: Sequence[JobRow]) -> dict[str, list[JobRow]]:
    out: dict[str, list[JobRow]] = defaultdict(list)
    for r in rows:
        out[r.wave or r.id].append(r)
    return out


def _rate(r: JobRow) -> float:
    return r.throughput_MBps or 0.0


def micro(rows: Sequence[JobRow]) -> Measures:
    ok = [r for r in rows if r.bench == "micro" and r.status == "ok"]
    m: Measures = {}
    for scen in ("origin", *CACHES):
        waves = _waves([r for r in ok if r.scenario == scen])
        sums = [sum(_rate(r) for r in js) for js in waves.values()]
        warm = _waves([r for r in _warm(ok) if r.scenario == scen and r.stride == "0"])
        warm_sums = [sum(_rate(r) for r in js) for js in warm.values()]
        if scen == "origin" and sums:
            m["micro_origin_max"] = max(sums)
        if warm_sums:
            m[f"micro_{SHORT[scen]}_warm"] = max(warm_sums)
    # per client at the same sweep points (scenario, nodes, repetition) with both strides
    per: dict[tuple[str, int, int], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in _warm(ok):
        if r.scenario in CACHES:
            per[(r.scenario, r.wave_size, r.repetition or 0)][r.stride].append(_rate(r) / max(r.clients, 1))
    both = [v for v in per.values() if v.get("0") and v.get("random")]
    if both:
        m["micro_stride0_per_client"] = statistics.median(x for v in both for x in v["0"])
        m["micro_random_per_client"] = statistics.median(x for v in both for x in v["random"])
    return m


def analysis(rows: Sequence[JobRow]) -> Measures:
    ok = [r for r in _warm(rows) if r.bench in ("aod", "esd") and r.status == "ok"]
    m: Measures = {}
    if not ok:
        return m
    most = max(r.clients for r in ok)
    for scen in ("origin", *CACHES):
        at_most = [_rate(r) for r in ok if r.scenario == scen and r.clients == most]
        if at_most:
            m[f"analysis_{SHORT[scen]}_warm" if scen != "origin" else "analysis_origin"] = statistics.median(
                at_most
            )
    one = [r for r in ok if r.clients == 1]
    if one:
        m["analysis_per_client_1"] = statistics.median(_rate(r) for r in one)
    if most > 1:
        m["analysis_per_client_max_clients"] = statistics.median(
            _rate(r) / most for r in ok if r.clients == most
        )
    for bench in ("aod", "esd"):
        mine = [r for r in one if r.bench == bench]
        if mine:
            m[f"{bench}_mbps_1"] = statistics.median(_rate(r) * 8 for r in mine)
            m[f"{bench}_events_1"] = statistics.median(r.events_per_s or 0.0 for r in mine)
    return m


def _names(value: object) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


NO_SUCCESS = "no successful job of it"


def why_unmeasured(rows: Sequence[JobRow]) -> str:
    """Why a measure can be missing from what RAN (its sweep), in the reader's words: one
    repetition (no warm read), scenarios or strides left out, one analysis client count; else that
    no job of it succeeded."""
    why = []
    if rows and not any((r.repetition or 0) > 0 for r in rows):
        why.append("one repetition, so no warm read of a cache (its first read fills it)")
    ran = {r.scenario for r in rows}
    absent = [s for s in ("origin", *CACHES) if s not in ran]
    if absent:
        why.append(f"scenario {', '.join(absent)} not run")
    strides = {r.stride for r in rows if r.bench == "micro"}
    if strides and not {"0", "random"} <= strides:
        why.append("one stride")
    if len({r.clients for r in rows if r.bench in ("aod", "esd")}) == 1:
        why.append("one analysis client count")
    return "this run: " + "; ".join(why) if why else NO_SUCCESS


def _unmeasured(names: Sequence[str], m: Measures, why: str, crit: str) -> Verdict | None:
    """NOT_JUDGEABLE naming the measures of NAMES missing from M and WHY; None when all are there."""
    missing = [n for n in names if n not in m]
    return Verdict(NOT_JUDGEABLE, f"not measured: {', '.join(missing)} ({why})", crit) if missing else None


def judge_claim(claim: Claim, m: Measures, why: str = NO_SUCCESS) -> Verdict:
    """CLAIM judged on the measures M; WHY: why a measure can be missing (why_unmeasured)."""
    c = claim.criterion
    kind = claim.kind
    if kind == "not_here":
        return Verdict(NOT_JUDGEABLE, str(c["reason"]), "not measured here")
    if kind == "agree":
        names = _names(c["measure"])
        v = agree({n: m[n] for n in names if n in m}, ratio_max=float(str(c["ratio_max"])))
        return _unmeasured(names, m, why, v.criterion) or v
    if kind == "order_pair":
        more, fewer = _names(c["more"]), _names(c["fewer"])
        crit = f"{more[0]} > {more[1]} and {fewer[0]} < {fewer[1]}"
        if (unjudged := _unmeasured((*more, *fewer), m, why, crit)) is not None:
            return unjudged
        ok = m[more[0]] > m[more[1]] and m[fewer[0]] < m[fewer[1]]
        measured = ", ".join(f"{n} {m[n]:.3g}" for n in (*more, *fewer))
        return Verdict(PASS if ok else FAIL, measured, crit, {n: m[n] for n in (*more, *fewer)})
    ref = str(c["reference"])
    names = _names(c["measure"])
    if kind == "near":
        lo, hi = float(str(c["low"])), float(str(c["high"]))
        crit = f"{names[0]} / {ref} within {lo}-{hi}"
    else:  # at_least
        ratio = float(str(c["ratio"]))
        crit = f"each of {', '.join(names)} >= {ratio} x {ref}"
    if (unjudged := _unmeasured((*names, ref), m, why, crit)) is not None:
        return unjudged
    ratios = {n: m[n] / m[ref] if m[ref] > 0 else float("inf") for n in names}
    measured = (
        ", ".join(f"{n} {m[n]:.3g}" for n in names)
        + f"; {ref} {m[ref]:.3g}; ratio "
        + ", ".join(f"{r:.2f}" for r in ratios.values())
    )
    if kind == "near":
        ok = all(lo <= r <= hi for r in ratios.values())
    else:
        ok = all(r >= ratio for r in ratios.values())
    return Verdict(PASS if ok else FAIL, measured, crit, {f"ratio_{n}": r for n, r in ratios.items()})


def _benches(claim: Claim) -> set[str]:
    """The benchmarks a claim's measures come from: ``micro_*`` from micro, the others from aod and esd."""
    names = [n for key in ("measure", "more", "fewer") for n in _names(claim.criterion.get(key, []))]
    return {"micro"} if any(n.startswith("micro_") for n in names) else {"aod", "esd"}


def judge(
    study: Study, rows: Sequence[JobRow], wan_rate: float | None
) -> tuple[dict[str, Verdict], Measures]:
    m = {**micro(rows), **analysis(rows)}
    if wan_rate:
        m["wan_rate"] = wan_rate
    failed = {r.bench for r in rows if r.status != "ok"}
    out = {}
    why = why_unmeasured(rows)
    for claim in study.claims:
        v = judge_claim(claim, m, why)
        if v.status != NOT_JUDGEABLE and _benches(claim) & failed:
            v = Verdict(
                NOT_JUDGEABLE,
                "some of its jobs did not succeed: no verdict on what was not measured "
                "(afkit campaign retry, then afkit study page)",
                v.criterion,
            )
        out[claim.id] = v
    return out, m
