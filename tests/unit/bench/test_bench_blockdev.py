"""afkit.bench.blockdev without root: the page-cache residency of a file and the queue settings on
a queue directory shaped as sysfs's (the loop device itself: tests/integration/test_study_prague.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from afkit.bench import blockdev, devinfo
from afkit.bench.disk import drop_cache
from afkit.errors import PrereqError


def test_a_file_just_written_is_cached_and_dropping_it_empties_the_cache(tmp_path: Path) -> None:
    if devinfo.mount_of(tmp_path).get("fstype") == "tmpfs":
        pytest.skip("a tmpfs file's pages are the file: they cannot be dropped")
    f = tmp_path / "f.bin"
    f.write_bytes(os.urandom(4 << 20))
    assert blockdev.resident_bytes(f) == 4 << 20
    assert drop_cache(f)
    assert blockdev.resident_bytes(f) == 0


def test_an_empty_file_holds_nothing(tmp_path: Path) -> None:
    (tmp_path / "empty").touch()
    assert blockdev.resident_bytes(tmp_path / "empty") == 0


def queue(tmp_path: Path) -> Path:
    q = tmp_path / "loop9" / "queue"
    q.mkdir(parents=True)
    (q / "read_ahead_kb").write_text("128\n")
    (q / "scheduler").write_text("[none] mq-deadline kyber bfq\n")
    return q


def test_the_settings_read_as_the_kernel_prints_them(tmp_path: Path) -> None:
    q = queue(tmp_path)
    assert blockdev.read(q) == blockdev.QueueSettings(128, "none")
    assert blockdev.schedulers(q) == ["none", "mq-deadline", "kyber", "bfq"]


def test_apply_writes_both_and_returns_what_reads_back(tmp_path: Path) -> None:
    q = queue(tmp_path)
    got = blockdev.apply(q, blockdev.QueueSettings(1024, "bfq"))
    assert (q / "read_ahead_kb").read_text() == "1024" and (q / "scheduler").read_text() == "bfq"
    assert got == blockdev.QueueSettings(1024, "bfq")


def test_a_scheduler_the_kernel_does_not_offer_is_refused_naming_those_it_does(tmp_path: Path) -> None:
    q = queue(tmp_path)
    with pytest.raises(PrereqError, match="'cfq' is not offered") as err:
        blockdev.apply(q, blockdev.QueueSettings(1024, "cfq"))
    assert "none, mq-deadline, kyber, bfq" in str(err.value.hint)
    assert (q / "read_ahead_kb").read_text() == "128\n"  # nothing changed
