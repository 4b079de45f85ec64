"""Where afkit finds its data: the package data of ``afkit`` (``src/afkit/data/``).

The workflow (``data/workflows``), the templates (``data/templates``) and the image profiles
(``data/images``) ship inside the package, so an installed afkit (a wheel in a venv, on CVMFS)
finds them as a checkout does: through ``importlib.resources.files("afkit")``, here and nowhere
else. The checkout's ``workflows``, ``templates`` and ``images`` are symlinks into ``src/afkit/data``.
A data file that is missing (an incomplete installation) is a :class:`PrereqError` (exit 3).

The workflow's files that the library itself reads or hands on (the campaign schema, the report
template, the job script, the Snakefile, the executor profiles, the config reference) are named
once, in :class:`WorkflowFiles` (``workflow_files()``); no module builds those paths itself.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

from afkit.errors import PrereqError

DATA_FOLDER = "data"  # afkit/data: every data folder of the package
INCOMPLETE_HINT = "afkit's installation is incomplete: reinstall it (pip install --force-reinstall afkit)"


@cache
def data_dir() -> Path:
    """``afkit/data`` of the imported afkit package (a checkout's src/afkit/data, or site-packages)."""
    root = resources.files("afkit") / DATA_FOLDER
    if not isinstance(root, Path) or not root.is_dir():
        raise PrereqError(
            f"afkit's data folder {root} is missing (afkit must be installed as files, not zipped)",
            hint=INCOMPLETE_HINT,
        )
    return root


def data_path(*parts: str) -> Path:
    """The package data file or folder PARTS under ``afkit/data``; exit 3 when it is missing."""
    path = data_dir().joinpath(*parts)
    return require(path)


def require(path: Path) -> Path:
    """PATH (a file of afkit's package data) if it exists; else a clear error (exit 3)."""
    if not path.exists():
        raise PrereqError(f"afkit's data file {path} is missing", hint=INCOMPLETE_HINT)
    return path


def templates_dir() -> Path:
    return data_path("templates")


def images_dir() -> Path:
    return data_path("images")


def workflows_dir() -> Path:
    return data_path("workflows")


@dataclass(frozen=True)
class WorkflowFiles:
    """The layout of ``workflows/``, as the library uses it."""

    root: Path

    @property
    def snakefile(self) -> Path:
        return require(self.root / "Snakefile")

    @property
    def schema(self) -> Path:
        """The campaign schema (JSON Schema in YAML, with defaults)."""
        return require(self.root / "schemas" / "campaign.schema.yaml")

    @property
    def report_templates(self) -> Path:
        """The folder of the HTML report's Jinja2 templates; ``report_template`` is the page."""
        return require(self.root / "report")

    report_template = "campaign.html.j2"

    @property
    def default_campaign(self) -> Path:
        """Planned when snakemake gets no ``--configfile`` (the workflow catalog's convention)."""
        return require(self.root / "config" / "config.yaml")

    @property
    def config_readme(self) -> Path:
        """Every campaign key, generated from the schema (``afkit campaign config-doc``)."""
        return require(self.root / "config" / "README.md")

    @property
    def sandbox_wrapper(self) -> Path:
        """The HTCondor job wrapper of a site without the submit host's files (runs the job's
        snakemake from the transferred sandbox with the installed workflow)."""
        return require(self.root / "scripts" / "htcondor-sandbox-job")

    def profile(self, executor: str) -> Path:
        """The snakemake profile of an executor (local, htcondor, slurm)."""
        return require(self.root / "profiles" / executor)


def workflow_files() -> WorkflowFiles:
    return WorkflowFiles(workflows_dir())


def beside(folder: str | Path, path: str | Path) -> Path:
    """PATH named relative to FOLDER (a campaign file's folder): as given when absolute, else
    FOLDER/PATH with ``..`` taken by name, as the shell's ``cd`` does, so a folder reached through a
    symlink (the checkout's ``workflows`` link into the package) keeps the neighbours it is named with."""
    p = Path(path)
    return p if p.is_absolute() else Path(os.path.normpath(Path(folder) / p))


def cache_dir() -> Path:
    """``${XDG_CACHE_HOME:-~/.cache}/afkit``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "afkit"
