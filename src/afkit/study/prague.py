"""The disk-server study's evaluation (prague-diskserver): the records afkit.study.diskserver wrote
→ the claims' verdicts and the numbers beside the original's.

- ``runtime_cut`` on Table 2's runs: every run's seconds per setting. A run whose device did not
  take the setting asked (the kernel read back another) makes the claim not judgeable, naming it.
- ``share_below`` and ``offset_bands`` on the trace without a tree cache (``trace: nocache``),
  ``fewer_reads`` on the two traces' read counts. No trace (no image was given) → not judgeable.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from afkit.bench.records import read_jsonl
from afkit.bench.trace import TraceEntry, load_trace
from afkit.study import criteria
from afkit.study.criteria import NOT_JUDGEABLE, Verdict
from afkit.study.model import Study

NumberTuple = tuple[str, str, str, str]


@dataclass
class Measured:
    runs: list[dict[str, object]] = field(default_factory=list)
    traces: dict[str, list[TraceEntry]] = field(default_factory=dict)  # nocache, cache
    pattern_size: int = 0
    setup: dict[str, object] = field(default_factory=dict)

    def seconds(self, setting: str) -> list[float]:
        return [float(str(r["seconds"])) for r in self.runs if r.get("setting") == setting]

    def not_taken(self) -> list[str]:
        """The runs whose device reported other settings than those asked."""
        out = []
        for r in self.runs:
            asked = r.get("asked")
            if not isinstance(asked, dict):
                continue
            for key in ("read_ahead_kb", "scheduler"):
                if str(asked.get(key)) != str(r.get(key)):
                    out.append(
                        f"{r.get('setting')} run {r.get('rep')}: {key} {r.get(key)} (asked {asked.get(key)})"
                    )
        return out


def complete_pairs(runs: list[dict[str, object]]) -> list[dict[str, object]]:
    """RUNS of the repetitions that measured both settings (an interrupted run's last repetition
    may have only one: it would weigh one setting's drift)."""
    settings: dict[object, set[object]] = {}
    for r in runs:
        settings.setdefault(r.get("rep"), set()).add(r.get("setting"))
    return [r for r in runs if settings[r.get("rep")] >= {"default", "tuned"}]


def load(data: Path) -> Measured:
    """What the run left in DATA (a missing part stays empty: its claims are not judgeable)."""
    m = Measured()
    runs = data / "runs.jsonl"
    if runs.is_file():
        m.runs = complete_pairs(read_jsonl(runs))
    for name in ("nocache", "cache"):
        path = data / f"pattern-{name}.jsonl"
        if path.is_file() and path.stat().st_size:
            m.traces[name] = load_trace(path)
    pattern = data / "pattern.json"
    if pattern.is_file():
        m.pattern_size = int(json.loads(pattern.read_text(encoding="utf-8")).get("size", 0))
    setup = data / "setup.json"
    if setup.is_file():
        m.setup = json.loads(setup.read_text(encoding="utf-8"))
    return m


NO_TRACE = "the read pattern was not recorded (no image with ROOT was given: --image SIF)"
NO_TRACE_YET = "the read pattern was not recorded: the run ended before it (it comes after Table 2's runs)"


def _no_trace(m: Measured) -> str:
    return NO_TRACE_YET if m.setup.get("image") else NO_TRACE


def _not_judgeable(why: str, crit: object) -> Verdict:
    return Verdict(NOT_JUDGEABLE, why, str(crit))


def judge_claim(crit: dict[str, object], m: Measured) -> Verdict:
    kind = crit["kind"]
    if kind == "runtime_cut":
        verdict = criteria.runtime_cut(
            m.seconds("default"), m.seconds("tuned"), cut_min=float(str(crit["cut_min"]))
        )
        taken = m.not_taken()
        if taken and verdict.status != NOT_JUDGEABLE:
            why = "the device did not take every setting asked: " + "; ".join(taken[:4])
            return Verdict(
                NOT_JUDGEABLE, f"{why}. Measured: {verdict.measured}", verdict.criterion, verdict.values
            )
        return verdict
    trace = m.traces.get(str(crit.get("trace", "nocache")))
    if kind == "fewer_reads":
        if "nocache" not in m.traces or "cache" not in m.traces:
            return _not_judgeable(_no_trace(m), f"reads with / reads without ≤ {crit['ratio_max']}")
        return criteria.fewer_reads(
            len(m.traces["cache"]), len(m.traces["nocache"]), ratio_max=float(str(crit["ratio_max"]))
        )
    if trace is None:
        return _not_judgeable(_no_trace(m), crit)
    if kind == "share_below":
        return criteria.share_below(
            [float(e.length) for e in trace],
            limit=float(str(crit["bytes"])),
            share_min=float(str(crit["share_min"])),
        )
    if kind == "offset_bands":
        reads = [(e.time or 0.0, float(e.offset)) for e in trace]
        size = m.pattern_size or max(e.offset + e.length for e in trace)
        return criteria.offset_bands(
            reads,
            size,
            windows=int(str(crit["windows"])),
            gap=float(str(crit["gap"])),
            bands_max=float(str(crit["bands_max"])),
        )
    return _not_judgeable(f"unknown criterion kind {kind!r}", crit)


def judge(study: Study, m: Measured) -> dict[str, Verdict]:
    return {c.id: judge_claim(c.criterion, m) for c in study.claims}


def _settings_shown(m: Measured) -> str:
    """What the device ran with per setting (the first run of each), the schedulers the kernel
    offered and where the default's came from ("kernel": the one the device had)."""
    shown = []
    for which in ("default", "tuned"):
        run = next((r for r in m.runs if r.get("setting") == which), None)
        if run is None:
            return "not measured"
        shown.append(f"{run.get('read_ahead_kb')} KiB, {run.get('scheduler')}")
    text = " -> ".join(shown)
    settings = m.setup.get("settings")
    default = settings.get("default") if isinstance(settings, dict) else None
    if isinstance(default, dict) and default.get("asked_scheduler") == "kernel":
        text += " (the default scheduler: the kernel's own for the device)"
    offered = m.setup.get("offered")
    if isinstance(offered, list):
        text += f"; offered: {', '.join(str(o) for o in offered)}"
    return text


def original_cuts(study: Study) -> list[float]:
    """Table 2's cut per filesystem: 1 - tuned / default."""
    out = []
    for i in range(1, 10):
        if f"fs{i}_default" not in study.original:
            break
        out.append(1.0 - study.value(f"fs{i}_tuned") / study.value(f"fs{i}_default"))
    return out


def numbers(study: Study, m: Measured, verdicts: dict[str, Verdict]) -> list[NumberTuple]:
    cuts = original_cuts(study)
    d, t = m.seconds("default"), m.seconds("tuned")
    rows: list[NumberTuple] = []
    orig_d = [study.value(f"fs{i}_default") for i in range(1, len(cuts) + 1)]
    orig_t = [study.value(f"fs{i}_tuned") for i in range(1, len(cuts) + 1)]
    rows.append(
        (
            "Table 2: runtime, default settings",
            f"{min(orig_d):g}-{max(orig_d):g} s",
            f"{min(d):.3g}-{max(d):.3g} s" if d else "not measured",
            "other hardware and files: compare the cut",
        )
    )
    rows.append(
        (
            "Table 2: runtime, tuned settings",
            f"{min(orig_t):g}-{max(orig_t):g} s",
            f"{min(t):.3g}-{max(t):.3g} s" if t else "not measured",
            "",
        )
    )
    cut = verdicts.get("tuned-reads-faster")
    mine = f"{cut.values['cut']:.1%} (median)" if cut and "cut" in cut.values else "not measured"
    rows.append(
        (
            "Table 2: runtime cut by tuning",
            f"{min(cuts):.1%}-{max(cuts):.1%} (median {statistics.median(cuts):.1%})",
            mine,
            "ratio: comparable",
        )
    )
    rows.append(
        (
            "read-ahead and I/O scheduler, default -> tuned",
            f"{study.value('read_ahead_default'):g} KiB, cfq -> "
            f"{study.value('read_ahead_tuned'):g} KiB, noop",
            _settings_shown(m),
            "cfq and noop left Linux in 5.0",
        )
    )
    no = m.traces.get("nocache", [])
    yes = m.traces.get("cache", [])
    small = sum(e.length < study.value("small_read") * 1000 for e in no)
    rows.append(
        (
            "read() calls for one file, no cache",
            f"about {study.value('reads'):g}",
            str(len(no)) if no else "not recorded",
            f"file of {m.pattern_size / 1e6:.0f} MB" if m.pattern_size else "",
        )
    )
    rows.append(
        ("reads under 3 kB, no cache", "mostly", f"{small / len(no):.0%}" if no else "not recorded", "")
    )
    bands = verdicts.get("few-regions")
    rows.append(
        (
            "parts of the file read at a time",
            f"about {study.value('regions'):g}",
            f"median {bands.values['median_bands']:g}"
            if bands and "median_bands" in bands.values
            else "not recorded",
            "",
        )
    )
    rows.append(
        (
            "read() calls with ROOT's TTreeCache",
            "not measured (supposed fewer)",
            str(len(yes)) if yes else "not recorded",
            "",
        )
    )
    return rows
