"""Shared fixtures of the image builder's unit tests: the generated CVMFS fixture, a tiny tree."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[3]
MKCVMFS = REPO / "tests" / "fixtures" / "mkcvmfs"


@pytest.fixture(scope="session")
def cvmfs_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A generated alice.cern.ch fixture (tests/fixtures/mkcvmfs --out), once per session."""
    out = tmp_path_factory.mktemp("cvmfs")
    proc = subprocess.run(
        [str(MKCVMFS), "--out", str(out), "--repos", "alice.cern.ch", "-q"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, f"mkcvmfs failed: {proc.stderr}"
    return out


@pytest.fixture(scope="session")
def fixture_facts(cvmfs_root: Path) -> dict[str, Any]:
    facts: dict[str, Any] = json.loads((cvmfs_root / "alice.cern.ch" / ".afkit-fixture.json").read_text())
    return facts


@pytest.fixture
def on_fixture(cvmfs_root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AFKIT_CVMFS_ROOT", str(cvmfs_root))
    return cvmfs_root / "alice.cern.ch"
