"""Checks before a campaign submits anything: the sites' executor, the dataset files on their servers."""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest

from afkit.bench.sources import XRD_NOT_FOUND_ERRNO
from afkit.campaign import preflight
from afkit.errors import NotFoundError, UnsafeError


def test_a_site_of_another_executor_is_refused(raw: dict[str, Any], make: Any) -> None:
    raw["benchmarks"][0]["sites"] = ["here", "far"]
    with pytest.raises(UnsafeError, match=r"far \(slurm\)"):
        preflight.check_executor(make(raw), "local")


def test_only_the_selected_site_counts(raw: dict[str, Any], make: Any) -> None:
    raw["benchmarks"][0]["sites"] = ["here", "far"]
    assert preflight.check_executor(make(raw), "slurm", site="far") == ["far"]


def test_without_a_site_every_site_with_jobs_counts(raw: dict[str, Any], make: Any) -> None:
    raw["benchmarks"][0]["sites"] = ["here"]  # far has no job: its executor does not matter
    assert preflight.check_executor(make(raw), "local") == ["here"]


def test_afkits_slurm_plugin_runs_the_slurm_sites(raw: dict[str, Any], make: Any) -> None:
    raw["benchmarks"][0]["sites"] = ["far"]
    # workflows/profiles/slurm's executor
    assert preflight.check_executor(make(raw), "afkit-slurm", site="far") == ["far"]


def fake_xrootd(monkeypatch: pytest.MonkeyPatch, existing: set[str], asked: list[str]) -> None:
    """XRootD.client.FileSystem(url).stat(path): found for EXISTING, kXR_NotFound otherwise."""

    class Status:
        def __init__(self, ok: bool) -> None:
            self.ok, self.errno = ok, 0 if ok else XRD_NOT_FOUND_ERRNO
            self.message = "" if ok else "[ERROR] No such file"

    class FileSystem:
        def __init__(self, url: str) -> None:
            self.url = url

        def stat(self, path: str, timeout: int = 0) -> tuple[Status, None]:
            asked.append(f"{self.url}/{path}")
            return Status(path in existing), None

    client = types.ModuleType("XRootD.client")
    client.FileSystem = FileSystem  # type: ignore[attr-defined]
    pkg = types.ModuleType("XRootD")
    pkg.client = client  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "XRootD", pkg)
    monkeypatch.setitem(sys.modules, "XRootD.client", client)


def test_a_file_missing_on_a_server_is_exit_5_naming_file_and_endpoint(
    raw: dict[str, Any], make: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[str] = []
    fake_xrootd(monkeypatch, {"/eos/hzz/uproot-HZZ.root"}, asked)
    raw["datasets"]["far-ds"] = {"storage": "remote", "files": ["hzz/uproot-HZZ.root", "hzz/gone.root"]}
    raw["benchmarks"][0].update(datasets=["hzz", "far-ds"], sweep={"clients": [1]})
    with pytest.raises(NotFoundError) as err:
        preflight.check_datasets(make(raw))
    assert "hzz/gone.root" in str(err.value)
    assert "root://far.example:1094//eos/hzz/gone.root" in str(err.value)
    assert err.value.code == 5
    # every storage was asked, the one with a local path too
    assert "root://127.0.0.1:1094//data/hzz/uproot-HZZ.root" in asked
