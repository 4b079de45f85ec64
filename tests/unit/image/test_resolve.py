"""Resolving tags against the generated alice.cern.ch fixture with the real modulecmd."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from afkit.errors import AfkitError, ExitCode, NotFoundError, PrereqError
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
    """Off /cvmfs (here: a temporary directory) the real GCC-Toolchain modulefile falls back on
    itself, as alienv's environment would there; the /cvmfs closure is tested in the testbed."""
    res = _resolve(tag)
    expected = fixture_facts["arches"]["el9-x86_64"]["tags"][tag]
    assert res.arch == "el9-x86_64"
    assert _packages(res) == set(expected["closure_elsewhere"])
    assert "Geant4" not in str(res.units) and "CMake" not in str(res.units)


def test_off_cvmfs_resolution_warns(on_fixture: Path) -> None:
    res = _resolve("AliPhysics/vAN-20201018_ROOT6-1")
    assert any("not at /cvmfs/alice.cern.ch" in w for w in res.warnings)


def test_environment_is_rewritten_to_image_paths(on_fixture: Path) -> None:
    res = _resolve("AliPhysics/vAN-20201018_ROOT6-1")
    env = {e.name: e for e in res.env}
    assert env["ROOTSYS"].value == f"{PKG_ROOT}/ROOT/v6-20-08-alice1-1"
    assert env["ALICE_PHYSICS"].value == f"{PKG_ROOT}/AliPhysics/vAN-20201018_ROOT6-1"
    assert env["PATH"].inherit and env["PATH"].value.startswith(f"{PKG_ROOT}/AliPhysics/")
    assert str(on_fixture.parent) not in "".join(e.value for e in res.env)
    assert not any(e.name.startswith("__MODULES_") or e.name in ("HOME", "PWD") for e in res.env)
    # the loaded modulefiles (BASE/1.0 first) and alienv come along
    rels = {u.rel for u in res.units}
    assert "el9-x86_64/Modules/modulefiles/BASE/1.0" in rels
    assert "bin/alienv" in rels


def test_image_gets_what_alienv_exports_besides_the_tag(on_fixture: Path) -> None:
    """alienv setenv exports MODULEPATH (as it loaded the tag) and ALIEN_ORGANISATION: the image
    sets both, MODULEPATH in the image's paths, where the tag's modulefiles are staged."""
    res = _resolve("AliPhysics/vAN-20201018_ROOT6-1")
    env = {e.name: e for e in res.env}
    assert env["ALIEN_ORGANISATION"].value == "ALICE"
    assert env["MODULEPATH"].value == (
        "/cvmfs/alice.cern.ch/etc/toolchain/modulefiles/el9-x86_64:/cvmfs/alice.cern.ch/el9-x86_64/Modules/modulefiles"
    )
    assert not env["MODULEPATH"].inherit


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


def test_a_symlinked_unit_brings_its_target(on_fixture: Path) -> None:
    """grid-base-packages/default -> v1-1 and Toolchain/GCC-v13.2.0 -> the GCC-Toolchain modulefile:
    the link and its target are both staged (the stager then keeps the link a link)."""
    units = {
        rel: resolve.Unit(rel, "modulefile")
        for rel in (
            "el9-x86_64/Modules/modulefiles/grid-base-packages/default",
            "etc/toolchain/modulefiles/el9-x86_64/Toolchain/GCC-v13.2.0",
        )
    }
    resolve._expand_links(units, on_fixture, ["el9-x86_64/Packages/*/*"])
    assert "el9-x86_64/Modules/modulefiles/grid-base-packages/v1-1" in units
    assert "el9-x86_64/Modules/modulefiles/GCC-Toolchain/v13.2.0-alice1-2" in units


def test_a_unit_under_a_directory_symlink_is_the_link_plus_its_target(on_fixture: Path) -> None:
    sft = on_fixture.parent / "sft.cern.ch"
    units = {"lcg/releases/gcc/13.1.0/x86_64-el9": resolve.Unit("lcg/releases/gcc/13.1.0/x86_64-el9", "x")}
    resolve._expand_links(units, sft, ["lcg/releases/*/*/*"])
    assert "lcg/releases/gcc/13.1.0" in units  # the link itself
    assert any(r.startswith("lcg/releases/gcc/13.1.0-") and r.endswith("/x86_64-el9") for r in units)
    kept = [u.rel for u in resolve._prune(units)]
    assert "lcg/releases/gcc/13.1.0/x86_64-el9" not in kept  # staged through the link, not as a copy


def test_broken_modulefile_names_file_line_and_modulepath(tmp_path: Path) -> None:
    mp = tmp_path / "mf"
    (mp / "GCC-Toolchain").mkdir(parents=True)
    modulefile = mp / "GCC-Toolchain" / "v13.2.0-alice1-2"
    modulefile.write_text("#%Module1.0\n    module load Toolchain/GCC-v13.2.0\n")
    stderr = (
        "Loading GCC-Toolchain/v13.2.0-alice1-2\n"
        "  ERROR: Unable to locate a modulefile for 'Toolchain/GCC-v13.2.0'\n"
        "  ERROR: Load of requirement Toolchain/GCC-v13.2.0 failed\n"
    )
    err = resolve.load_error(stderr, ["AliPhysics/vAN-20251120_O2-1"], str(mp))
    text = str(err)
    assert err.code == ExitCode.FAILURE
    assert "Unable to locate a modulefile for 'Toolchain/GCC-v13.2.0'" in text
    assert f"in GCC-Toolchain/v13.2.0-alice1-2 ({mp}/GCC-Toolchain/v13.2.0-alice1-2)" in text
    assert "at the line 'module load Toolchain/GCC-v13.2.0'" in text
    assert f"MODULEPATH was {mp}" in text


def test_lcg_compiler_header_forms() -> None:
    assert resolve.lcg_compiler("PLATFORM: x\nCOMPILER: gcc;13.1.0\n") == ("gcc", "13.1.0")
    assert resolve.lcg_compiler("COMPILER: GNU 4.8.2\n") == ("gcc", "4.8.2")
    assert resolve.lcg_compiler("VERSION: 105\n") is None


def test_only_a_missing_toolchain_is_tolerated() -> None:
    missing = (
        "Loading GCC-Toolchain/v12.2.0-alice1-1\n"
        "  ERROR: Unable to locate a modulefile for 'Toolchain/GCC-v12.2.0'\n"
        "  ERROR: Load of requirement Toolchain/GCC-v12.2.0 failed\n"
        "Loading ROOT/v6-28-04-alice3-1\n  ERROR: Load of requirement GCC-Toolchain/v12.2.0-alice1-1 failed\n"
    )
    assert resolve.missing_toolchains(missing) == ["Toolchain/GCC-v12.2.0"]
    other = missing + "  ERROR: Unable to locate a modulefile for 'boost/v1.83.0-alice2-3'\n"
    assert resolve.missing_toolchains(other) == []
    assert resolve.missing_toolchains('  ERROR: invalid command name "setenvv"\n') == []


def test_every_resolver_the_profile_schema_allows_is_registered() -> None:
    schema = json.loads(profile.SCHEMA_PATH.read_text(encoding="utf-8"))
    assert sorted(resolve.RESOLVERS) == sorted(schema["properties"]["resolver"]["enum"])


def test_modulefile_syntax_error_names_the_file_and_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Tcl syntax error two modules down, through the real modulecmd: the error names the
    modulefile and line modulecmd reports, and the hint is about the modulefile, not MODULEPATH."""
    mods = tmp_path / "alice.cern.ch" / "el9-x86_64" / "Modules" / "modulefiles"
    (mods / "Broken").mkdir(parents=True)
    (mods / "Top").mkdir()
    broken = mods / "Broken" / "1.0"
    broken.write_text("#%Module1.0\nsetenv FOO bar\nif { 1 } {\n  setenv BAR baz\n\nprepend-path PATH /x\n")
    (mods / "Top" / "2.0").write_text("#%Module1.0\nmodule load Broken/1.0\nsetenv TOP 1\n")
    monkeypatch.setenv("AFKIT_CVMFS_ROOT", str(tmp_path))
    prof = profile.load("alice")
    with pytest.raises(AfkitError) as caught:
        resolve.resolve(prof, tags.parse("Top/2.0", prof), profile.repo_root(prof))
    err = caught.value
    assert err.code == ExitCode.FAILURE
    assert str(err).startswith("cannot load Top/2.0: missing close-brace"), str(err)
    assert f'{broken} line 3 ("if {{ 1 }} {{")' in str(err)
    assert "not MODULEPATH" in (err.hint or "")
    assert "syntax" in (err.hint or "") and str(broken) in (err.hint or "")


def test_tags_matching_nothing_is_not_found(on_fixture: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/gitlab-ci.md checks that a tag exists with 'afkit image tags --profile alice TEXT':
    no published tag containing TEXT is exit 5 saying so, not an empty list and exit 0."""
    from afkit import cli

    assert cli.main(["image", "tags", "--profile", "alice", "vAN-20991231"]) == ExitCode.NOT_FOUND
    out, err = capsys.readouterr()
    assert out == "" and "no tag containing 'vAN-20991231'" in err
    assert cli.main(["image", "tags", "--profile", "alice", "vAN-2025040"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "AliPhysics/vAN-20250401_ROOT6-1\tel9-x86_64",
        "AliPhysics/vAN-20250402_ROOT6-1\tel9-x86_64",
    ]
