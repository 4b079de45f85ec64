"""GSI analysis-train scaling: aggregate throughput versus the number of concurrent jobs.

For each wave (N jobs released together) only the jobs that *started within the first minute* of the
wave count, and the throughput is evaluated at the moment 98 % of those jobs have finished: the
bytes they read up to then, divided by the time since the wave's first start. The "all jobs" series
uses every successful job of the wave over the whole wave.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class WavePoint:
    key: tuple[str, ...]
    concurrent: int  # jobs released in the wave
    selected: int  # of those, started within the first minute and succeeded
    t98: float  # seconds from the first start to 98 % of the selected jobs finished
    throughput_98: float  # bytes/s of the selected jobs up to t98
    throughput_all: float  # bytes/s of all successful jobs over the whole wave
    per_job: float  # throughput_98 / selected


def _f(row: dict[str, Any], key: str) -> float:
    return float(row[key])


def bytes_until(job: dict[str, Any], t_end: float, samples: list[dict[str, Any]] | None) -> float:
    """Bytes JOB had read by absolute time T_END (from its interval samples, else a uniform rate)."""
    if samples:
        return sum(float(s["bytes"]) for s in samples if float(s["time"]) <= t_end + 1e-9)
    start = _f(job, "processing_start") if job.get("processing_start") not in ("", None) else _f(job, "start")
    end = _f(job, "end")
    total = _f(job, "bytes")
    if t_end >= end:
        return total
    if t_end <= start or end <= start:
        return 0.0
    return total * (t_end - start) / (end - start)


def wave_point(
    jobs: list[dict[str, Any]],
    *,
    samples: dict[str, list[dict[str, Any]]] | None = None,
    first_window: float = 60.0,
    fraction: float = 0.98,
    key: tuple[str, ...] = (),
) -> WavePoint | None:
    ok = [j for j in jobs if j.get("status") == "ok"]
    if not ok:
        return None
    t0 = min(_f(j, "start") for j in jobs if j.get("start") not in ("", None))
    selected = [j for j in ok if _f(j, "start") - t0 <= first_window]
    ends = sorted(_f(j, "end") for j in selected)
    k = max(1, math.ceil(fraction * len(ends)))
    t98 = ends[k - 1]
    samples = samples or {}
    sel_bytes = sum(bytes_until(j, t98, samples.get(j["id"])) for j in selected)
    all_bytes = sum(_f(j, "bytes") for j in ok)
    t_all = max(_f(j, "end") for j in ok) - t0
    span = max(t98 - t0, 1e-9)
    tp98 = sel_bytes / span
    concurrent = int(jobs[0].get("wave_size") or len(jobs))
    return WavePoint(key, concurrent, len(selected), round(span, 3), tp98, all_bytes / max(t_all, 1e-9),
                     tp98 / len(selected))  # fmt: skip


def scaling_series(
    rows: list[dict[str, Any]],
    intervals: list[dict[str, Any]] | None = None,
    *,
    group: tuple[str, ...] = ("bench", "site", "dataset", "scenario", "access"),
    first_window: float = 60.0,
    fraction: float = 0.98,
) -> list[WavePoint]:
    """One point per wave of the train benchmarks, grouped by GROUP (use () for 'all targets')."""
    samples: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for s in intervals or []:
        samples[s["id"]].append(s)
    waves: dict[tuple[str, ...], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        if r.get("type") != "train" or r.get("status") == "missing":
            continue
        waves[(*[str(r[g]) for g in group], str(r["wave_size"]), str(r["repetition"]))].append(r)
    points = []
    for key, jobs in sorted(waves.items(), key=lambda kv: (kv[0][:-2], int(kv[0][-2]), kv[0][-1])):
        p = wave_point(jobs, samples=samples, first_window=first_window, fraction=fraction, key=key[:-2])
        if p:
            points.append(p)
    return points
