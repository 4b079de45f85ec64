"""Profiles are data validated against the shipped JSON schema."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from afkit.errors import InvalidError, NotFoundError
from afkit.image import profile


def test_shipped_profiles_validate() -> None:
    assert {"alice", "lcg"} <= set(profile.available())
    alice = profile.load("alice")
    assert alice.repository == "alice.cern.ch"
    assert alice.architectures[:2] == ("el9-x86_64", "el7-x86_64")
    assert alice.base_for("el9-x86_64") == "docker://registry.cern.ch/alisw/slc9-builder:latest"
    assert alice.base_for("el7-x86_64") == "docker://registry.cern.ch/alisw/slc7-builder:latest"
    assert any(p.command[:2] == ("root-config", "--version") for p in alice.proof)
    lcg = profile.load("lcg")
    assert lcg.repository == "sft.cern.ch" and lcg.resolver == "lcg-view"


def test_unknown_profile_is_not_found() -> None:
    with pytest.raises(NotFoundError, match="no such profile 'cms'"):
        profile.load("cms")
    with pytest.raises(NotFoundError):
        profile.load("../alice")


def _write(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "p" / "profile.yaml"
    path.parent.mkdir()
    path.write_text(yaml.safe_dump(data))
    return path


def test_invalid_profile_names_the_field(tmp_path: Path) -> None:
    data = yaml.safe_load((profile.profiles_dir() / "alice" / "profile.yaml").read_text())
    data["architectures"] = []
    with pytest.raises(InvalidError, match="architectures"):
        profile.load(str(_write(tmp_path, data)))


def test_resolver_needs_its_section(tmp_path: Path) -> None:
    data = yaml.safe_load((profile.profiles_dir() / "alice" / "profile.yaml").read_text())
    del data["modules"]
    with pytest.raises(InvalidError, match="needs a 'modules' section"):
        profile.load(str(_write(tmp_path, data)))


def test_unknown_key_is_refused(tmp_path: Path) -> None:
    data = yaml.safe_load((profile.profiles_dir() / "alice" / "profile.yaml").read_text())
    data["bootsrap"] = "typo"
    with pytest.raises(InvalidError, match="bootsrap"):
        profile.load(str(_write(tmp_path, data)))


def test_repo_not_mounted_is_prereq(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AFKIT_CVMFS_ROOT", str(tmp_path))
    from afkit.errors import ExitCode, PrereqError

    with pytest.raises(PrereqError) as exc:
        profile.repo_root(profile.load("alice"))
    assert exc.value.code == ExitCode.PREREQ and "not mounted" in str(exc.value)
