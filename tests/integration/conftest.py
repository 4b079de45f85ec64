"""Fixtures shared by the integration tests: the afkit bench image as a SIF and as a sandbox, and
the demo's image (the ALICE tag with the real ROOT on the bench base); and the groups in which
``scripts/run-tests`` runs them side by side (pytest-xdist workers)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import xdistsupport
from itsupport import afkit, mkbase

REAL_ROOT_TAG = "AliPhysics/vAN-20251126_ROOT6-1"  # the fixture's ALICE tag with the real ROOT 6.40

# Modules that must run one after another in one worker: the tests that slow or cut a site's WAN
# link (and reset it afterwards) share the federation's sites and links. They are also the ones that
# run alone (ALONE below). The federation's other modules (its campaigns, its batch workers, the
# studies) change no link: each is a group of its own, side by side with the rest; their jobs
# share the federation's batch slots and links, and none of their assertions is a rate.
SHARED_GROUPS = {
    "test_federation": "federation",
    "test_federation_faults": "federation",
    "test_federation_nodes": "federation",
    "test_federation_guarded": "federation",  # switches the federation to guarded, then back to open
}


# The groups that take longest, longest first (worker seconds in a fresh-clone make test,
# 2026-11-29: test_study 528, test_image_realroot 331, test_campaign_mixed 204, then 108, 99, 94,
# 87, 69, 64, 57, 50, 49; the rest under 40), handed out in this order before the others (which go
# by their number of tests): a long group of few tests handed out last would run on alone at the
# end of the run (the run before this order: 1.7 minutes of a CPU 30-80 % idle at its end).
# test_study_kit, added later: 65 s alone in the testbed (mostly its paced readers' sleep).
LONGEST_FIRST = (
    "test_study",
    "test_image_realroot",
    "test_campaign_mixed",
    "test_campaign_executors",
    "test_federation_campaign",
    "test_package_install",
    "test_campaign_watchdog",
    "test_image_build",
    "test_study_kit",
    "test_study_prague",
    "test_image_fidelity",
    "test_image_signing",
)


# Modules whose assertions are about rates and timing on the federation's shaped links (remote
# against local read speed, the per-second bytes of a fault): they run alone, before the others
# (scripts/run-tests: -m alone, the host stages at nice 19 meanwhile), as a second worker's load on
# 2 cores would change what they measure.
ALONE = {"test_federation", "test_federation_faults", "test_federation_nodes", "test_federation_guarded"}


# pytest-timeout's limit for one integration test (pyproject.toml's `timeout`, 600 s, is the unit
# tests'): its setup included, where a module-scoped fixture may build an image (up to 900 s, the
# alice_root_sif build's own timeout) before the test's campaign runs. A test marked
# @pytest.mark.timeout(N) keeps its own limit.
TIMEOUT = 1800


def pytest_itemcollected(item: pytest.Item) -> None:
    if item.path.stem in ALONE:
        item.add_marker(pytest.mark.alone)
    if item.get_closest_marker("timeout") is None:
        item.add_marker(pytest.mark.timeout(TIMEOUT))


def xdist_group(module: str) -> str:
    """The pytest-xdist group of MODULE's tests: its shared group, else the module itself (a module's
    tests share its module-scoped fixtures, which must run once, so they stay in one worker)."""
    return SHARED_GROUPS.get(module, module)


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist (run-tests runs these tests with -n)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Hand out whole groups (xdist_group of each test's module) to the workers: LONGEST_FIRST's,
    then the others, those with the most tests first (tests/xdistsupport.py)."""
    return xdistsupport.scheduler(
        config, log, lambda nodeid: xdist_group(Path(nodeid.split("::")[0]).stem), first=LONGEST_FIRST
    )


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
