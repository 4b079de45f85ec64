"""The executors a campaign's sites can name (``sites.*.executor``): a registry.

One module per executor beside this file (``local``, ``htcondor``, ``slurm``), each an
implementation of :class:`afkit.campaign.executors.base.Executor`; ``REGISTRY`` maps the
campaign's name to it. The campaign schema's ``executor`` values are this registry's keys
(afkit.campaign.config.load_schema). Adding an executor is a new module and one line here
(docs/campaigns.md, "Adding an executor"); its snakemake profile is
``workflows/profiles/NAME/config.yaml``.
"""

from __future__ import annotations

from collections.abc import Mapping

from afkit.campaign.executors import htcondor, local, slurm
from afkit.campaign.executors.base import Executor, Site, SiteKey

__all__ = ["REGISTRY", "Executor", "Site", "SiteKey", "get", "identify", "of_plugin", "worker_site"]

# sites.*.executor -> the executor; the order is the one the schema's allowed values are listed in
REGISTRY: dict[str, Executor] = {
    "local": local.EXECUTOR,
    "htcondor": htcondor.EXECUTOR,
    "slurm": slurm.EXECUTOR,
}


def get(name: str) -> Executor:
    """The executor NAME (a validated campaign names only registered ones)."""
    return REGISTRY[name]


def of_plugin(plugin: str) -> str:
    """The executor whose jobs snakemake's executor plugin PLUGIN runs (e.g. ``afkit-slurm`` ->
    ``slurm``); PLUGIN itself when no executor names it (e.g. upstream's ``slurm``)."""
    return next((e.name for e in REGISTRY.values() if plugin in (e.plugin, e.name)), plugin)


def _batch_first() -> list[Executor]:
    return sorted(REGISTRY.values(), key=lambda e: not e.batch)


def identify(env: Mapping[str, str]) -> tuple[str, str]:
    """(executor, batch job id) of the process with environment ENV: the first batch executor
    that recognises it, else the one that runs jobs in snakemake's process."""
    for executor in _batch_first():
        job_id = executor.identity(env)
        if job_id is not None:
            return executor.name, job_id
    return "", ""


def worker_site(env: Mapping[str, str]) -> str:
    """The batch system's site of the worker with environment ENV; empty for a local job."""
    for executor in _batch_first():
        site = executor.worker_site(env)
        if site is not None:
            return site
    return ""
