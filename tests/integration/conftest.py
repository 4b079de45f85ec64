"""Fixtures shared by the integration tests: the afkit bench image as a SIF and as a sandbox, and
the demo's image (the ALICE tag with the real ROOT on the bench base)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from itsupport import afkit, mkbase

REAL_ROOT_TAG = "AliPhysics/vAN-20251126_ROOT6-1"  # the fixture's ALICE tag with the real ROOT 6.40


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


@pytest.fixture(scope="module")
def alice_root_sif(bench_sandbox: Path) -> Iterator[Path]:
    """The image `make demo` links as build/alice-root.sif: REAL_ROOT_TAG on the bench base, lz4
    (``$AFKIT_ALICE_ROOT_SIF`` instead, when given), in a directory other users can read (the
    federation's campaign runs as user afkit)."""
    given = os.environ.get("AFKIT_ALICE_ROOT_SIF")
    if given:
        yield Path(given)
        return
    work = Path(tempfile.mkdtemp(prefix="afkit-alice-root-", dir="/tmp"))
    work.chmod(0o755)
    try:
        proc = afkit("image", "build", "--profile", "alice", "-t", REAL_ROOT_TAG, "-o", str(work / "img"),
                     "--compression", "lz4", "--base", f"localimage:{bench_sandbox}", "-y",
                     timeout=900)  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-3000:]
        sif = Path(proc.stdout.strip().splitlines()[-1])
        sif.parent.chmod(0o755)
        yield sif
    finally:
        shutil.rmtree(work, ignore_errors=True)  # the directory this fixture made
