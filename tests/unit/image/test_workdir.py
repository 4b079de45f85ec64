"""The working directory: unsafe ones refused, foreign ones never cleaned, the store kept."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from afkit.errors import ExitCode, UnsafeError
from afkit.image import workdir


@pytest.mark.parametrize("path", ["/", "/etc", "/usr/lib/x", "/home", "/tmp", "/proc/self", "/cvmfs/x"])
def test_system_directories_refused(path: str) -> None:
    with pytest.raises(UnsafeError) as exc:
        workdir.check_safe(Path(path))
    assert exc.value.code == ExitCode.UNSAFE


def test_home_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(UnsafeError, match="home"):
        workdir.check_safe(tmp_path)


def test_foreign_non_empty_refused_even_with_yes(tmp_path: Path) -> None:
    (tmp_path / "precious.txt").write_text("x")
    for yes in (False, True):
        with pytest.raises(UnsafeError, match="not created by afkit"):
            workdir.prepare(tmp_path, yes=yes)
    assert (tmp_path / "precious.txt").read_text() == "x"


def test_symlink_to_system_dir_refused(tmp_path: Path) -> None:
    (tmp_path / "link").symlink_to("/etc")
    with pytest.raises(UnsafeError, match="/etc"):
        workdir.check_safe(tmp_path / "link")


def test_new_and_empty_directories_are_adopted(tmp_path: Path) -> None:
    new = workdir.prepare(tmp_path / "a" / "b", yes=False)
    assert workdir.is_ours(new)
    empty = tmp_path / "empty"
    empty.mkdir()
    workdir.prepare(empty, yes=False)
    assert workdir.is_ours(empty)


def _earlier_build(path: Path) -> None:
    workdir.prepare(path, yes=False)
    (path / "rootfs" / "cvmfs").mkdir(parents=True)
    (path / "old.sif").write_text("sif")
    (path / workdir.STORE / "ab").mkdir(parents=True)
    (path / workdir.STORE / "ab" / "blob").write_text("keep")
    outside = path.parent / "outside"
    outside.mkdir()
    (outside / "f").write_text("untouched")
    (path / "link").symlink_to(outside)


def test_leftovers_need_yes_without_terminal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wd = tmp_path / "wd"
    _earlier_build(wd)
    monkeypatch.setattr("sys.stdin", open(os.devnull))  # noqa: SIM115 - no terminal
    with pytest.raises(UnsafeError, match="no terminal"):
        workdir.prepare(wd, yes=False)
    assert (wd / "old.sif").exists()


def test_yes_cleans_only_afkit_content(tmp_path: Path) -> None:
    wd = tmp_path / "wd"
    _earlier_build(wd)
    workdir.prepare(wd, yes=True)
    assert sorted(p.name for p in wd.iterdir()) == [workdir.MARKER, workdir.STORE]
    assert (wd / workdir.STORE / "ab" / "blob").read_text() == "keep"
    assert (tmp_path / "outside" / "f").read_text() == "untouched"  # the symlink was not followed


def test_answer_on_terminal(tmp_path: Path) -> None:
    wd = tmp_path / "wd"
    _earlier_build(wd)
    with pytest.raises(UnsafeError, match="not cleaning"):
        workdir.prepare(wd, yes=False, ask=lambda _q: "n")
    assert (wd / "old.sif").exists()
    workdir.prepare(wd, yes=False, ask=lambda _q: "y")
    assert not (wd / "old.sif").exists()


def test_marker_symlink_does_not_count(tmp_path: Path) -> None:
    wd = tmp_path / "wd"
    wd.mkdir()
    (tmp_path / "m").write_text("{}")
    (wd / workdir.MARKER).symlink_to(tmp_path / "m")
    (wd / "data").write_text("x")
    with pytest.raises(UnsafeError):
        workdir.prepare(wd, yes=True)
