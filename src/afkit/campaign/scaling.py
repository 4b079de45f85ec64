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

from afkit.campaign import cells
from afkit.campaign.rows import IntervalRow, JobRow
from afkit.errors import InvalidError

GROUPINGS = ("target", "server", "all")
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


def bytes_until(job: JobRow, t_end: float, samples: Sequence[IntervalRow] | None) -> float:
    """Bytes JOB had read by absolute time T_END (from its interval samples, else a uniform rate)."""
    if samples:
        return float(sum(s.bytes for s in samples if s.time is not None and s.time <= t_end + 1e-9))
    start = job.processing_start if job.processing_start is not None else _start(job)
    end = _end(job)
    total = float(job.bytes or 0)
    if t_end >= end:
        return total
    if t_end <= start or end <= start:
        return 0.0
    return total * (t_end - start) / (end - start)


def _start(job: JobRow) -> float:
    if job.start is None:
        raise InvalidError(f"train job {job.id} has no start", hint="aggregate the job records again")
    return job.start


def _end(job: JobRow) -> float:
    if job.end is None:
        raise InvalidError(f"train job {job.id} has no end", hint="aggregate the job records again")
    return job.end


def wave_point(
    jobs: Sequence[JobRow],
    *,
    samples: Mapping[str, Sequence[IntervalRow]] | None = None,
    first_window: float = 60.0,
    fraction: float = 0.98,
    key: tuple[str, ...] = (),
) -> WavePoint | None:
    ok = [j for j in jobs if j.status == "ok"]
    if not ok:
        return None
    t0 = min(j.start for j in jobs if j.start is not None)
    selected = [j for j in ok if _start(j) - t0 <= first_window]
    ends = sorted(_end(j) for j in selected)
    k = max(1, math.ceil(fraction * len(ends)))
    t98 = ends[k - 1]
    samples = samples or {}
    sel_bytes = sum(bytes_until(j, t98, samples.get(j.id)) for j in selected)
    all_bytes = float(sum(j.bytes or 0 for j in ok))
    t_all = max(_end(j) for j in ok) - t0
    span = max(t98 - t0, 1e-9)
    tp98 = sel_bytes / span
    # merged waves (grouping server/all): the sum of their sizes (a spread train's wave, whose jobs
    # read several datasets, counts once)
    sizes = {(j.site, j.wave or j.dataset): j.wave_size for j in jobs}
    concurrent = sum(sizes.values()) or len(jobs)
    servers = len({server_of(j.url) for j in ok})
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


def check_grouping(grouping: str) -> None:
    """InvalidError naming the allowed values unless GROUPING is one of GROUPINGS."""
    if grouping not in GROUPINGS:
        allowed = ", ".join(map(repr, GROUPINGS))
        raise InvalidError(
            f"scaling grouping {grouping!r} is not allowed; allowed values: {allowed}",
            hint="target: per storage target; server: per XRootD endpoint host:port; "
            "all: every target together",
        )


# what a series' head names (grouping target; server and all merge sites and datasets on purpose)
HEAD = ("bench", "site", "dataset", "scenario", "access")
# the other cell keys (afkit.campaign.cells): a series never merges two of their values; the
# concurrent jobs (wave_size) are the x axis
REST = cells.keys(without=(*HEAD, "wave_size"))


def series_key(row: JobRow, grouping: str = "target") -> tuple[str, ...]:
    """The series head of a train job: (bench, site, dataset, scenario, access) for ``target``;
    (bench, "server", HOST:PORT, scenario, access) and (bench, "all", "all targets", scenario,
    access) otherwise, so that fields 3.. name the series in the figure as for targets. The series
    is that head and the job's other cell keys (REST; :func:`scaling_series`)."""
    check_grouping(grouping)
    if grouping == "target":
        return (row.bench, row.site, row.dataset, row.scenario, row.access)
    if grouping == "server":
        return (row.bench, "server", server_of(row.url), row.scenario, row.access)
    return (row.bench, "all", "all targets", row.scenario, row.access)


def scaling_series(
    rows: Sequence[JobRow],
    intervals: Sequence[IntervalRow] | None = None,
    *,
    grouping: str = "target",
    first_window: float = 60.0,
    fraction: float = 0.98,
) -> list[WavePoint]:
    """One point per wave size (and repetition) of the train benchmarks in each series of GROUPING
    (``target``, ``server`` or ``all``; module docstring). A series is its head (series_key) and the
    job's other cell keys: waves of different clients, block sizes, payloads ... are never put
    together; where those differ among the series, the point's key ends in what tells them apart
    ("stride 8 MiB")."""
    check_grouping(grouping)
    samples: dict[str, list[IntervalRow]] = defaultdict(list)
    for s in intervals or []:
        if s.time is not None:  # a sample says when it was taken (tables before ``time``: none)
            samples[s.id].append(s)
    waves: dict[tuple[tuple[str, ...], cells.Cell, int, int | None], list[JobRow]] = defaultdict(list)
    for r in rows:
        if r.type != "train" or r.status == "missing":
            continue
        waves[(series_key(r, grouping), cells.cell_of(r, REST), r.wave_size, r.repetition)].append(r)
    differ = cells.varying((rest for _, rest, _, _ in waves), REST)
    points = []
    for (head, rest, _, _), jobs in sorted(
        waves.items(), key=lambda kv: (kv[0][0], cells.sort_key(kv[0][1], REST), kv[0][2], str(kv[0][3]))
    ):
        detail = cells.describe(rest, differ, REST)
        key = (*head, detail) if detail else head
        p = wave_point(jobs, samples=samples, first_window=first_window, fraction=fraction, key=key)
        if p:
            points.append(p)
    return points
