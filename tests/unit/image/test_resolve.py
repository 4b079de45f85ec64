"""Resolving tags against the generated alice.cern.ch fixture with the real modulecmd."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from afkit.errors import ExitCode, NotFoundError, PrereqError
from afkit.image import profile, resolve, tags
from afkit.image.model import Resolution

PKG_ROOT = "/cvmfs/alice.cern.ch/el9-x86_64/Packages"


def _resolve(text: str) -> Resolution:
    prof = profile.load("alice")
    return resolve.resolve(prof, tags.parse(text, prof), profile.repo_root(prof))


def _packages(res: Resolution) -> set[str]:
    return {"/".join(u.rel.split("/")[2:4]) for u in res.units if "/Packages/" in u.rel}


@pytest.mark.parametrize(
    "tag", ["VO_ALICE@AliPhysics::vAN-20201018_ROOT6-1", "VO_ALICE@O2Physics::daily-20250401-0000-1"]
)
def test_closure_is_the_fixtures(on_fixture: Path, fixture_facts: dict[str, Any], tag: str) -> None:
    res = _resolve(tag)
    expected = fixture_facts["arches"]["el9-x86_64"]["tags"][tag]
    assert res.arch == "el9-x86_64"
    assert _packages(res) == set(expected["closure"])  # hidden grid-base-packages included
    assert set(expected["hidden"]) <= _packages(res)
    assert "Geant4" not in str(res.units) and "CMake" not in str(res.units)


def test_environment_is_rewritten_to_image_paths(on_fixture: Path) -> None:
    res = _resolve("AliPhysics/vAN-20201018_ROOT6-1")
    env = {e.name: e for e in res.env}
    assert env["ROOTSYS"].value == f"{PKG_ROOT}/ROOT/v6-20-08-alice1-1"
    assert env["ALICE_PHYSICS"].value == f"{PKG_ROOT}/AliPhysics/vAN-20201018_ROOT6-1"
    assert env["PATH"].inherit and env["PATH"].value.startswith(f"{PKG_ROOT}/AliPhysics/")
    assert str(on_fixture.parent) not in "".join(e.value for e in res.env)
    assert not any(e.name.startswith("__MODULES_") or e.name in ("HOME", "PWD") for e in res.env)
    # the toolchain's modulefiles (symlinks in etc/toolchain) and alienv come along
    rels = {u.rel for u in res.units}
    assert "etc/toolchain/modulefiles/el9-x86_64/Toolchain/GCC-v13.2.0" in rels
    assert "bin/alienv" in rels


def test_arch_fallback_to_el7(on_fixture: Path) -> None:
    res = _resolve("AliPhysics/vAN-20190101_ROOT6-1")
    assert res.arch == "el7-x86_64"
    assert all(not u.rel.startswith("el9-x86_64") for u in res.units)


def test_several_tags(on_fixture: Path) -> None:
    res = _resolve("AliPhysics/vAN-20250401_ROOT6-1,O2Physics/daily-20250401-0000-1")
    assert {"AliPhysics/vAN-20250401_ROOT6-1", "O2Physics/daily-20250401-0000-1"} <= _packages(res)


def test_unknown_tag_lists_nearest(on_fixture: Path) -> None:
    with pytest.raises(NotFoundError) as exc:
        _resolve("AliPhysics/vAN-20250403_ROOT6-1")
    assert exc.value.code == ExitCode.NOT_FOUND
    assert "nearest: AliPhysics/vAN-2025040" in str(exc.value)
    assert "afkit image tags" in (exc.value.hint or "")


def test_unknown_package(on_fixture: Path) -> None:
    with pytest.raises(NotFoundError, match="unknown tag 'AliPhysicz/vAN-20250401_ROOT6-1'"):
        _resolve("AliPhysicz/vAN-20250401_ROOT6-1")


def test_list_tags(on_fixture: Path) -> None:
    prof = profile.load("alice")
    found = resolve.list_tags(prof, profile.repo_root(prof))
    assert "AliPhysics/vAN-20250402_ROOT6-1" in found["el9-x86_64"]
    assert "AliPhysics/vAN-20190101_ROOT6-1" in found["el7-x86_64"]


def test_modulecmd_missing_is_prereq(on_fixture: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr(resolve.os, "access", lambda *_a: False)
    with pytest.raises(PrereqError, match="modulecmd"):
        _resolve("AliPhysics/vAN-20201018_ROOT6-1")


def test_lcg_manifest_parser() -> None:
    text = (
        "PLATFORM: x86_64-el9-gcc13-opt\nVERSION: 105\nCOMPILER: GNU;13.1.0\n"
        "ROOT; 8a0e7; 6.30.02; ./ROOT/6.30.02/x86_64-el9-gcc13-opt; Python-2b6c0,zlib-1a2b3\n"
        "Python; 2b6c0; 3.9.12; ./Python/3.9.12/x86_64-el9-gcc13-opt;\n"
    )
    assert resolve.parse_lcg_manifest(text) == [("ROOT", "8a0e7", "6.30.02"), ("Python", "2b6c0", "3.9.12")]


def test_hidden_symlink_brings_its_whole_package(on_fixture: Path) -> None:
    """Even if no environment path named it, grid-base-packages comes in through the profile."""
    prof = profile.load("alice")
    units: dict[str, resolve.Unit] = {}
    resolve._hidden(prof, on_fixture, "el9-x86_64", units, ["el9-x86_64/Packages/*/*"])
    gridbase = "el9-x86_64/Packages/grid-base-packages/v20250401-1"
    assert gridbase in units and units[gridbase].label == "grid-base-packages/v20250401-1"
    assert "etc/toolchain/modulefiles/el9-x86_64/grid-base-packages/default" in units
