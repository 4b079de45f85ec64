"""``afkit campaign compare BASE NEW``: per cell, NEW/BASE throughput with a bootstrap uncertainty.

A cell is one point of the campaign's sweep, as afkit.campaign.cells defines it for the report
too: benchmark, site, dataset, scenario, access, clients, block size, stride, jobs per wave, payload,
duration and sample interval (block size and stride: not for analysis jobs, which read whole
baskets); its samples are the ``throughput_MBps`` of its successful jobs (one per repetition and
per job of a wave). Pooling the points of a block-size or stride sweep, the waves of a train, or
runs whose fixed parameters differ would mix populations.
The ratio is median(NEW) / median(BASE); its 95 % interval comes from a percentile bootstrap
(both samples resampled with replacement, ``RESAMPLES`` times, fixed seed: the same tables always
give the same numbers).
A bootstrap rather than a rank test: it gives an interval on the ratio itself (what a site admin
reads: "30 % slower, between 25 and 35 %"), needs nothing beyond numpy, and works with the 3-5
repetitions a functional campaign has, where a Mann-Whitney test cannot reach p < 0.05 at all
below 4 samples per side.

Verdict per cell (TOLERANCE T, default 0.10; the thresholds are 1 - T and 1 + T):
  worse         the whole interval below 1 - T, or NEW has no successful job where BASE had one
                ("lost")
  better        the whole interval above 1 + T
  same          the whole interval within [1 - T, 1 + T]
  inconclusive  fewer than MIN_REPETITIONS repetitions with a successful job on either side (with
                one repetition the interval collapses to the ratio: noise would pass for a change),
                or the interval spans a threshold (the samples cannot tell)
Exit code (for CI): 0 no cell worse or lost (inconclusive cells do not fail), 1 at least one (a
regression), 5 a table not found, 6 no cell in common or a table without the needed columns.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from afkit.atomic import write_atomic
from afkit.campaign import cells
from afkit.campaign.aggregate import write_csv
from afkit.campaign.cells import CellComparison
from afkit.campaign.rows import JobRow
from afkit.errors import InvalidError, NotFoundError

CELL = cells.NAMES  # what a cell is: afkit.campaign.cells.KEYS
METRIC = "throughput_MBps"  # JobRow.throughput_MBps
Key = cells.Cell  # a cell: its values of cells.KEYS
HEAD = cells.HEAD
RESAMPLES = 2000
SEED = 20261123
TOLERANCE = 0.10
MIN_REPETITIONS = 3
VERDICTS = ("worse", "lost", "better", "same", "inconclusive")


def jobs_table(path: Path) -> Path:
    """PATH itself (a jobs.csv) or PATH/aggregate/jobs.csv (a results directory)."""
    for cand in (path, path / "aggregate" / "jobs.csv"):
        if cand.is_file():
            return cand
    raise NotFoundError(
        f"no jobs table at {path}",
        hint="give a jobs.csv or a results directory (afkit campaign results CAMPAIGN.yaml) "
        "after 'afkit campaign aggregate'",
    )


def cell_of(r: JobRow) -> Key:
    return cells.cell_of(r)


def _details(keys: list[Key]) -> dict[Key, str]:
    """Per cell, the keys beyond the label's head (benchmark, site, dataset, scenario, access,
    clients) that tell it from the cells of the same head: "stride 8 MiB", "4 job(s)/wave" ("" when
    it is the only one: the label stays short)."""
    at = [CELL.index(n) for n in HEAD]
    heads: dict[tuple[object, ...], list[Key]] = {}
    for key in keys:
        heads.setdefault(tuple(key[i] for i in at), []).append(key)
    return {key: cells.describe(key, [k for k in cells.varying(heads[tuple(key[i] for i in at)])
                                      if k.column not in HEAD]) for key in keys}  # fmt: skip


def samples(rows: list[JobRow]) -> dict[Key, list[float]]:
    """Successful-job throughputs per cell (a cell whose jobs all failed has an empty list)."""
    return {key: [v for v, _ in vals] for key, vals in _tagged(rows).items()}


def repetitions(rows: list[JobRow]) -> dict[Key, int]:
    """Per cell, how many repetitions have a successful job (the jobs of one wave are one
    repetition: they ran at the same time and are not independent runs)."""
    return {key: len({rep for _, rep in vals}) for key, vals in _tagged(rows).items()}


def _tagged(rows: list[JobRow]) -> dict[Key, list[tuple[float, str]]]:
    """Per cell, (throughput, repetition) of its successful jobs; a table without repetitions
    (older ones) counts each job as one."""
    out: dict[Key, list[tuple[float, str]]] = {}
    for r in rows:
        vals = out.setdefault(cell_of(r), [])
        if r.status == "ok" and r.throughput_MBps is not None:
            vals.append((r.throughput_MBps, r.id if r.repetition is None else str(r.repetition)))
    return out


def bootstrap_ratio(
    base: list[float], new: list[float], rng: np.random.Generator
) -> tuple[float, float, float]:
    """(median ratio, 2.5 %, 97.5 % bootstrap percentiles)."""
    b, n = np.asarray(base), np.asarray(new)
    ratio = float(np.median(n) / np.median(b))
    if len(b) < 2 or len(n) < 2:
        return ratio, ratio, ratio
    mb = np.median(rng.choice(b, size=(RESAMPLES, len(b))), axis=1)
    mn = np.median(rng.choice(n, size=(RESAMPLES, len(n))), axis=1)
    low, high = np.percentile(mn / mb, [2.5, 97.5])
    return ratio, float(low), float(high)


def verdict(low: float, high: float, tolerance: float, reps: int = MIN_REPETITIONS) -> str:
    """The cell's verdict from its interval [LOW, HIGH] and the fewer of its two sides'
    repetitions REPS (module docstring)."""
    if reps < MIN_REPETITIONS:
        return "inconclusive"
    if high < 1 - tolerance:
        return "worse"
    if low > 1 + tolerance:
        return "better"
    if 1 - tolerance <= low and high <= 1 + tolerance:
        return "same"
    return "inconclusive"


def compare(
    base_rows: list[JobRow], new_rows: list[JobRow], *, tolerance: float = TOLERANCE,
    base_name: str = "BASE", new_name: str = "NEW",
) -> list[CellComparison]:  # fmt: skip
    """Per cell the two tables have in common (rows: afkit.campaign.rows.read_jobs), NEW/BASE."""
    base, new = samples(base_rows), samples(new_rows)
    reps_b, reps_n = repetitions(base_rows), repetitions(new_rows)
    common = sorted(set(base) & set(new), key=cells.sort_key)
    if not common:
        raise InvalidError(
            f"{base_name} and {new_name} have no cell in common",
            hint=f"compare runs of the same campaign; a cell is {', '.join(CELL)}",
        )
    rng = np.random.default_rng(SEED)
    details = _details(common)
    out = []
    for key in common:
        b, n = base[key], new[key]
        if not b:
            continue  # nothing to compare with: BASE failed there too
        rb, rn, mb = reps_b[key], reps_n[key], float(np.median(b))
        if not n:
            ratio = low = high = 0.0
            found = "lost"
        else:
            ratio, low, high = bootstrap_ratio(b, n, rng)
            found = verdict(low, high, tolerance, min(rb, rn))
        mn = float(np.median(n)) if n else 0.0
        out.append(CellComparison(key, len(b), len(n), rb, rn, mb, mn, ratio, low, high, found,
                                  details[key]))  # fmt: skip
    return out


def regressions(result: list[CellComparison]) -> list[CellComparison]:
    return [c for c in result if c.verdict in ("worse", "lost")]


def inconclusive(result: list[CellComparison]) -> list[CellComparison]:
    return [c for c in result if c.verdict == "inconclusive"]


def format_table(result: list[CellComparison]) -> str:
    """The table ``compare`` prints: per cell the medians, the ratio, its interval, the
    repetitions (and jobs) of each side and the verdict."""
    head = f"{'cell':<48} {'base MB/s':>10} {'new MB/s':>10} {'ratio':>6} {'95% interval':>15} {'reps':>7}"
    lines = [f"{head}  verdict"]
    for c in result:
        interval = f"{c.low:.3f}-{c.high:.3f}" if c.n_new else "-"
        lines.append(f"{c.label:<48} {c.base_MBps:>10.2f} {c.new_MBps:>10.2f} {c.ratio:>6.3f} "
                     f"{interval:>15} {f'{c.reps_base}/{c.reps_new}':>7}  {c.verdict} "
                     f"(jobs {c.n_base}/{c.n_new})")  # fmt: skip
    return "\n".join(lines)


def write(result: list[CellComparison], out_dir: Path, meta: dict[str, object]) -> Path:
    """OUT_DIR/compare.csv, compare.json (read by the report) and compare.png; atomically."""
    from afkit.campaign.figures import comparison as figure

    out_dir.mkdir(parents=True, exist_ok=True)
    rows = [c.as_dict() for c in result]
    write_csv(out_dir / "compare.csv", list(rows[0]) if rows else ["verdict"], rows)
    tolerance = meta.get("tolerance")
    figure(result, out_dir / "compare.png", float(tolerance) if isinstance(tolerance, int | float) else None)
    section = {**meta, "cells": rows}
    return write_atomic(out_dir / "compare.json", json.dumps(section, indent=1), mode=0o644)


def load_section(report_dir: Path) -> dict[str, object] | None:
    """The comparison the report shows (compare.json + compare.png beside report.html), if any."""
    path = report_dir / "compare.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
