"""Fixtures shared by the integration tests: the afkit bench image as a SIF and as a sandbox."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from itsupport import mkbase


@pytest.fixture(scope="module")
def bench_sif() -> Path:
    """The bench image (``scripts/mkbase bench``, or ``$AFKIT_BENCH_SIF``)."""
    given = os.environ.get("AFKIT_BENCH_SIF")
    path = Path(given) if given else mkbase("bench")
    assert path.is_file(), f"no bench SIF at {path}"
    return path


@pytest.fixture(scope="module")
def bench_sandbox() -> Path:
    """The bench image as a build base (``scripts/mkbase --sandbox bench``, or ``$AFKIT_BENCH_SANDBOX``)."""
    given = os.environ.get("AFKIT_BENCH_SANDBOX")
    path = Path(given) if given else mkbase("--sandbox", "bench")
    assert (path / "opt" / "afkit" / "bin" / "python3").exists(), f"no bench sandbox at {path}"
    return path
