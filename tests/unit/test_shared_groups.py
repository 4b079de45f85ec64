"""The unit tests' pytest-xdist groups (tests/unit/conftest.py SHARED_GROUPS) name modules that exist."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import xdistsupport

UNIT = Path(__file__).resolve().parent


def test_every_grouped_module_exists() -> None:
    """A module renamed without its entry would lose its group: its shared fixture made once per worker."""
    spec = importlib.util.spec_from_file_location("unit_conftest", UNIT / "conftest.py")
    assert spec is not None and spec.loader is not None
    conftest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conftest)
    missing = [m for m in conftest.SHARED_GROUPS if not (UNIT / f"{m}.py").is_file()]
    assert conftest.SHARED_GROUPS and missing == []


def test_the_scheduler_puts_a_groups_tests_in_one_scope(
    pytestconfig: pytest.Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    """tests/xdistsupport.py, which both conftests' pytest_xdist_make_scheduler return: its scope of a
    test is what the conftest's SCOPE_OF says (one scope: one worker)."""
    real = pytestconfig.getvalue
    monkeypatch.setattr(pytestconfig, "getvalue", lambda name: ["2*popen"] if name == "tx" else real(name))
    sched = xdistsupport.scheduler(pytestconfig, None, lambda nodeid: nodeid.split("::")[0])
    assert sched.numnodes == 2
    assert sched._split_scope("tests/unit/a.py::test_x") == sched._split_scope("tests/unit/a.py::test_y")
    assert sched._split_scope("tests/unit/a.py::test_x") != sched._split_scope("tests/unit/b.py::test_x")
