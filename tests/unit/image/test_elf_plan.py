"""ELF reading (interpreter, NEEDED) and the cvmfs_shrinkwrap spec of --plan."""

from __future__ import annotations

import shutil
from pathlib import Path

from afkit.image import elf, plan
from afkit.image.model import Resolution, Unit


def test_reads_needed_of_a_real_program() -> None:
    info = elf.read(Path(shutil.which("ls") or "/bin/ls"))
    assert info is not None and "libc.so.6" in info.needed
    assert info.interp and "ld-linux" in info.interp


def test_non_elf_and_broken(tmp_path: Path) -> None:
    (tmp_path / "script").write_text("#!/bin/sh\n")
    (tmp_path / "broken").write_bytes(b"\x7fELF\x02\x01\x01" + b"\0" * 20)
    assert elf.read(tmp_path / "script") is None
    assert elf.read(tmp_path / "broken") is None


def test_an_empty_file_is_not_elf(tmp_path: Path) -> None:
    (tmp_path / "empty").write_bytes(b"")
    assert elf.read(tmp_path / "empty") is None


def test_a_truncated_library_is_not_elf(tmp_path: Path) -> None:
    """A real library cut after its program headers: its dynamic section lies past the end."""
    real = Path(shutil.which("ls") or "/bin/ls").read_bytes()
    (tmp_path / "cut").write_bytes(real[:1024])
    assert elf.read(tmp_path / "cut") is None


def test_spec_lines(tmp_path: Path) -> None:
    (tmp_path / "el9/Packages/ROOT/v6").mkdir(parents=True)
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "alienv").write_text("x")
    res = Resolution(
        "alice",
        "alice.cern.ch",
        "el9",
        "T",
        ["T"],
        [Unit("bin/alienv", "hidden"), Unit("el9/Packages/ROOT/v6", "ROOT/v6")],
        [],
    )
    lines = plan.spec_lines(res, tmp_path)
    assert lines[1:] == ["/bin/alienv", "/el9/Packages/ROOT/v6/*"]
    assert lines[0].startswith("#")
