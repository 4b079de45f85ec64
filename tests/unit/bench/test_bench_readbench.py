"""The read client on local files, and its behaviour when reads fail mid-run."""

from __future__ import annotations

import ctypes
import json
import mmap
from collections.abc import Iterator
from pathlib import Path

import pytest

from afkit.bench.offsets import BlockPlan, RootLikePlan
from afkit.bench.readbench import ReadConfig, run_read
from afkit.bench.records import JsonlWriter, read_jsonl
from afkit.bench.sources import PosixSource, ReadError, open_source
from afkit.errors import InvalidError, NotFoundError


def _run(tmp_path: Path, cfg: ReadConfig, **kw: object) -> tuple[dict, list[dict]]:
    out = tmp_path / "out.jsonl"
    with JsonlWriter(out) as writer:
        summary = run_read(cfg, writer, **kw)  # type: ignore[arg-type]
        writer.write(summary)
    return summary, read_jsonl(out)


def test_sequential_read_counts_every_byte(tmp_path: Path, pattern_file: Path) -> None:
    size = pattern_file.stat().st_size
    summary, recs = _run(tmp_path, ReadConfig([str(pattern_file)], BlockPlan(block=65536)))
    assert summary["bytes"] == size
    assert summary["ops"] == -(-size // 65536)
    assert summary["ended_by"] == "end-of-data" and summary["status"] == "ok"
    assert sum(r["bytes"] for r in recs if r["type"] == "interval") == size
    assert summary["gbps"] == pytest.approx(size * 8 / 1e9 / summary["seconds"], rel=0.02)


class _SlowPlan:
    """A plan whose set-up takes 0.3 s (like drawing a random order), then one block. (A fixed
    sleep on purpose: the test is about time itself, the clock must not count this set-up.)"""

    block = 4096

    def requests(self, size: int) -> Iterator[list[tuple[int, int]]]:
        import time

        time.sleep(0.3)
        return iter([[(0, min(4096, size))]])


def test_plan_setup_is_not_timed_as_reading(tmp_path: Path, pattern_file: Path) -> None:
    summary, _ = _run(tmp_path, ReadConfig([str(pattern_file)], _SlowPlan()))
    assert summary["bytes"] == 4096
    assert summary["seconds"] < 0.2, summary  # the 0.3 s set-up happened before the clock
    assert summary["open_seconds"] >= 0.3


def test_stride_reads_only_the_planned_blocks(tmp_path: Path, pattern_file: Path) -> None:
    size = pattern_file.stat().st_size
    plan = BlockPlan(block=4096, stride=4096)
    summary, _ = _run(tmp_path, ReadConfig([str(pattern_file)], plan))
    expected = sum(ln for req in plan.requests(size) for _o, ln in req)
    assert summary["bytes"] == expected and expected < size


def test_short_file_is_read_and_noted(tmp_path: Path) -> None:
    small = tmp_path / "small.bin"
    small.write_bytes(b"a" * 1000)
    summary, recs = _run(tmp_path, ReadConfig([str(small)], BlockPlan(block=1 << 23)))
    assert summary["bytes"] == 1000
    notes = [r for r in recs if r["type"] == "note"]
    assert notes and "less than one block" in notes[0]["message"]


def test_several_files_in_order(tmp_path: Path, pattern_file: Path) -> None:
    other = tmp_path / "other.bin"
    other.write_bytes(b"b" * 5000)
    summary, _ = _run(tmp_path, ReadConfig([str(pattern_file), str(other)], BlockPlan(block=4096)))
    assert [f["bytes_read"] for f in summary["files"]] == [pattern_file.stat().st_size, 5000]


def test_trace_out_records_the_reads(tmp_path: Path, pattern_file: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    plan = RootLikePlan(regions=2, per_region=2, seed=3)
    _run(tmp_path, ReadConfig([str(pattern_file)], plan, trace_out=trace))
    rows = read_jsonl(trace)
    size = pattern_file.stat().st_size
    assert [(r["offset"], r["length"]) for r in rows] == [c for req in plan.requests(size) for c in req]
    assert all(r["time"] > 0 for r in rows)


def test_posix_reads_return_the_right_bytes(pattern_file: Path) -> None:
    src = PosixSource(str(pattern_file))
    assert src.read(4096, 16) == 16
    assert bytes(src._buf[:4]) == (1024).to_bytes(4, "little")
    assert src.vector_read([(0, 8), (8, 8)]) == 16
    src.close()


def test_posix_reads_land_in_a_page_aligned_buffer(pattern_file: Path) -> None:
    """The kernel copies out of the page cache ~4x slower to a destination 16 bytes off a page
    (a malloc'd bytearray) on some CPUs: every read length must start on a page."""
    src = PosixSource(str(pattern_file))
    for length in (16, 1 << 20, 3000):
        src.read(0, length)
        assert _address(src._iovs[length][0]) % mmap.PAGESIZE == 0
    src.close()


def _address(view: memoryview) -> int:
    return ctypes.addressof(ctypes.c_char.from_buffer(view))


def test_open_errors_map_to_exit_codes(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError):
        open_source(str(tmp_path / "missing"))
    with pytest.raises(InvalidError):
        open_source(str(tmp_path))
    with pytest.raises(InvalidError):
        open_source("http://example.org/x")


class _FlakySource:
    """Fails once at a given offset, like a server restarted during the run."""

    supports_vector = False
    failures = 0

    def __init__(self, url: str, size: int = 10_000, fail_at: int = 4000, broken: bool = False) -> None:
        self.url, self.size, self.fail_at, self.broken = url, size, fail_at, broken

    def read(self, offset: int, length: int) -> int:
        if offset == self.fail_at and (_FlakySource.failures == 0 or self.broken):
            _FlakySource.failures += 1
            raise ReadError("connection reset by peer")
        return min(length, self.size - offset)

    def vector_read(self, chunks: list[tuple[int, int]]) -> int:
        return sum(self.read(o, n) for o, n in chunks)

    def close(self) -> None:
        pass


def test_failed_read_is_recorded_as_a_gap_and_the_run_continues(tmp_path: Path) -> None:
    _FlakySource.failures = 0
    cfg = ReadConfig(["root://x//f"], BlockPlan(block=1000), reconnect_timeout=5)
    summary, recs = _run(tmp_path, cfg, opener=_FlakySource)
    assert summary["status"] == "ok" and summary["bytes"] == 10_000
    assert [r["type"] for r in recs if r["type"] in ("error", "gap")] == ["error", "gap"]
    assert summary["gaps"][0]["recovered"] is True


def test_server_that_stays_down_ends_the_run_keeping_intervals(tmp_path: Path) -> None:
    _FlakySource.failures = 0
    calls = {"n": 0}

    def opener(url: str) -> _FlakySource:
        calls["n"] += 1
        if calls["n"] > 1:
            raise ReadError("connection refused")
        return _FlakySource(url)

    cfg = ReadConfig(["root://x//f"], BlockPlan(block=1000), reconnect_timeout=1.0)
    summary, recs = _run(tmp_path, cfg, opener=opener)
    assert summary["status"] == "failed" and summary["ended_by"] == "error"
    assert summary["bytes"] == 4000
    assert "connection reset" in summary["error"]
    assert sum(r["bytes"] for r in recs if r["type"] == "interval") == 4000


class _Endless:
    """A plan that never ends by itself."""

    def requests(self, size: int) -> Iterator[list[tuple[int, int]]]:
        while True:
            yield [(0, 16)]


def test_duration_stops_the_run(tmp_path: Path, pattern_file: Path) -> None:
    summary, _ = _run(tmp_path, ReadConfig([str(pattern_file)], _Endless(), duration=0.3))
    assert summary["ended_by"] == "duration"
    assert 0.3 <= summary["seconds"] < 2.0


def test_output_is_json_lines(tmp_path: Path, pattern_file: Path) -> None:
    _run(tmp_path, ReadConfig([str(pattern_file)], BlockPlan(block=1 << 16)))
    for line in (tmp_path / "out.jsonl").read_text().splitlines():
        assert isinstance(json.loads(line), dict)
    assert not list(tmp_path.glob(".*.part")), "temporary file left behind"


def test_repeat_reads_the_files_again_until_the_duration(tmp_path: Path, pattern_file: Path) -> None:
    size = pattern_file.stat().st_size
    cfg = ReadConfig([str(pattern_file)], BlockPlan(block=1 << 20), duration=0.3, repeat=True)
    summary, recs = _run(tmp_path, cfg)
    assert summary["bytes"] > 2 * size and summary["files"][0]["bytes_read"] == summary["bytes"]
    assert summary["seconds"] >= 0.3
    assert sum(r["bytes"] for r in recs if r["type"] == "interval") == summary["bytes"]


def test_rate_paces_the_reads_to_the_demand(tmp_path: Path, pattern_file: Path) -> None:
    """A client that demands 2 MiB/s reads the 1 MiB file in no less than about half a second (the
    test is about time itself: pacing; only a lower bound, which a slow machine cannot break)."""
    size = pattern_file.stat().st_size
    summary, _ = _run(tmp_path, ReadConfig([str(pattern_file)], BlockPlan(block=65536), rate=2 * 2**20))
    assert summary["bytes"] == size
    # the last block is due at (size - one block) / rate after the start
    assert summary["seconds"] >= (size - 65536) / (2 * 2**20) * 0.98


def test_a_stop_set_before_the_start_ends_the_read_after_one_request(
    tmp_path: Path, pattern_file: Path
) -> None:
    """A thread told to stop (a study's Ctrl-C) ends its reads as at the deadline, and says so."""
    import threading

    stop = threading.Event()
    stop.set()
    cfg = ReadConfig(
        [str(pattern_file)], BlockPlan(block=65536), duration=600, repeat=True, rate=1000.0, stop=stop
    )
    summary, _ = _run(tmp_path, cfg)
    assert summary["ended_by"] == "stopped" and summary["bytes"] == 65536
