"""Each study's evaluation: from the campaign's tables to the verdicts, the numbers table and the
figures of its page (a registry: a new study adds one entry)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from afkit.campaign.rows import IntervalRow, JobRow
from afkit.study import dcotf, dcotf_figures, fralpes, fralpes_figures, trains, trains_figures
from afkit.study.criteria import Verdict
from afkit.study.model import Study
from afkit.study.page import NumberRow
from afkit.study.recipe import Facility


@dataclass(frozen=True)
class Evaluation:
    verdicts: dict[str, Verdict]
    numbers: list[NumberRow]
    figures: list[tuple[str, Path]]


Evaluate = Callable[[Study, Sequence[JobRow], Sequence[IntervalRow], Facility, Path], Evaluation]


def gsi_trains(
    study: Study, rows: Sequence[JobRow], intervals: Sequence[IntervalRow], fac: Facility, out: Path
) -> Evaluation:
    data = trains.measure(rows, intervals)
    verdicts = trains.judge(study, data)
    where = "box" if fac.scaled else "your sites"
    figures = trains_figures.write_all(
        study, data, verdicts, trains.per_job_rates(data, verdicts), out, where
    )
    return Evaluation(verdicts, [NumberRow(*n) for n in trains.numbers(study, data, verdicts)], figures)


def _num(value: object) -> float | None:
    try:
        return float(str(value))
    except ValueError:
        return None


def dcotf_xcache(
    study: Study, rows: Sequence[JobRow], intervals: Sequence[IntervalRow], fac: Facility, out: Path
) -> Evaluation:
    wan = _num(fac.facts.get("wan_rate_MBps", fac.params.get("wan_rate_MBps", "")))
    verdicts, m = dcotf.judge(study, rows, wan)
    numbers = []
    for what, key, mine, unit, factor in (
        ("no cache, highest rate", "no_cache_cap", "micro_origin_max", "Gbit/s", 8 / 1000),
        ("XCache, warm", "xcache_rate", "micro_xcache_warm", "Gbit/s", 8 / 1000),
        ("AOD per client, 1 client", "aod_per_client_max", "aod_mbps_1", "Mbit/s", 1.0),
        ("ESD per client, 1 client", "esd_per_client_max", "esd_mbps_1", "Mbit/s", 1.0),
        ("AOD events/s per client, 1 client", "aod_events_max", "aod_events_1", "events/s", 1.0),
        ("ESD events/s per client, 1 client", "esd_events_max", "esd_events_1", "events/s", 1.0),
    ):
        o = study.original[key]
        got = m.get(mine)
        numbers.append(
            NumberRow(
                what,
                f"{o['value']} {o['unit']}",
                f"{got * factor:.3g} {unit}" if got is not None else "not measured",
                f"x {got * factor / float(str(o['value'])):.3g}" if got else "",
            )
        )
    if wan:
        numbers.append(
            NumberRow(
                "WAN link (the no-cache cap)",
                "10 Gbit/s",
                f"{wan * 8 / 1000:.3g} Gbit/s",
                f"x {wan * 8 / 1000 / 10:.3g}",
            )
        )
    return Evaluation(verdicts, numbers, dcotf_figures.write_all(rows, intervals, out))


def _listed(value: object) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def fr_alpes(
    study: Study, rows: Sequence[JobRow], _intervals: Sequence[IntervalRow], fac: Facility, out: Path
) -> Evaluation:
    datas = _listed(fac.roles["data"])
    steps = fralpes.measure(rows, datas)
    verdicts = fralpes.judge(study, steps)
    where = "box" if fac.scaled else "your sites"
    figures = fralpes_figures.write_all(study, steps, _listed(fac.roles["workers"]), datas, out, where)
    return Evaluation(verdicts, [NumberRow(*n) for n in fralpes.numbers(study, steps)], figures)


EVALUATE: dict[str, Evaluate] = {"gsi-trains": gsi_trains, "dcotf-xcache": dcotf_xcache, "fr-alpes": fr_alpes}
