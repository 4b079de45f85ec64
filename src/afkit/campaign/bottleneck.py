"""What bounded a job: ``network``, ``disk``, ``cpu``, ``none`` (or ``unknown``), and why.

From the host monitor's samples taken while the job's processing step ran
(afkit.bench.monitor: one per second) and the job's own counters (bytes read, processing time),
with the rules rootreadspeed's README teaches for telling them apart, checked in this order:

- ``network``: the median network rate (the larger of received and sent) is at least
  ``NET_NEAR`` (80 %) of the link rate;
- ``disk``: the median busy time of the busiest block device is at least ``DISK_BUSY`` (80 %);
- ``cpu`` (decompression or other CPU work): the median of the busiest core's use is at least
  ``CORE_BUSY`` (90 %) while the job's bytes/s is low, i.e. below ``LOW_RATE`` (50 %) of the link
  rate (when the link rate is unknown, the core alone decides);
- ``none``: none of these;
- ``unknown``: the job did not succeed, or no sample fell inside its processing step (a step
  shorter than the sampling interval).

Medians rather than peaks: one busy second does not make a job bound. The samples are
host-wide: concurrent jobs on the same worker node share the link, the disk and the cores.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

NET_NEAR = 0.80
DISK_BUSY = 80.0
CORE_BUSY = 90.0
LOW_RATE = 0.50
VERDICTS = ("network", "disk", "cpu", "none", "unknown")


@dataclass(frozen=True)
class Sample:
    """What the verdict reads of one host-monitor record (afkit.bench.monitor.sample): the end of
    its second ``t`` (wall clock), the larger of its received and sent bytes/s, the busiest block
    device's busy percent and the busiest core's use (None when the host reported none)."""

    t: float
    net_bps: float = 0.0
    disk_busy_percent: float | None = None
    busiest_core: float | None = None

    @classmethod
    def from_record(cls, rec: Mapping[str, object]) -> Sample | None:
        """REC's sample; None for a record without its time (not a monitor sample)."""
        t = _number(rec.get("t"))
        if t is None:
            return None
        cores = rec.get("cpu_percent_per_core")
        per_core = [c for c in map(_number, cores) if c is not None] if isinstance(cores, list) else []
        net = max(_number(rec.get("net_recv_bps")) or 0.0, _number(rec.get("net_sent_bps")) or 0.0)
        return cls(t, net, _number(rec.get("disk_busy_percent")), max(per_core) if per_core else None)


@dataclass(frozen=True)
class JobCounters:
    """The job's own counters: its status, the bytes it read, its processing step's seconds."""

    status: str
    bytes: int
    processing_s: float


def _number(value: object) -> float | None:
    """VALUE as a float when it is a JSON number (a tuple, not int | float: Python 3.9 on workers)."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def read_samples(path: Path) -> list[Sample]:
    """The host monitor's samples in PATH (JSON lines; none when PATH is absent)."""
    if not path.is_file():
        return []
    records = (json.loads(ln) for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip())
    return [s for rec in records if isinstance(rec, dict) and (s := Sample.from_record(rec)) is not None]


def _median(values: Iterable[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return statistics.median(vals) if vals else None


def _mb(rate: float) -> str:
    return f"{rate / 1e6:.1f} MB/s"


def in_window(samples: Iterable[Sample], start: float, end: float) -> list[Sample]:
    """The samples whose second (t-1, t] lies mostly inside [START, END] (its midpoint is inside)."""
    return [s for s in samples if start <= s.t - 0.5 <= end]


# the verdict and reason of a job that did not succeed (also the records of jobs that never ran
# their payload: held, or without their image: afkit.campaign.job)
NOT_SUCCEEDED = ("unknown", "the job did not succeed")


def verdict(samples: list[Sample], counters: JobCounters, link_rate: float | None) -> tuple[str, str]:
    """(verdict, reason) for one job.

    SAMPLES: the host monitor's samples from the processing step; COUNTERS: the job's status,
    bytes and processing seconds; LINK_RATE: bytes/s of the worker node's link, None when unknown.
    """
    if counters.status != "ok":
        return NOT_SUCCEEDED
    if not samples:
        return "unknown", "no monitor sample during the processing step"
    net = _median(s.net_bps for s in samples)
    busy = _median(s.disk_busy_percent for s in samples)
    core = _median(s.busiest_core for s in samples)
    proc = counters.processing_s
    rate = counters.bytes / proc if proc > 0 else 0.0
    if link_rate and net is not None and net >= NET_NEAR * link_rate:
        return "network", f"network {_mb(net)} is {net / link_rate:.0%} of the link's {_mb(link_rate)}"
    if busy is not None and busy >= DISK_BUSY:
        return "disk", f"busiest block device busy {busy:.0f} % of the time"
    if core is not None and core >= CORE_BUSY:
        if not link_rate:
            return "cpu", f"busiest core at {core:.0f} % ({_mb(rate)}; link rate unknown)"
        if rate < LOW_RATE * link_rate:
            share = f"{rate / link_rate:.0%} of the link"
            return "cpu", f"busiest core at {core:.0f} % while reading {_mb(rate)} ({share})"
    net = net or 0.0
    parts = [f"network {_mb(net)}" + (f" ({net / link_rate:.0%} of the link)" if link_rate else "")]
    if busy is not None:
        parts.append(f"disk busy {busy:.0f} %")
    if core is not None:
        parts.append(f"busiest core {core:.0f} %")
    return "none", ", ".join(parts)


def link_rate(configured: str = "", sys_net: Path = Path("/sys/class/net")) -> float | None:
    """Bytes/s of the worker node's link: the site's ``link_rate`` CONFIGURED (e.g. ``1.25GB/s``),
    else the fastest interface that is up and reports a speed (``/sys/class/net/*/speed`` in
    Mbit/s; loopback and virtual links report none or -1). Standard library only (the job core)."""
    if configured:
        from afkit.campaign.extrapolate import parse_rate

        return parse_rate(configured)
    speeds = []
    for iface in sys_net.glob("*"):
        try:
            if (iface / "operstate").read_text().strip() != "up":
                continue
            speed = int((iface / "speed").read_text().strip())
        except (OSError, ValueError):
            continue  # no speed (loopback, virtual links) or not readable
        if speed > 0:
            speeds.append(speed)
    return max(speeds) * 1e6 / 8 if speeds else None
