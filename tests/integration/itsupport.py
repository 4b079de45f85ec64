"""Helpers shared by the integration tests (they run inside the testbed: scripts/testbed run)."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ROOT_DATA = REPO / "tests" / "data"  # scikit-hep-testdata files, BSD-3


def require_env(name: str) -> str:
    """A variable the testbed sets; a clear failure (never a skip) outside the testbed."""
    value = os.environ.get(name)
    if not value:
        pytest.fail(f"${name} is not set: run this inside the testbed (scripts/testbed run)")
    return value


def mkbase(*args: str) -> Path:
    """The path ``scripts/mkbase ARGS`` prints (run-tests builds the image on the host beforehand)."""
    proc = subprocess.run(
        [str(REPO / "scripts" / "mkbase"), *args], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        pytest.fail(
            f"scripts/mkbase {' '.join(args)} failed (build it on the host first):\n{proc.stderr[-2000:]}"
        )
    return Path(proc.stdout.strip().splitlines()[-1])


@contextmanager
def origin_dataset(prefix: str, files: tuple[str, ...], owner: str | None = None) -> Iterator[str]:
    """A new directory of real ROOT files in the testbed origin's namespace; yields its name.

    Removed afterwards (only the directory made here). ``owner`` also chowns it (e.g. for jobs
    running as user afkit).
    """
    directory = Path(require_env("AFKIT_XROOTD_DATA")) / f"{prefix}-{uuid.uuid4().hex[:8]}"
    directory.mkdir()
    try:
        for name in files:
            shutil.copyfile(ROOT_DATA / name, directory / name)
        for path in (directory, *directory.iterdir()):
            os.chmod(path, 0o775 if path.is_dir() else 0o644)
            if owner:
                shutil.chown(path, owner, owner)
        yield directory.name
    finally:
        shutil.rmtree(directory)
