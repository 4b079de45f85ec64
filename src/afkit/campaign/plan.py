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
import json
import os
import sys
from pathlib import Path
from typing import TypedDict

from afkit.atomic import write_atomic, write_if_changed
from afkit.campaign import credentials
from afkit.campaign.config import BenchmarkConfig, Campaign, CampaignConfig, sweep_axes
from afkit.campaign.contract import CredentialSpec, Job, JobSpec, RootOptions, SiteSpec
from afkit.campaign.layout import ResultsLayout
from afkit.campaign.locations import Location, resolve

__all__ = [
    "Job",
    "JobSpec",
    "by_id",
    "digests",
    "expand",
    "present_specs",
    "previous_waves",
    "specs",
    "wave_members",
    "write_inputs",
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
    axes = sweep_axes(bench)
    return [
        SweepPoint(scenario=scen, access=access, clients=c, wave_size=w, block_size=b, stride=s, repetition=r)
        for scen, access, c, w, b, s, r in itertools.product(
            axes["scenario"],
            axes["access"],
            axes["clients"],
            axes["wave"],
            axes["block_size"],
            axes["stride"],
            axes["repetition"],
        )
    ]


def expand(campaign: Campaign) -> list[Job]:
    """All jobs of the campaign, in a stable order. A run expands its campaign once
    (afkit.campaign.runplan); the audit event lets a test count it."""
    sys.audit("afkit.campaign.expand", campaign.name)
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


def spec_path(results: str, job: Job) -> str:
    return ResultsLayout(results).spec(job.bench, job.id)


def specs(campaign: Campaign, jobs: list[Job], results: str | None = None) -> list[JobSpec]:
    """Each job's spec: the job, its site, tree, binds, where its image description, record and
    log are (RESULTS: the campaign's results directory as the workflow names it). Nothing else of
    the campaign goes in (a spec changes only when what its job does changes)."""
    cfg = campaign.config
    layout = campaign.layout if results is None else ResultsLayout(results)
    sites = {name: SiteSpec.from_config(name, site) for name, site in cfg["sites"].items()}
    binds = tuple(sorted({s["path"] for s in cfg["storage"].values() if s.get("path")}))
    image = layout.image_json
    # payload root: how its ROOT reads (the benchmark's root key, schema defaults filled in)
    roots = {b["name"]: RootOptions.from_dict(b.get("root", {})) for b in cfg["benchmarks"]
             if b["payload"] == "root"}  # fmt: skip
    creds = {name: c.spec() for name, c in credentials.of(campaign).items()}
    login = str(credentials.registry_login(campaign) or "")
    out = []
    for j in jobs:
        out.append(JobSpec(job=j, campaign=campaign.name, site=sites[j.site],
                           tree=_tree(cfg, j), binds=binds, image=image,
                           record=layout.record(j.bench, j.id), log=layout.record_log(j.bench, j.id),
                           root=roots.get(j.bench, RootOptions()),
                           credential=creds.get(_storage(cfg, j), CredentialSpec()),
                           registry_login="" if sites[j.site].shared_fs else login))  # fmt: skip
    return out


def _storage(cfg: CampaignConfig, job: Job) -> str:
    """The storage JOB's dataset is on (its credential is the job's)."""
    return cfg["datasets"][job.dataset]["storage"]


def _tree(cfg: CampaignConfig, job: Job) -> str:
    """The tree JOB reads: its dataset's for an analysis job, none for the others (they read
    bytes: a fixed tree name is no change of theirs)."""
    return str(cfg["datasets"][job.dataset]["tree"]) if job.type == "analysis" else ""


def digests(campaign: Campaign, jobs: list[Job]) -> dict[tuple[str, str], str]:
    """(bench, id) → the SHA-256 of the job's spec as planning makes it now: a record whose
    ``spec_sha256`` differs is stale (afkit.campaign.current)."""
    return {(s.job.bench, s.job.id): s.digest() for s in specs(campaign, jobs)}


def write_inputs(campaign: Campaign, results: str) -> int:
    """Write what the campaign's image and each dataset's manifest are made from (RESULTS/plan/
    image.json, RESULTS/plan/dataset/NAME.json: the inputs of rules image and dataset) unless the
    file already holds it: an edit of the campaign redoes the image or a manifest only when it
    changed what they are made from (and then every job that reads them). Return how many were
    written."""
    from afkit.campaign.dataset import apptainer_args_for

    cfg = campaign.config
    layout = ResultsLayout(results)
    image = {"image": cfg["image"], "campaign_dir": str(campaign.base_dir)}
    written = int(write_if_changed(layout.plan_image, _json(image), mode=0o644))
    for name, ds in cfg["datasets"].items():
        made_of = {
            "dataset": {k: v for k, v in ds.items() if k not in ("tree", "branches")},
            "storage": cfg["storage"][ds["storage"]],
            "apptainer_args": apptainer_args_for(cfg, name),
        }
        written += write_if_changed(layout.plan_dataset(name), _json(made_of), mode=0o644)
    return written


def _json(data: object) -> str:
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def write_specs(campaign: Campaign, jobs: list[Job], results: str) -> int:
    """Write each job's spec to RESULTS/jobspec/BENCH/ID.json unless the file already holds it (an
    unchanged spec keeps its time: its job does not rerun); return how many were written.

    ``RESULTS/jobspec/.plan.sha256`` is a digest of what the specs are made from (the jobs, the
    campaign, this contract): when it matches and every spec is there, nothing is made, read or
    written (planning a large campaign again costs no file reads)."""
    root = Path(ResultsLayout(results).specs_dir)
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
    there = _listed(Path(ResultsLayout(results).specs_dir))
    if not there:  # a campaign never run: no path to make
        return set()
    return {(j.bench, j.id) for j in jobs if (p := spec_path(results, j)) in there or str(Path(p)) in there}
