"""Shared fixtures: a small valid campaign on local disk."""

from __future__ import annotations

import copy
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from afkit.campaign.config import Campaign, validate

FIXTURES = Path(__file__).parent / "fixtures"
ROOT_DATA = Path(__file__).resolve().parents[2] / "data"  # tests/data: scikit-hep-testdata, BSD-3


def base_config(store: Path) -> dict[str, Any]:
    return {
        "name": "unit",
        "image": {"sif": "fake.sif"},
        "sites": {
            "here": {"executor": "local", "storage": "disk", "scratch": str(store.parent / "scratch")},
            "far": {"executor": "slurm", "storage": "remote"},
        },
        "storage": {
            "disk": {
                "url": "root://127.0.0.1:1094",
                "export": "/data",
                "path": str(store),
                "caches": {"xcache": "root://127.0.0.1:1095"},
            },
            "remote": {"url": "root://far.example:1094", "export": "/eos"},
        },
        "datasets": {
            "hzz": {"storage": "disk", "files": ["hzz/uproot-HZZ.root"]},
            "gen": {"storage": "disk", "generate": {"count": 2, "size_mb": 1}},
        },
        "benchmarks": [
            {
                "name": "read",
                "type": "read",
                "sites": ["here"],
                "datasets": ["gen"],
                "sweep": {"scenario": ["origin", "xcache"], "clients": [1, 2]},
            },
        ],
    }


def make_store(parent: Path) -> Path:
    """PARENT/store with the HZZ file: the storage disk's path."""
    d = parent / "store"
    (d / "hzz").mkdir(parents=True)
    (d / "hzz" / "uproot-HZZ.root").write_bytes((ROOT_DATA / "uproot-HZZ.root").read_bytes())
    return d


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return make_store(tmp_path)


@pytest.fixture
def raw(store: Path) -> dict[str, Any]:
    return base_config(store)


@pytest.fixture(scope="module")
def module_raw(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """For a campaign the tests of a module share (run once, each test working on a copy of its
    results, see copy_run): a folder of its own, the module's (its store, its scratch), and the
    base campaign there. Change the campaign only in the module's fixture that runs it."""
    base = tmp_path_factory.mktemp("module-campaign")
    return base, base_config(make_store(base))


@pytest.fixture
def copy_run(tmp_path: Path) -> Callable[[Path], None]:
    """copy_run(FINISHED): the results and snakemake's records (.snakemake) of a campaign run in
    FINISHED, copied into tmp_path with their times. Snakemake started in tmp_path on the same
    campaign file (its path is a parameter of the rules) finds what that run left: nothing to do."""

    def _copy(finished: Path) -> None:
        for name in ("results", ".snakemake"):
            if (finished / name).exists():
                shutil.copytree(finished / name, tmp_path / name, symlinks=True)

    return _copy


MakeCampaign = Callable[[dict[str, Any]], Campaign]


@pytest.fixture
def make(tmp_path: Path) -> MakeCampaign:
    """make(raw) -> a validated Campaign based in tmp_path, its results there too (unless RAW names
    them): results/NAME-vVERSION is the same folder for every test of one campaign name."""
    return lambda raw: Campaign(
        validate({"results": str(tmp_path / "results"), **copy.deepcopy(raw)}), tmp_path
    )


@pytest.fixture
def write(tmp_path: Path) -> Callable[[dict[str, Any]], Path]:
    """write(raw) -> tmp_path/campaign.yaml."""

    def _write(raw: dict[str, Any]) -> Path:
        path = tmp_path / "campaign.yaml"
        path.write_text(yaml.safe_dump(raw), encoding="utf-8")
        return path

    return _write


FAKE_SIF = b"#!/usr/bin/env run-singularity\n\0SIF_MAGIC\0fake"  # a SIF header's start (apptainer/sif)


@pytest.fixture
def sif(tmp_path: Path) -> Path:
    """The campaign's image.sif, fake.sif beside campaign.yaml: what afkit checks before anything runs."""
    path = tmp_path / "fake.sif"
    path.write_bytes(FAKE_SIF)
    return path


@pytest.fixture
def fake_apptainer(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("PATH", f"{Path(__file__).parent / 'fixtures'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_APPTAINER_PYTHON", sys.executable)
    monkeypatch.setenv("FAKE_APPTAINER_LOG", str(tmp_path / "apptainer.calls"))
    monkeypatch.setenv("FAKE_APPTAINER_ROOT", str(tmp_path / "container"))
    sif = tmp_path / "fake.sif"
    sif.write_bytes(FAKE_SIF)
    return sif
