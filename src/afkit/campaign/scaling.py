"""GSI analysis-train scaling: aggregate throughput versus the number of concurrent jobs.

For each wave (N jobs released together) only the jobs that *started within the first minute* of the
wave count, and the throughput is evaluated at the moment 98 % of those jobs have finished: the
bytes they read up to then, divided by the time since the wave's first start. The "all jobs" series
uses every successful job of the wave over the whole wave.

Series (``grouping``), as the GSI test evaluates them "for one storage target, one server, or all":

- ``target`` (default): one series per storage target, i.e. per (benchmark, WN site, dataset,
  scenario, access): each wave on its own;
- ``server``: one series per XRootD endpoint ``host:port`` the jobs read from (the first endpoint of
  the job's URL: the cache in cache scenarios, the cache in forwarding URLs; ``local`` for local
  paths), scenario and access: the waves of the same size and repetition that read from that server
  are evaluated together (their jobs are counted as concurrent);
- ``all``: one series per (benchmark, scenario, access): the waves of the same size and repetition
  of every site and dataset together.

Merged waves are treated as one wave: concurrent = the sum of their sizes, the first start is the
earliest. That is right when they ran at the same time (sites and datasets are separate wave
chains that Snakemake runs in parallel when there are free job slots); waves that did not overlap
make the span longer and the throughput lower.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from afkit.campaign.contract import Cell
from afkit.errors import InvalidError

GROUPINGS = ("target", "server", "all")
TARGET_KEYS = ("bench", "site", "dataset", "scenario", "access")
XROOTD_SCHEMES = ("root", "roots", "xroot", "xroots")
XROOTD_PORT = 1094


@dataclass(frozen=True)
class WavePoint:
    key: tuple[str, ...]
    concurrent: int  # jobs released in the wave
    selected: int  # of those, started within the first minute and succeeded
    t98: float  # seconds from the first start to 98 % of the selected jobs finished
    throughput_98: float  # bytes/s of the selected jobs up to t98
    throughput_all: float  # bytes/s of all successful jobs over the whole wave
    per_job: float  # throughput_98 / selected
    servers: int = 1  # distinct XRootD endpoints (or local storage) the wave's jobs read from

    @property
    def per_server(self) -> float:
        """throughput_98 per server the jobs read from (the rate one server delivered)."""
        return self.throughput_98 / max(self.servers, 1)


def best_wave(points: list[WavePoint]) -> WavePoint:
    """The wave with the highest aggregate throughput (throughput_98): the one the extrapolation
    starts from (``afkit campaign extrapolate --from``, the report). POINTS is not empty."""
    return max(points, key=lambda p: p.throughput_98)


def _f(row: Mapping[str, Cell], key: str) -> float:
    return float(row[key])


def bytes_until(job: Mapping[str, Cell], t_end: float, samples: Sequence[Mapping[str, Cell]] | None) -> float:
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
    jobs: Sequence[Mapping[str, Cell]],
    *,
    samples: Mapping[str, Sequence[Mapping[str, Cell]]] | None = None,
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
    sel_bytes = sum(bytes_until(j, t98, samples.get(str(j["id"]))) for j in selected)
    all_bytes = sum(_f(j, "bytes") for j in ok)
    t_all = max(_f(j, "end") for j in ok) - t0
    span = max(t98 - t0, 1e-9)
    tp98 = sel_bytes / span
    # merged waves (grouping server/all): the sum of their sizes; a wave is one (site, dataset) of them
    sizes = {(j.get("site"), j.get("dataset")): int(j.get("wave_size") or 0) for j in jobs}
    concurrent = sum(sizes.values()) or len(jobs)
    servers = len({server_of(str(j.get("url", ""))) for j in ok})
    return WavePoint(key, concurrent, len(selected), round(span, 3), tp98, all_bytes / max(t_all, 1e-9),
                     tp98 / len(selected), servers)  # fmt: skip


def server_of(url: str) -> str:
    """The XRootD endpoint ``host:port`` a job reads from (default port 1094); ``local`` for a path."""
    parts = urlsplit(str(url))
    if parts.scheme.lower() not in XROOTD_SCHEMES or not parts.hostname:
        return "local"
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    try:
        port = parts.port or XROOTD_PORT
    except ValueError:  # not a number: keep what the URL says
        return parts.netloc.rsplit("@", 1)[-1]
    return f"{host}:{port}"


def series_key(row: Mapping[str, Cell], grouping: str = "target") -> tuple[str, ...]:
    """The series a train job belongs to: (bench, site, dataset, scenario, access) for ``target``;
    (bench, "server", HOST:PORT, scenario, access) and (bench, "all", "all targets", scenario,
    access) otherwise, so that fields 3.. name the series in the figure as for targets."""
    if grouping == "target":
        return tuple(str(row[k]) for k in TARGET_KEYS)
    if grouping == "server":
        return (str(row["bench"]), "server", server_of(str(row.get("url", ""))), str(row["scenario"]),
                str(row["access"]))  # fmt: skip
    if grouping == "all":
        return (str(row["bench"]), "all", "all targets", str(row["scenario"]), str(row["access"]))
    raise InvalidError(
        f"scaling grouping {grouping!r} is not allowed; allowed values: {', '.join(map(repr, GROUPINGS))}",
        hint="target: per storage target; server: per XRootD endpoint host:port; all: every target together",
    )


def scaling_series(
    rows: Sequence[Mapping[str, Cell]],
    intervals: Sequence[Mapping[str, Cell]] | None = None,
    *,
    grouping: str = "target",
    first_window: float = 60.0,
    fraction: float = 0.98,
) -> list[WavePoint]:
    """One point per wave size (and repetition) of the train benchmarks in each series of GROUPING
    (``target``, ``server`` or ``all``; module docstring)."""
    if grouping not in GROUPINGS:
        series_key({}, grouping)  # raises the InvalidError naming the allowed values
    samples: dict[str, list[Mapping[str, Cell]]] = defaultdict(list)
    for s in intervals or []:
        samples[str(s["id"])].append(s)
    waves: dict[tuple[str, ...], list[Mapping[str, Cell]]] = defaultdict(list)
    for r in rows:
        if r.get("type") != "train" or r.get("status") == "missing":
            continue
        waves[(*series_key(r, grouping), str(r["wave_size"]), str(r["repetition"]))].append(r)
    points = []
    for key, jobs in sorted(waves.items(), key=lambda kv: (kv[0][:-2], int(kv[0][-2]), kv[0][-1])):
        p = wave_point(jobs, samples=samples, first_window=first_window, fraction=fraction, key=key[:-2])
        if p:
            points.append(p)
    return points
