"""Extrapolation planner: how many jobs and servers reach a target rate.

From a measured per-job rate and per-server rate: jobs = ceil(target / per_job),
servers = ceil(target / per_server). Example (GSI): 32 GB/s with 2500 jobs is 12.8 MB/s per job,
so 10 PB in 24 h (115.7 GB/s) needs about 9000 jobs. Units are decimal (1 GB = 1e9 bytes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from afkit.bench.units import parse_duration, parse_rate
from afkit.errors import UsageError

__all__ = ["Plan", "human_rate", "parse_duration", "parse_rate", "plan"]


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
