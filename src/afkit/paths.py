"""Where afkit finds its data folders (``images/``, ``templates/``, ``workflows/``).

The workflow's files that the library itself reads or hands on (the campaign schema, the report
template, the job script, the Snakefile, the executor profiles, the config reference) are named
once, in :class:`WorkflowFiles` (``workflow_files()``); no module builds those paths itself.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path


@cache
def project_root() -> Path:
    """The afkit checkout (``$AFKIT_HOME`` wins; else found upwards from this file)."""
    env = os.environ.get("AFKIT_HOME")
    if env:
        return Path(env).resolve()
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "templates").is_dir() and (parent / "images").is_dir():
            return parent
    raise RuntimeError("cannot find the afkit data folders; set AFKIT_HOME to the afkit checkout")


def templates_dir() -> Path:
    return project_root() / "templates"


def images_dir() -> Path:
    return project_root() / "images"


def workflows_dir() -> Path:
    return project_root() / "workflows"


@dataclass(frozen=True)
class WorkflowFiles:
    """The layout of ``workflows/``, as the library uses it."""

    root: Path

    @property
    def snakefile(self) -> Path:
        return self.root / "Snakefile"

    @property
    def schema(self) -> Path:
        """The campaign schema (JSON Schema in YAML, with defaults)."""
        return self.root / "schemas" / "campaign.schema.yaml"

    @property
    def report_templates(self) -> Path:
        """The folder of the HTML report's Jinja2 templates; ``report_template`` is the page."""
        return self.root / "report"

    report_template = "campaign.html.j2"

    @property
    def default_campaign(self) -> Path:
        """Planned when snakemake gets no ``--configfile`` (the workflow catalog's convention)."""
        return self.root / "config" / "config.yaml"

    @property
    def config_readme(self) -> Path:
        """Every campaign key, generated from the schema (``afkit campaign config-doc``)."""
        return self.root / "config" / "README.md"

    @property
    def sandbox_wrapper(self) -> Path:
        """The HTCondor job wrapper of a site without the submit host's files (runs the job's
        snakemake from the transferred sandbox with the installed workflow)."""
        return self.root / "scripts" / "htcondor-sandbox-job"

    def profile(self, executor: str) -> Path:
        """The snakemake profile of an executor (local, htcondor, slurm)."""
        return self.root / "profiles" / executor


def workflow_files() -> WorkflowFiles:
    return WorkflowFiles(workflows_dir())


def cache_dir() -> Path:
    """``${XDG_CACHE_HOME:-~/.cache}/afkit``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "afkit"
