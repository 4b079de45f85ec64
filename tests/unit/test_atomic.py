"""afkit.atomic: a file is replaced whole or not at all, and no temporary file is left."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from afkit.atomic import atomic_path, write_atomic, write_if_changed


def test_write_atomic_replaces_the_file_and_leaves_nothing_else(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "a.json"
    write_atomic(target, "old\n")
    assert write_atomic(target, "new\r\n") == target
    assert target.read_bytes() == b"new\r\n"  # newlines as given
    assert sorted(p.name for p in target.parent.iterdir()) == ["a.json"]


def test_write_atomic_takes_bytes_and_sets_the_mode(tmp_path: Path) -> None:
    target = tmp_path / "x.bin"
    write_atomic(target, b"\0\1", mode=0o640)
    assert target.read_bytes() == b"\0\1"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


def test_without_mode_the_umask_decides(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        write_atomic(tmp_path / "u.txt", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "u.txt").stat().st_mode) == 0o640


def test_a_failing_writer_keeps_the_old_file_and_removes_its_temporary(tmp_path: Path) -> None:
    target = tmp_path / "fig.png"
    target.write_text("old")
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        assert tmp.parent == tmp_path and tmp.name.startswith(".") and tmp.suffix == ".png"
        tmp.write_text("half")
        raise RuntimeError("writer failed")
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fig.png"]


def test_the_temporary_can_live_in_another_directory(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    with atomic_path(tmp_path / "work" / "image.log", tmp_dir=tmp_path) as tmp:
        assert tmp.parent == tmp_path
        tmp.write_text("log")
    assert (tmp_path / "work" / "image.log").read_text() == "log"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["work"]


def test_write_if_changed_leaves_a_file_that_holds_the_text_untouched(tmp_path: Path) -> None:
    path = tmp_path / "spec.json"
    path.write_text("same\n", encoding="utf-8")
    os.utime(path, ns=(1, 1))
    assert write_if_changed(path, "same\n") is False
    assert path.stat().st_mtime_ns == 1


def test_write_if_changed_replaces_other_text_and_makes_the_folder(tmp_path: Path) -> None:
    path = tmp_path / "new" / "spec.json"
    assert write_if_changed(path, "one\n", mode=0o644) is True
    assert write_if_changed(path, "two\n") is True
    assert path.read_text(encoding="utf-8") == "two\n"


def test_a_file_given_a_mode_is_its_owners_only_until_it_is_in_place(tmp_path: Path) -> None:
    """A key written with mode 0600 is never readable by others, not even while it is written."""
    with atomic_path(tmp_path / "issuer.key", mode=0o644) as tmp:
        assert stat.S_IMODE(tmp.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "issuer.key").stat().st_mode) == 0o644
