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


def test_the_integration_groups_handed_out_first_name_modules_that_exist() -> None:
    """tests/integration/conftest.py's LONGEST_FIRST: a renamed module would lose its place at the
    front of the queue (and run on alone at the end of make test)."""
    integration = UNIT.parent / "integration"
    text = (integration / "conftest.py").read_text(encoding="utf-8")
    block = text.split("LONGEST_FIRST = (", 1)[1].split(")", 1)[0]
    names = [w.strip().strip('",') for w in block.split() if w.strip().strip('",')]
    assert len(names) >= 3 and len(set(names)) == len(names)
    assert [n for n in names if not (integration / f"{n}.py").is_file()] == []
