"""Adversarial inputs for what runs as root: foreign working directories, hostile trees and tags."""

from __future__ import annotations

import os
import pwd
from pathlib import Path

import pytest

from afkit.errors import ExitCode, InvalidError, UnsafeError, UsageError
from afkit.image import build, profile, stage, tags, workdir
from afkit.image.model import Unit
from afkit.image.store import Store

OTHER_UID = 54321  # not root, not us


@pytest.fixture(autouse=True)
def _no_sudo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SUDO_UID", raising=False)
    monkeypatch.delenv("SUDO_USER", raising=False)


def _pretend_owned_by(monkeypatch: pytest.MonkeyPatch, uid: int, *paths: Path) -> None:
    """Make PATHS look owned by UID to afkit (no chown: the tests also run as an ordinary user)."""
    real_lstat = Path.lstat
    faked = {str(p) for p in paths}

    def lstat(self: Path) -> os.stat_result:
        st = real_lstat(self)
        if str(self) not in faked:
            return st
        fields = list(st)
        fields[4] = uid  # st_uid
        return os.stat_result(fields)

    monkeypatch.setattr(Path, "lstat", lstat)


def _foreign_build(path: Path) -> None:
    """What another user can prepare: a marker and some content."""
    path.mkdir()
    (path / workdir.MARKER).write_text("{}")
    (path / "precious").write_text("x")


def test_marker_in_another_users_directory_is_not_trusted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wd = tmp_path / "x"
    _foreign_build(wd)
    _pretend_owned_by(monkeypatch, OTHER_UID, wd, wd / workdir.MARKER)
    assert not workdir.is_ours(wd)
    with pytest.raises(UnsafeError, match=f"belongs to uid {OTHER_UID}") as exc:
        workdir.prepare(wd, yes=True)
    assert exc.value.code == ExitCode.UNSAFE
    assert (wd / "precious").read_text() == "x"


def test_marker_owned_by_another_user_is_not_trusted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wd = tmp_path / "x"
    _foreign_build(wd)
    _pretend_owned_by(monkeypatch, OTHER_UID, wd / workdir.MARKER)
    assert not workdir.is_ours(wd)
    with pytest.raises(UnsafeError, match="not created by afkit"):
        workdir.prepare(wd, yes=True)
    assert (wd / "precious").read_text() == "x"


@pytest.mark.parametrize("mode", [0o777, 0o1777])
def test_world_writable_directory_refused(tmp_path: Path, mode: int) -> None:
    """Like /tmp/x: anyone could plant the marker, or swap entries for symlinks after the checks."""
    wd = tmp_path / "x"
    wd.mkdir()
    (wd / workdir.MARKER).write_text("{}")
    (wd / "precious").write_text("x")
    wd.chmod(mode)
    assert not workdir.is_ours(wd)
    with pytest.raises(UnsafeError, match="writable by every user"):
        workdir.prepare(wd, yes=True)
    assert (wd / "precious").read_text() == "x"
    empty = tmp_path / "empty"
    empty.mkdir()
    empty.chmod(mode)
    with pytest.raises(UnsafeError, match="writable by every user"):
        workdir.prepare(empty, yes=False)
    assert not (empty / workdir.MARKER).exists()


def test_empty_directory_of_another_user_is_not_adopted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wd = tmp_path / "x"
    wd.mkdir()
    _pretend_owned_by(monkeypatch, OTHER_UID, wd)
    with pytest.raises(UnsafeError, match="not to you"):
        workdir.prepare(wd, yes=False)
    assert list(wd.iterdir()) == []


def test_sudo_users_directory_is_trusted_only_under_sudo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """sudo ./scripts/singularity_alice.sh -o DIR where DIR was made by the admin without sudo."""
    wd = tmp_path / "x"
    _foreign_build(wd)
    real_uid = os.geteuid()
    mine = [p for p in (tmp_path, *tmp_path.parents) if p.lstat().st_uid == real_uid]
    _pretend_owned_by(monkeypatch, 0, *mine)  # as if root had made tmp_path (as under sudo)
    _pretend_owned_by(monkeypatch, 1234, wd, wd / workdir.MARKER)
    monkeypatch.setattr(workdir.os, "geteuid", lambda: 0)
    assert not workdir.is_ours(wd)
    monkeypatch.setenv("SUDO_UID", "1234")
    assert workdir.is_ours(wd)
    workdir.prepare(wd, yes=True)
    assert sorted(p.name for p in wd.iterdir()) == [workdir.MARKER]


def test_parent_owned_by_another_user_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """-o /tmp/bob/images: bob could rename 'images' and put a symlink to / in its place between
    our checks and our cleaning."""
    wd = tmp_path / "bob" / "images"
    workdir.prepare(wd, yes=False)
    (wd / "old.sif").write_text("sif")
    _pretend_owned_by(monkeypatch, OTHER_UID, tmp_path / "bob")
    with pytest.raises(UnsafeError, match=f"belongs to uid {OTHER_UID}, who could swap"):
        workdir.prepare(wd, yes=True)
    with pytest.raises(UnsafeError, match="who could swap"):
        workdir.prepare(tmp_path / "bob" / "new", yes=True)
    assert (wd / "old.sif").exists()
    assert not (tmp_path / "bob" / "new").exists()


def test_world_writable_parent_needs_the_sticky_bit(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(UnsafeError, match="shared is writable by every user"):
        workdir.prepare(shared / "images", yes=False)
    assert not (shared / "images").exists()
    shared.chmod(0o1777)  # like /tmp: others cannot rename our entries
    assert workdir.is_ours(workdir.prepare(shared / "images", yes=False))


def test_other_users_home_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """-o ~otheruser: an empty home would otherwise be adopted (and later cleaned)."""
    home = tmp_path / "bob"
    home.mkdir()
    bob = pwd.struct_passwd(("bob", "x", 1234, 1234, "", str(home), "/bin/sh"))
    real = pwd.getpwall()
    monkeypatch.setattr(pwd, "getpwall", lambda: [*real, bob])
    with pytest.raises(UnsafeError, match="home directory"):
        workdir.prepare(home, yes=True)
    assert not (home / workdir.MARKER).exists()


def test_parent_of_home_refused_even_when_marked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    top = tmp_path / "data"
    workdir.prepare(top, yes=False)  # an afkit directory...
    home = top / "users" / "alice"
    home.mkdir(parents=True)
    (home / "thesis.tex").write_text("x")
    monkeypatch.setenv("HOME", str(home))  # ...that holds $HOME
    with pytest.raises(UnsafeError, match="contains the home directory"):
        workdir.prepare(top, yes=True)
    assert (home / "thesis.tex").read_text() == "x"


def test_symlink_to_root_and_relative_dotdot_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "root").symlink_to("/")
    (tmp_path / "etc").symlink_to("/etc")
    for path in (tmp_path / "root", tmp_path / "etc", tmp_path / "etc" / "new"):
        with pytest.raises(UnsafeError):
            workdir.prepare(path, yes=True)
    monkeypatch.chdir(tmp_path)
    depth = len(tmp_path.parts) - 1
    with pytest.raises(UnsafeError):
        workdir.prepare(Path("/".join([".."] * depth)), yes=True)
    assert not Path("/etc/new").exists()


# --- staging a hostile tree -------------------------------------------------------------------


@pytest.mark.parametrize(
    "rel",
    ["Packages/../../escaped", "../escaped", "Packages/A/../../../escaped", "/escaped", "Packages//A", "./P"],
)
def test_unit_paths_leaving_the_repository_are_refused(tmp_path: Path, rel: str) -> None:
    """Units come from the repository's modulefiles (LOADEDMODULES, _LMFILES_, the environment)."""
    src = tmp_path / "a" / "src"
    (src / "Packages" / "A").mkdir(parents=True)
    (tmp_path / "a" / "escaped").mkdir()
    (tmp_path / "a" / "escaped" / "f").write_text("outside the repository\n")
    (tmp_path / "escaped").mkdir()
    (tmp_path / "escaped" / "f").write_text("outside the repository\n")
    with pytest.raises(InvalidError, match="not a plain path") as exc:
        stage.walk(src, [Unit("Packages/A", "A/1"), Unit(rel, "evil/1")], "/cvmfs/repo")
    assert exc.value.code == ExitCode.INVALID


def test_unit_under_a_directory_symlinked_out_of_the_repository_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "secret" / "v1"
    secret.mkdir(parents=True)
    (secret / "shadow").write_text("root only\n")
    src = tmp_path / "src"
    (src / "Packages").mkdir(parents=True)
    (src / "Packages" / "Evil").symlink_to(tmp_path / "secret")
    with pytest.raises(InvalidError, match="symlink out of the repository"):
        stage.walk(src, [Unit("Packages/Evil/v1", "Evil/v1")], "/cvmfs/repo")


def test_hostile_symlinks_stay_inside_the_staging_tree(tmp_path: Path) -> None:
    """Links to '..', to '/', to /etc: kept as links (never followed while writing)."""
    src = tmp_path / "src"
    pkg = src / "Packages" / "A"
    pkg.mkdir(parents=True)
    (pkg / "up").symlink_to("../../../../../../..")
    (pkg / "root").symlink_to("/")
    (pkg / "etc").symlink_to("/etc")
    (pkg / "f").write_text("ok\n")
    dest = tmp_path / "work" / "rootfs" / "cvmfs" / "repo"
    plan = stage.walk(src, [Unit("Packages/A", "A/1")], "/cvmfs/repo")
    stage.execute(plan, dest, Store(tmp_path / "work" / ".data"), quiet=True)
    assert sorted(os.listdir(tmp_path)) == ["src", "work"]
    for name in ("up", "root", "etc"):
        assert (dest / "Packages" / "A" / name).is_symlink()
    assert sorted(os.listdir(dest / "Packages" / "A")) == ["etc", "f", "root", "up"]


# --- tags and names ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "AliPhysics/v1\n",
        "AliPhysics/v1\nrm -rf /",
        "AliPhysics/v1\x00",
        "AliPhysics\uff0fvAN-1",  # fullwidth solidus
        "AliPhysics/v\u0410N-1",  # Cyrillic A
        "AliPhysics/vAN-1\u200b",  # zero-width space
        "AliPhysics/v1&&id",
        "AliPhysics/v1>x",
        "AliPhysics/${IFS}",
        "AliPhysics/v1,../x",
        "VO_ALICE@..::x",
        "AliPhysics//v1",
        "~root/x",
        "AliPhysics/*",
    ],
)
def test_more_hostile_tags_refused(text: str) -> None:
    with pytest.raises(UsageError) as exc:
        tags.parse(text, profile.load("alice"))
    assert exc.value.code == ExitCode.USAGE


@pytest.mark.parametrize("name", ["../x", ".hidden", "a/b", "x\n", "", "a b", "-rf", "..", "\u0410"])
def test_image_names_are_plain_file_names(name: str) -> None:
    with pytest.raises(UsageError):
        build.check_name(name)
