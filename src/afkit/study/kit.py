"""The KIT coordinated-caches study's evaluation (kit-htda): the records afkit.study.htda wrote →
the claims' verdicts and the numbers beside the original's.

- ``plateau_near_link``: the source's points (processes, summed MB/s; the median over repetitions)
  bend into a plateau (criteria.knee) whose level is LOW-HIGH x the source's link rate.
- ``share_falls``: the source's processing share at the most processes is at most ``ratio_max`` x
  its share with the fewest.
- ``stall_ratio``: per source, the readers' worth of data its link delivered at its most (every
  reader's summed rate, background included, over the demand); FAST's over SLOW's within LOW-HIGH.
  Not judgeable when the fast link never held its readers back (no stall within the sweep).
- ``share_at_least``: the source's processing share at the most processes is at least ``share_min``.
- ``speedup``: the median walltime of the workflow without the cache over that with it is at least
  ``ratio_min``.
- ``not_here``: not judgeable, with the study's reason.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from afkit.bench.records import read_jsonl
from afkit.study import criteria
from afkit.study.criteria import FAIL, NOT_JUDGEABLE, PASS, Verdict
from afkit.study.model import Study

NumberTuple = tuple[str, str, str, str]
STALLED = 0.95  # a point whose readers got less than this share of their demand was held back


@dataclass
class Measured:
    points: list[dict[str, object]] = field(default_factory=list)
    jobs: list[dict[str, object]] = field(default_factory=list)
    setup: dict[str, object] = field(default_factory=dict)
    # for the page's provenance (host studies share the page code): what the records came from
    runs: list[dict[str, object]] = field(default_factory=list)

    def sources(self) -> list[str]:
        return list(dict.fromkeys(str(p["source"]) for p in self.points))

    def series(self, source: str, key: str) -> list[tuple[float, float]]:
        """(processes, median over the repetitions of KEY) of SOURCE's points."""
        reps = [
            [(float(str(p["clients"])), float(str(p[key]))) for p in self.points
             if p["source"] == source and p.get("rep") == rep]
            for rep in sorted({p.get("rep") for p in self.points}, key=str)
        ]  # fmt: skip
        return criteria.medians([r for r in reps if r])

    def named(self, role: str) -> str:
        """The source a claim's ROLE means: the source of that name; else, for ``slow`` and
        ``fast``, the network source with the slowest and the fastest link (a node's own names,
        e.g. fileserver-1g and fileserver-10g); else ROLE itself (not measured)."""
        if role in self.sources() or role not in ("slow", "fast"):
            return role
        links = {s: self.link(s) for s in self.sources()
                 if any(p["source"] == s and p.get("kind") == "network" for p in self.points)}  # fmt: skip
        if len(links) < 2:
            return role
        return (min if role == "slow" else max)(links, key=lambda s: links[s])

    def link(self, source: str) -> float:
        return max(
            (float(str(p.get("link_MBps") or 0)) for p in self.points if p["source"] == source), default=0
        )

    def walltimes(self, cache: str) -> list[float]:
        return [float(str(j["walltime_s"])) for j in self.jobs if j.get("cache") == cache]


def load(data: Path) -> Measured:
    """What the run left in DATA (a missing part stays empty: its claims are not judgeable)."""
    m = Measured()
    if (data / "points.jsonl").is_file():
        m.points = read_jsonl(data / "points.jsonl")
    if (data / "jobs.jsonl").is_file():
        m.jobs = read_jsonl(data / "jobs.jsonl")
    if (data / "setup.json").is_file():
        m.setup = json.loads((data / "setup.json").read_text(encoding="utf-8"))
    m.runs = m.points
    return m


def _no(source: str, crit: str) -> Verdict:
    return Verdict(NOT_JUDGEABLE, f"no points of source {source!r} were measured", crit)


def plateau_near_link(
    m: Measured, source: str, *, r2_min: float, flat_max: float, bend_max: float, low: float, high: float
) -> Verdict:
    crit = (f"a knee (R² ≥ {r2_min}, plateau max/min ≤ {flat_max}, ≤ {bend_max} x the line); "
            f"plateau {low:g}-{high:g} x the link rate")  # fmt: skip
    pts = m.series(source, "rate_MBps")
    if not pts:
        return _no(source, crit)
    link = m.link(source)
    if link <= 0:
        return Verdict(
            NOT_JUDGEABLE, f"source {source!r} has no link rate (sources.{source}.link_mbit)", crit
        )
    k = criteria.knee(pts, r2_min=r2_min, flat_max=flat_max, bend_max=bend_max)
    if k.status == NOT_JUDGEABLE:
        return Verdict(NOT_JUDGEABLE, k.measured, crit)
    ratio = k.values["plateau"] / link
    ok = k.status == PASS and low <= ratio <= high
    measured = (
        f"{k.measured}; plateau {k.values['plateau']:.3g} MB/s = {ratio:.0%} of the {link:.3g} MB/s link"
    )
    return Verdict(PASS if ok else FAIL, measured, crit, {**k.values, "of_link": ratio, "link_MBps": link})


def _ends(m: Measured, source: str) -> tuple[tuple[float, float], tuple[float, float]] | None:
    pts = sorted(m.series(source, "share"))
    return (pts[0], pts[-1]) if len(pts) >= 2 else None


def share_falls(m: Measured, source: str, *, ratio_max: float) -> Verdict:
    crit = f"share at the most processes ≤ {ratio_max} x the share at the fewest"
    ends = _ends(m, source)
    if ends is None:
        return _no(source, crit)
    (x0, s0), (x1, s1) = ends
    ratio = s1 / s0 if s0 > 0 else float("inf")
    measured = f"share {s0:.2f} with {x0:g} process(es), {s1:.2f} with {x1:g}: {ratio:.2f} x"
    return Verdict(
        PASS if ratio <= ratio_max else FAIL, measured, crit, {"ratio": ratio, "first": s0, "last": s1}
    )


def share_at_least(m: Measured, source: str, *, share_min: float) -> Verdict:
    crit = f"share at the most processes ≥ {share_min}"
    ends = _ends(m, source)
    if ends is None:
        return _no(source, crit)
    x1, s1 = ends[1]
    return Verdict(
        PASS if s1 >= share_min else FAIL, f"share {s1:.2f} with {x1:g} processes", crit, {"share": s1}
    )


def stall_readers(m: Measured, source: str) -> tuple[float, bool]:
    """(the readers' worth of data SOURCE's link delivered at its most, whether any point stalled)."""
    pts = [p for p in m.points if p["source"] == source]
    worth = max(float(str(p["total_MBps"])) / float(str(p["demand_MBps"])) for p in pts)
    stalled = any(
        float(str(p["total_MBps"])) < STALLED * float(str(p["readers"])) * float(str(p["demand_MBps"]))
        for p in pts
    )
    return worth, stalled


def stall_ratio(m: Measured, slow: str, fast: str, *, low: float, high: float) -> Verdict:
    crit = f"readers at the stall, {fast} / {slow}: {low:g}-{high:g}"
    have = set(m.sources())
    for s in (slow, fast):
        if s not in have:
            return _no(s, crit)
    (ws, ss), (wf, sf) = stall_readers(m, slow), stall_readers(m, fast)
    for name, stalled, worth in ((slow, ss, ws), (fast, sf, wf)):
        if not stalled:
            why = (f"the {name} link never held its readers back: it delivered {worth:.3g} readers' "
                   "worth at most, every reader got its demand")  # fmt: skip
            return Verdict(NOT_JUDGEABLE, why, crit)
    ratio = wf / ws if ws > 0 else float("inf")
    measured = f"{slow}: {ws:.3g} readers' worth at most, {fast}: {wf:.3g}; {ratio:.1f} x"
    return Verdict(
        PASS if low <= ratio <= high else FAIL, measured, crit, {"ratio": ratio, "slow": ws, "fast": wf}
    )


def speedup(m: Measured, *, ratio_min: float) -> Verdict:
    crit = f"median walltime disabled / enabled ≥ {ratio_min}"
    off, on = m.walltimes("disabled"), m.walltimes("enabled")
    if not off or not on:
        return Verdict(
            NOT_JUDGEABLE, "the workflow was not run with and without the cache (no network source)", crit
        )
    a, b = statistics.median(off), statistics.median(on)
    ratio = a / b if b > 0 else float("inf")
    measured = f"median {a:.2f} s disabled ({len(off)} jobs), {b:.2f} s enabled ({len(on)}): {ratio:.2f} x"
    return Verdict(
        PASS if ratio >= ratio_min else FAIL, measured, crit, {"ratio": ratio, "disabled": a, "enabled": b}
    )


def judge_claim(crit: dict[str, object], m: Measured) -> Verdict:
    kind = str(crit["kind"])

    def num(key: str) -> float:
        return float(str(crit[key]))

    src = m.named(str(crit.get("source", "")))
    if kind == "plateau_near_link":
        return plateau_near_link(m, src, r2_min=num("r2_min"), flat_max=num("flat_max"),
                                 bend_max=num("bend_max"), low=num("low"), high=num("high"))  # fmt: skip
    if kind == "share_falls":
        return share_falls(m, src, ratio_max=num("ratio_max"))
    if kind == "share_at_least":
        return share_at_least(m, src, share_min=num("share_min"))
    if kind == "stall_ratio":
        return stall_ratio(
            m, m.named(str(crit["slow"])), m.named(str(crit["fast"])), low=num("low"), high=num("high")
        )
    if kind == "speedup":
        return speedup(m, ratio_min=num("ratio_min"))
    if kind == "not_here":
        return Verdict(NOT_JUDGEABLE, str(crit.get("reason", "")), "not measurable here")
    return Verdict(NOT_JUDGEABLE, f"unknown criterion kind {kind!r}", str(crit))


def judge(study: Study, m: Measured) -> dict[str, Verdict]:
    return {c.id: judge_claim(c.criterion, m) for c in study.claims}


def numbers(study: Study, m: Measured, verdicts: dict[str, Verdict]) -> list[NumberTuple]:
    plateau = verdicts.get("network-plateau")
    stall = verdicts.get("fast-stall-10x")
    speed = verdicts.get("cache-speedup")
    d = float(str(m.setup.get("demand_MBps") or 0))

    def have(v: Verdict | None, key: str, fmt: str) -> str:
        return fmt.format(v.values[key]) if v and key in v.values else "not measured"

    return [
        ("slow server: plateau of the summed rate",
         f"about {study.value('plateau_slow'):g} MB/s of {study.value('link_slow'):g} Gbit/s (80 %)",
         have(plateau, "of_link", "{:.0%} of its link"), "ratio: comparable"),
        ("demand per process", f"{study.value('demand'):g} MB/s", f"{d:g} MB/s" if d else "not measured",
         "scaled: see the scale table"),
        ("readers at the fast link's stall / the slow link's",
         "about 10 (expected; CPU fell near 80 readers)",
         have(stall, "ratio", "{:.1f}"), ""),
        ("cache speed-up of the median walltime", "consistent (Figure 6; no number given)",
         have(speed, "ratio", "{:.2f} x"), ""),
    ]  # fmt: skip
