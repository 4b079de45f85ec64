"""afkit's testbed: the federation in the box (``afkit federation``), outside the product package.

A distribution of its own (``testbed/pyproject.toml``, ``afkit-testbed``), installed editable into a
checkout's venvs beside afkit (``make venv``, the testbed's venv, ``ci/venv.sh``); afkit's wheel
holds none of it. Its command reaches ``afkit`` through the entry point group ``afkit.commands``
(``afkit.cli``).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from afkit.errors import PrereqError

__version__ = "0.1.0"
INSTALL_HINT = "install the testbed package from afkit's checkout: pip install -e testbed"


def templates_dir() -> Path:
    """The testbed's templates (``afkit_testbed/templates``: the federation's link file, its batch
    daemons' configuration); exit 3 when missing."""
    root = resources.files("afkit_testbed") / "templates"
    if not isinstance(root, Path) or not root.is_dir():
        raise PrereqError(f"the testbed's templates folder {root} is missing", hint=INSTALL_HINT)
    return root
