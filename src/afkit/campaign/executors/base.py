"""What every executor of a campaign provides (the protocol), and the defaults of a plain one.

An executor is the way a site's jobs run: ``local`` (threads of snakemake's own process),
``htcondor`` and ``slurm`` (batch jobs through afkit's snakemake executor plugins,
``src/snakemake_executor_plugin_afkit_{htcondor,slurm}``). Everything afkit knows about one of
them lives in its module beside this one: its snakemake plugin, the site keys only it acts on,
the snakemake arguments of a site's call, how a job recognises the batch job running it (its
identity and site), and how afkit asks the batch system about submitted jobs and cancels them.
The registry (``afkit.campaign.executors.REGISTRY``) maps a campaign's ``sites.*.executor`` to
one. The split follows law's backends, one package each under ``law/contrib/<backend>``
(riga/law: ``law/contrib/htcondor/job.py``, ``law/contrib/slurm/job.py``) behind one abstract
job manager (``law/job/base.py``, ``BaseJobManager``: submit, cancel, query).

Standard library only: the job core on a worker without the submit host's files imports this
(afkit.campaign.jobcore, afkit.campaign.job).
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from re import Pattern
from typing import Any, Protocol

Site = Mapping[str, Any]  # one validated ``sites.NAME`` of a campaign


@dataclass(frozen=True)
class SiteKey:
    """A site key only its executor acts on (the others would silently ignore it).

    ``used(value)``: the site asks for it; ``refusal``: the problem named when a site of another
    executor does, formatted with ``site`` (the site's name), ``executor`` (its executor) and
    ``owner`` (this key's executor); ``schema``: the key's JSON Schema, added to the campaign
    schema's site keys (None: a key of every site, defined in the campaign schema itself)."""

    used: Callable[[Any], bool]
    refusal: str
    schema: Mapping[str, Any] | None = None


def present(value: Any) -> bool:
    """Any value asks for the key."""
    return True


def own_key(key: str, description: str, **schema: Any) -> SiteKey:
    """A site KEY of one executor, any value of which asks for it: a string with its DESCRIPTION
    and the further JSON Schema keywords SCHEMA (pattern, minLength, ...)."""
    refusal = f"sites.{{site}}.{key}: only for executor '{{owner}}', not '{{executor}}'; "
    schema = {"type": "string", **schema, "description": description}
    return SiteKey(present, refusal + "remove it or set sites.{site}.executor: {owner}", schema)


class Executor(Protocol):
    """One executor: ``REGISTRY[name]``."""

    @property
    def name(self) -> str:
        """The campaign's ``sites.*.executor`` and the name of its profile (workflows/profiles)."""
        ...

    @property
    def plugin(self) -> str:
        """Snakemake's executor plugin that the profile names (``executor:``)."""
        ...

    @property
    def batch(self) -> bool:
        """Jobs go to a batch system: each runs afkit's job core on its spec
        (afkit.campaign.jobcore); otherwise they run in snakemake's process, a wave as one job."""
        ...

    @property
    def site_keys(self) -> Mapping[str, SiteKey]:
        """The site keys only this executor acts on."""
        ...

    @property
    def submitted(self) -> Pattern[str] | None:
        """The line snakemake's plugin logs for a submitted job (group 1: the batch job id)."""
        ...

    def site_call(self, site: Site) -> tuple[list[str], list[str]]:
        """(``--set-resources`` values, other snakemake options) of SITE's own snakemake call;
        none: the site can share a call with the other sites of this executor."""
        ...

    def call_options(self, sites: Sequence[Site]) -> list[str]:
        """Snakemake options of a call running SITES (all of this executor)."""
        ...

    def identity(self, env: Mapping[str, str]) -> str | None:
        """The batch job id when this executor runs the process with environment ENV, else None."""
        ...

    def worker_site(self, env: Mapping[str, str]) -> str | None:
        """The batch system's site of the worker (None: not one of this executor's jobs)."""
        ...

    def queued(self, ids: Iterable[str]) -> int | None:
        """How many of the batch job IDS are still queued or running (None: cannot say)."""
        ...

    def cancel(self, ids: Iterable[str]) -> None:
        """Remove the batch job IDS from the batch system (jobs a killed snakemake left behind)."""
        ...

    def tagged(self, tag: str) -> tuple[list[str], list[str]]:
        """(``--set-resources`` values, other snakemake options) that mark every batch job of a
        call with the campaign's TAG (ResultsLayout.batch_tag), so afkit finds them all after an
        interrupt, also those submitted while snakemake was being stopped."""
        ...

    def active(self, tag: str) -> list[BatchJob] | None:
        """The batch jobs marked TAG that are still pending, configuring, running or completing
        (None: the batch system cannot be asked from here)."""
        ...


@dataclass(frozen=True)
class BatchJob:
    """A batch job still known to its batch system: its id, its state as the batch system names
    it (squeue's %T, condor_q's JobStatus letter) and the node it runs on ("" while queued)."""

    id: str
    state: str
    node: str = ""

    def __str__(self) -> str:
        return f"{self.id} ({self.state}{' on ' + self.node if self.node else ''})"


class Plain:
    """The defaults: no site keys or options, not a batch system. Subclass and override."""

    name = ""
    plugin = ""
    batch = False
    site_keys: Mapping[str, SiteKey] = {}
    submitted: Pattern[str] | None = None

    def site_call(self, site: Site) -> tuple[list[str], list[str]]:
        return [], []

    def call_options(self, sites: Sequence[Site]) -> list[str]:
        return []

    def identity(self, env: Mapping[str, str]) -> str | None:
        return None

    def worker_site(self, env: Mapping[str, str]) -> str | None:
        return None

    def queued(self, ids: Iterable[str]) -> int | None:
        return 0

    def cancel(self, ids: Iterable[str]) -> None:
        return None

    def tagged(self, tag: str) -> tuple[list[str], list[str]]:
        return [], []

    def active(self, tag: str) -> list[BatchJob] | None:
        return []


def output_lines(cmd: list[str]) -> list[str] | None:
    """CMD's output as lines, None when it cannot say (not installed, failed, timed out)."""
    if shutil.which(cmd[0]) is None:
        return None
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.splitlines() if proc.returncode == 0 else None


def output_words(cmd: list[str]) -> list[str] | None:
    """CMD's output as words, None when it cannot say (not installed, failed, timed out)."""
    lines = output_lines(cmd)
    return None if lines is None else [w for line in lines for w in line.split()]


def run_quietly(cmd: list[str]) -> None:
    """Run CMD when it is installed; its failure is not afkit's (the jobs may have left already)."""
    if shutil.which(cmd[0]) is None:
        return
    try:
        subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return
