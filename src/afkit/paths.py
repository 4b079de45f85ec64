"""Where afkit finds its data folders (``images/``, ``templates/``, ``workflows/``)."""

from __future__ import annotations

import os
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


def cache_dir() -> Path:
    """``${XDG_CACHE_HOME:-~/.cache}/afkit``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "afkit"
