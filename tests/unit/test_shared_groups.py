"""The unit tests' pytest-xdist groups (tests/unit/conftest.py SHARED_GROUPS) name modules that exist."""

from __future__ import annotations

import importlib.util
from pathlib import Path

UNIT = Path(__file__).resolve().parent


def test_every_grouped_module_exists() -> None:
    """A module renamed without its entry would lose its group: its shared fixture made once per worker."""
    spec = importlib.util.spec_from_file_location("unit_conftest", UNIT / "conftest.py")
    assert spec is not None and spec.loader is not None
    conftest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conftest)
    missing = [m for m in conftest.SHARED_GROUPS if not (UNIT / f"{m}.py").is_file()]
    assert conftest.SHARED_GROUPS and missing == []
