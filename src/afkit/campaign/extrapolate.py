"""Extrapolation planner: how many jobs and servers reach a target rate.

From a measured per-job rate and per-server rate: jobs = ceil(target / per_job),
servers = ceil(target / per_server). Example (GSI): 32 GB/s with 2500 jobs is 12.8 MB/s per job,
so 10 PB in 24 h (115.7 GB/s) needs about 9000 jobs. Units are decimal (1 GB = 1e9 bytes).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from afkit.bench.units import parse_size
from afkit.errors import UsageError

_TIME = {"s": 1, "min": 60, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str) -> float:
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*(s|min|m|h|d)?\s*", text)
    if not m:
        raise UsageError(f"not a duration: {text!r}", hint="write e.g. 24h, 90min, 3600s, 2d")
    return float(m.group(1)) * _TIME[m.group(2) or "s"]


def parse_rate(text: str) -> float:
    """Bytes per second from '115GB/s', '12.5 MB/s' or '10PB/24h'."""
    if "/" not in text:
        raise UsageError(f"not a rate: {text!r}", hint="write e.g. 115GB/s or 10PB/24h")
    size, per = text.rsplit("/", 1)
    amount = parse_size(size, what="amount of data")
    return amount / parse_duration(per if re.match(r"\s*[0-9.]", per) else "1" + per.strip())


def human_rate(bps: float) -> str:
    for unit, f in (("GB/s", 1e9), ("MB/s", 1e6), ("kB/s", 1e3)):
        if bps >= f:
            return f"{bps / f:.3g} {unit}"
    return f"{bps:.3g} B/s"


@dataclass(frozen=True)
class Plan:
    target: float  # bytes/s
    per_job: float
    per_server: float | None
    jobs: int
    servers: int | None

    def describe(self) -> str:
        text = f"target {human_rate(self.target)}: {self.jobs} jobs at {human_rate(self.per_job)} per job"
        if self.servers is not None and self.per_server:
            text += f", {self.servers} servers at {human_rate(self.per_server)} per server"
        return text


def plan(target: float, per_job: float, per_server: float | None = None) -> Plan:
    if target <= 0 or per_job <= 0 or (per_server is not None and per_server <= 0):
        raise UsageError("rates must be positive", hint="measure a campaign first or give --per-job")
    servers = math.ceil(target / per_server - 1e-9) if per_server else None
    return Plan(target, per_job, per_server, math.ceil(target / per_job - 1e-9), servers)
