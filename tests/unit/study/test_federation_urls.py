"""``afkit study run`` in the box reads the federation from ``afkit federation urls`` (a subprocess:
afkit carries no testbed code); when that command fails, the study says why, with its hint."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from afkit.errors import PrereqError
from afkit.study import recipe


def _urls_fails(monkeypatch: pytest.MonkeyPatch, code: int, stderr: str) -> None:
    def run(cmd: list[str], **_kw: Any) -> subprocess.CompletedProcess[str]:
        assert cmd[-2:] == ["federation", "urls"]
        return subprocess.CompletedProcess(cmd, code, "", stderr)

    monkeypatch.setattr(recipe.subprocess, "run", run)


def test_without_the_testbed_package_the_study_names_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    missing = "'afkit federation' is provided by the afkit-testbed package, which is not installed"
    install = "install it from afkit's checkout: pip install -e testbed"
    _urls_fails(monkeypatch, 3, f"afkit: error: {missing}\nafkit: hint: {install}\n")
    with pytest.raises(PrereqError) as err:
        recipe.federation_urls()
    assert str(err.value) == f"the federation in the box is not available (afkit federation urls: {missing})"
    assert err.value.hint == f"{install}; or run the study at your sites with --sites FILE"


def test_a_federation_that_is_not_up_is_named_with_its_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    stderr = "afkit: error: the federation is not up\nafkit: hint: scripts/testbed federation up\n"
    _urls_fails(monkeypatch, 3, stderr)
    with pytest.raises(PrereqError) as err:
        recipe.federation_urls()
    assert "(afkit federation urls: the federation is not up)" in str(err.value)
    assert err.value.hint == "scripts/testbed federation up; or run the study at your sites with --sites FILE"


def test_a_failure_without_afkits_lines_is_named_by_its_last_line(monkeypatch: pytest.MonkeyPatch) -> None:
    _urls_fails(monkeypatch, 1, "something\nbroke badly\n")
    with pytest.raises(PrereqError) as err:
        recipe.federation_urls()
    assert "(afkit federation urls: broke badly)" in str(err.value)
    assert err.value.hint.startswith("start it (scripts/testbed federation up); or run")
