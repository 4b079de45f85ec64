"""Expand a campaign's benchmarks and sweeps into jobs.

Each job has a stable, readable id (the Snakemake wildcard ``{job}``) built from its parameters,
so an interrupted campaign finds its finished jobs again. Jobs whose concurrency is the measured
variable (``train``: concurrent jobs; ``analysis`` and ``read``: nodes) come in *waves*: all jobs of
a wave are released together, and the next wave waits until the previous one has finished. A read
benchmark is a wave benchmark only when its nodes sweep has a value above 1 (then all its jobs are,
the one-node ones too: each wave is measured alone); otherwise its jobs run as they always did.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import os
from pathlib import Path
from typing import TypedDict

from afkit.atomic import write_atomic, write_if_changed
from afkit.campaign.config import BenchmarkConfig, Campaign
from afkit.campaign.contract import Job, JobSpec, RootOptions, SiteSpec
from afkit.campaign.locations import Location, resolve

__all__ = [
    "Job",
    "JobSpec",
    "by_id",
    "expand",
    "present_specs",
    "previous_waves",
    "specs",
    "wave_members",
    "write_specs",
]


class SweepPoint(TypedDict):
    """One point of a benchmark's sweep: the Job fields it sets."""

    scenario: str
    access: str
    clients: int
    wave_size: int
    block_size: str
    stride: str
    repetition: int


def _sweep_points(bench: BenchmarkConfig) -> list[SweepPoint]:
    sw = bench["sweep"]
    kind = bench["type"]
    clients = sw["clients"] if kind in ("read", "analysis") else [1]
    waves = sw["jobs"] if kind == "train" else sw["nodes"] if kind in ("analysis", "read") else [1]
    blocks = sw["block_size"] if kind == "read" else [sw["block_size"][0]]
    strides = sw["stride"] if kind == "read" else ["0"]
    return [
        SweepPoint(scenario=scen, access=access, clients=c, wave_size=w, block_size=b, stride=s, repetition=r)
        for scen, access, c, w, b, s, r in itertools.product(
            sw["scenario"], sw["access"], clients, waves, blocks, strides, range(sw["repetitions"])
        )
    ]


def expand(campaign: Campaign) -> list[Job]:
    """All jobs of the campaign, in a stable order."""
    jobs: list[Job] = []
    loc_cache: dict[tuple[str, str, str, str], Location] = {}
    for bench in campaign.config["benchmarks"]:
        # a spread train: one wave chain over all its datasets, job k of a wave reading dataset k mod D
        chains = [list(bench["datasets"])] if bench["spread"] else [[ds] for ds in bench["datasets"]]
        group = "+".join(bench["datasets"]) if bench["spread"] else ""
        for site in bench["sites"]:
            for chain in chains:
                for p in _sweep_points(bench):
                    for index in range(p["wave_size"]):
                        ds = chain[index % len(chain)]
                        key = (site, ds, p["scenario"], p["access"])
                        if key not in loc_cache:
                            loc_cache[key] = resolve(campaign, *key)
                        loc = loc_cache[key]
                        jobs.append(
                            Job(
                                bench=bench["name"],
                                type=bench["type"],
                                site=site,
                                dataset=ds,
                                group=group,
                                demand=bench.get("demand", ""),
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


def wave_benches(jobs: list[Job]) -> set[str]:
    """The benchmarks whose jobs come in waves: train and analysis, and read with a nodes sweep."""
    return {j.bench for j in jobs if j.type in ("train", "analysis") or j.wave_size > 1}


def wave_members(jobs: list[Job]) -> dict[tuple[str, str], list[Job]]:
    """(bench, wave) → its jobs, for the wave-type benchmarks (:func:`wave_benches`)."""
    waved = wave_benches(jobs)
    out: dict[tuple[str, str], list[Job]] = {}
    for j in jobs:
        if j.bench in waved:
            out.setdefault((j.bench, j.wave), []).append(j)
    return out


def previous_waves(jobs: list[Job]) -> dict[tuple[str, str], str]:
    """For wave-type benchmarks: (bench, wave) → the wave before it (same site and dataset).

    Waves run in sweep order; the first wave of a chain has no entry.
    """
    waved = wave_benches(jobs)
    order: dict[tuple[str, str, str], list[str]] = {}
    for j in jobs:
        if j.bench not in waved:
            continue
        chain = (j.bench, j.site, j.chain)
        waves = order.setdefault(chain, [])
        if j.wave not in waves:
            waves.append(j.wave)
    out: dict[tuple[str, str], str] = {}
    for (bench, _site, _ds), waves in order.items():
        for prev, w in itertools.pairwise(waves):
            out[(bench, w)] = prev
    return out


def record_path(results: str, job: Job) -> str:
    """Where JOB's record goes (the workflow's rule ``job``); its log is beside it (``.log``)."""
    return f"{results}/job/{job.bench}/{job.id}.json"


def spec_path(results: str, job: Job) -> str:
    return f"{results}/jobspec/{job.bench}/{job.id}.json"


def specs(campaign: Campaign, jobs: list[Job], results: str | None = None) -> list[JobSpec]:
    """Each job's spec: the job, its site, tree, binds, where its image description, record and
    log are (RESULTS: the campaign's results directory as the workflow names it)."""
    cfg = campaign.config
    results = str(campaign.results_dir) if results is None else results
    sites = {name: SiteSpec.from_config(name, site) for name, site in cfg["sites"].items()}
    binds = tuple(sorted({s["path"] for s in cfg["storage"].values() if s.get("path")}))
    name, digest = campaign.name, campaign.hash
    image = f"{results}/image/image.json"
    # payload root: how its ROOT reads (the benchmark's root key, schema defaults filled in)
    roots = {b["name"]: RootOptions.from_dict(b.get("root", {})) for b in cfg["benchmarks"]
             if b["payload"] == "root"}  # fmt: skip
    out = []
    for j in jobs:
        record = record_path(results, j)
        out.append(JobSpec(job=j, campaign=name, campaign_hash=digest, site=sites[j.site],
                           tree=str(cfg["datasets"][j.dataset]["tree"]), binds=binds, image=image,
                           record=record, log=record[: -len(".json")] + ".log",
                           root=roots.get(j.bench, RootOptions())))  # fmt: skip
    return out


def write_specs(campaign: Campaign, jobs: list[Job], results: str) -> int:
    """Write each job's spec to RESULTS/jobspec/BENCH/ID.json unless the file already holds it (an
    unchanged spec keeps its time: its job does not rerun); return how many were written.

    ``RESULTS/jobspec/.plan.sha256`` is a digest of what the specs are made from (the jobs, the
    campaign, this contract): when it matches and every spec is there, nothing is made, read or
    written (planning a large campaign again costs no file reads)."""
    root = Path(results) / "jobspec"
    made_by = hashlib.sha256(Path(__file__).with_name("contract.py").read_bytes()).hexdigest()
    key = repr((made_by, campaign.hash, campaign.config, results, jobs))
    digest = hashlib.sha256(key.encode()).hexdigest()
    stamp = root / ".plan.sha256"
    names = [spec_path(results, j) for j in jobs]
    if _stamp_holds(stamp, digest) and _all_there(root, names):
        return 0
    written = sum(write_if_changed(name, spec.to_json(), mode=0o644)
                  for name, spec in zip(names, specs(campaign, jobs, results), strict=True))  # fmt: skip
    write_atomic(stamp, digest + "\n", mode=0o644)
    return written


def _stamp_holds(stamp: Path, digest: str) -> bool:
    try:
        return stamp.read_text(encoding="utf-8").strip() == digest
    except OSError:
        return False


def _all_there(root: Path, names: list[str]) -> bool:
    """Every spec file exists (one directory listing per benchmark, not a stat per file)."""
    there = _listed(root)
    return all(p in there or str(Path(p)) in there for p in names)


def _listed(root: Path) -> set[str]:
    """The files RESULTS/jobspec/BENCH/* (empty when there is no such folder)."""
    there: set[str] = set()
    with contextlib.suppress(OSError):
        for bench in os.scandir(root):
            if bench.is_dir():
                there.update(f"{bench.path}/{e.name}" for e in os.scandir(bench.path))
    return there


def present_specs(jobs: list[Job], results: str) -> set[tuple[str, str]]:
    """The (bench, id) of the JOBS whose spec file exists (a dry run writes none: it declares the
    specs that a run before wrote, so that it sees the jobs as the run will)."""
    there = _listed(Path(results) / "jobspec")
    return {(j.bench, j.id) for j in jobs if (p := spec_path(results, j)) in there or str(Path(p)) in there}
