"""Expand a campaign's benchmarks and sweeps into jobs.

Each job has a stable, readable id (the Snakemake wildcard ``{job}``) built from its parameters,
so an interrupted campaign finds its finished jobs again. Jobs whose concurrency is the measured
variable (``train``: concurrent jobs; ``analysis``: nodes) come in *waves*: all jobs of a wave are
released together, and the next wave waits until the previous one has finished.
"""

from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass, field
from typing import Any

from afkit.campaign.config import Campaign
from afkit.campaign.locations import resolve


@dataclass(frozen=True)
class Job:
    bench: str
    type: str
    site: str
    dataset: str
    scenario: str
    access: str
    clients: int
    block_size: str
    stride: str
    repetition: int
    wave_size: int = 1  # jobs released together (train: concurrent jobs; analysis: nodes)
    index: int = 0  # this job's number inside its wave
    duration: float = 10.0
    interval: float = 1.0
    payload: str = "builtin"
    branches: tuple[str, ...] = ()
    urls: tuple[str, ...] = field(default=(), compare=False)
    template: str = field(default="", compare=False)

    @property
    def wave(self) -> str:
        # block size and stride are read parameters: an analysis job reads whole baskets (uproot)
        reads = "" if self.type == "analysis" else f".b{self.block_size}.s{self.stride}"
        return (
            f"{self.site}.{self.dataset}.{self.scenario}.{self.access}.c{self.clients}"
            f"{reads}.w{self.wave_size}.r{self.repetition}"
        )

    @property
    def id(self) -> str:
        return f"{self.wave}.i{self.index}"

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["urls"] = list(self.urls)
        d["branches"] = list(self.branches)
        d["id"] = self.id
        d["wave"] = self.wave
        return d


def _sweep_points(bench: dict[str, Any]) -> list[dict[str, Any]]:
    sw = bench["sweep"]
    kind = bench["type"]
    clients = sw["clients"] if kind in ("read", "analysis") else [1]
    waves = sw["jobs"] if kind == "train" else sw["nodes"] if kind == "analysis" else [1]
    blocks = sw["block_size"] if kind == "read" else [sw["block_size"][0]]
    strides = sw["stride"] if kind == "read" else ["0"]
    points = []
    for scen, access, c, w, b, s, r in itertools.product(
        sw["scenario"], sw["access"], clients, waves, blocks, strides, range(sw["repetitions"])
    ):
        points.append(
            {
                "scenario": scen,
                "access": access,
                "clients": c,
                "wave_size": w,
                "block_size": b,
                "stride": s,
                "repetition": r,
            }
        )
    return points


def expand(campaign: Campaign) -> list[Job]:
    """All jobs of the campaign, in a stable order."""
    jobs: list[Job] = []
    loc_cache: dict[tuple[str, str, str, str], Any] = {}
    for bench in campaign.config["benchmarks"]:
        for site in bench["sites"]:
            for ds in bench["datasets"]:
                for p in _sweep_points(bench):
                    key = (site, ds, p["scenario"], p["access"])
                    if key not in loc_cache:
                        loc_cache[key] = resolve(campaign, *key)
                    loc = loc_cache[key]
                    for index in range(p["wave_size"]):
                        jobs.append(
                            Job(
                                bench=bench["name"],
                                type=bench["type"],
                                site=site,
                                dataset=ds,
                                duration=float(bench["duration"]),
                                interval=float(bench["interval"]),
                                payload=bench["payload"],
                                branches=tuple(campaign.config["datasets"][ds]["branches"]),
                                index=index,
                                urls=loc.urls,
                                template=loc.template,
                                **p,
                            )
                        )
    return jobs


def by_id(jobs: list[Job]) -> dict[tuple[str, str], Job]:
    return {(j.bench, j.id): j for j in jobs}


def wave_members(jobs: list[Job]) -> dict[tuple[str, str], list[Job]]:
    """(bench, wave) → its jobs, for the wave-type benchmarks (train, analysis)."""
    out: dict[tuple[str, str], list[Job]] = {}
    for j in jobs:
        if j.type in ("train", "analysis"):
            out.setdefault((j.bench, j.wave), []).append(j)
    return out


def previous_waves(jobs: list[Job]) -> dict[tuple[str, str], str]:
    """For wave-type benchmarks: (bench, wave) → the wave before it (same site and dataset).

    Waves run in sweep order; the first wave of a chain has no entry.
    """
    order: dict[tuple[str, str, str], list[str]] = {}
    for j in jobs:
        if j.type not in ("train", "analysis"):
            continue
        chain = (j.bench, j.site, j.dataset)
        waves = order.setdefault(chain, [])
        if j.wave not in waves:
            waves.append(j.wave)
    out: dict[tuple[str, str], str] = {}
    for (bench, _site, _ds), waves in order.items():
        for prev, w in itertools.pairwise(waves):
            out[(bench, w)] = prev
    return out
