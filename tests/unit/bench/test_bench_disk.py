"""Disk-server tests, device settings, before/after comparison and read-pattern plots."""

from __future__ import annotations

from pathlib import Path

import pytest

from afkit import cli
from afkit.bench.devinfo import describe, mount_of, scheduler_name
from afkit.bench.disk import compare
from afkit.bench.records import read_jsonl
from afkit.bench.trace import TraceEntry
from afkit.errors import ExitCode

MOUNTINFO = """\
22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw,discard
30 22 0:26 / /data rw,noatime,nodiratime - xfs /dev/sdb1 rw,attr2,inode64
31 30 0:27 / /data/scratch rw - tmpfs tmpfs rw,size=1024k
"""


def test_mount_of_picks_the_deepest_mount() -> None:
    assert mount_of(Path("/data/x/y"), MOUNTINFO)["fstype"] == "xfs"
    assert mount_of(Path("/data/x/y"), MOUNTINFO)["mount_options"] == "rw,noatime,nodiratime"
    assert mount_of(Path("/data/scratch/f"), MOUNTINFO)["fstype"] == "tmpfs"
    assert mount_of(Path("/database"), MOUNTINFO)["mount_point"] == "/"


def test_scheduler_in_brackets() -> None:
    assert scheduler_name("mq-deadline kyber [none]") == "none"
    assert scheduler_name("[mq-deadline] none") == "mq-deadline"


def test_describe_this_host(tmp_path: Path) -> None:
    info = describe(tmp_path)
    assert info["mount_point"] and info["fstype"]
    assert "device" in info


def test_disk_run_records_every_test_and_the_device(tmp_path: Path) -> None:
    target = tmp_path / "t"
    target.mkdir()
    out = tmp_path / "d.jsonl"
    argv = ["bench", "disk", str(target), "--size", "2MiB", "--block", "256k", "--rand-block", "16k"]
    assert cli.main([*argv, "--label", "before", "--no-monitor", "-o", str(out)]) == 0
    summary = read_jsonl(out)[-1]
    by_test = {r["test"]: r for r in summary["results"]}
    assert set(by_test) == {"seqwrite", "seqread", "randread", "replay"}
    assert (
        by_test["seqwrite"]["bytes"] == by_test["seqread"]["bytes"] == by_test["randread"]["bytes"] == 2 << 20
    )
    assert 0 < by_test["replay"]["bytes"] < 2 << 20
    assert by_test["randread"]["ops"] == (2 << 20) // (16 << 10)
    assert summary["device"]["mount_point"] and summary["label"] == "before"
    assert list(target.iterdir()) == [], "the test file was not removed"
    intervals = [r for r in read_jsonl(out) if r["type"] == "interval"]
    assert {r["test"] for r in intervals} == {"seqwrite", "seqread", "randread", "replay"}


def test_disk_errors(tmp_path: Path) -> None:
    assert cli.main(["bench", "disk", str(tmp_path / "none"), "--no-monitor"]) == ExitCode.NOT_FOUND
    assert cli.main(["bench", "disk", str(tmp_path), "--size", "1k", "--no-monitor"]) == ExitCode.USAGE
    assert (
        cli.main(["bench", "disk", str(tmp_path), "--size", "2MiB", "--tests", "seqread,fly", "--no-monitor"])
        == ExitCode.USAGE
    )


def test_compare_ratios_and_changed_settings() -> None:
    before = {
        "label": "ra-128",
        "results": [{"test": "seqread", "gbps": 2.0}, {"test": "randread", "gbps": 1.0}],
        "device": {"read_ahead_kb": "128", "scheduler": "mq-deadline"},
    }
    after = {
        "label": "ra-4096",
        "results": [{"test": "seqread", "gbps": 3.0}, {"test": "randread", "gbps": 1.0}],
        "device": {"read_ahead_kb": "4096", "scheduler": "mq-deadline"},
    }
    result = compare(before, after)
    assert [(t["test"], t["ratio"]) for t in result["tests"]] == [("seqread", 1.5), ("randread", 1.0)]
    assert result["changed_settings"] == {"read_ahead_kb": ["128", "4096"]}


def test_compare_command_needs_disk_results(tmp_path: Path) -> None:
    other = tmp_path / "o.jsonl"
    other.write_text('{"type":"summary","kind":"read"}\n')
    assert cli.main(["bench", "compare", str(other), str(other)]) == ExitCode.INVALID


@pytest.mark.parametrize("timed", [True, False])
def test_plots_are_written(tmp_path: Path, timed: bool) -> None:
    from afkit.bench.plots import plot_trace

    entries = [TraceEntry(i * 5000, 100 + 37 * i, 0.01 * i if timed else None) for i in range(200)]
    paths = plot_trace(entries, tmp_path / "plots", title="t")
    for p in paths:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not list((tmp_path / "plots").glob(".*part*"))


def test_plot_command_from_a_recorded_trace(tmp_path: Path, pattern_file: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    argv = ["bench", "read", "--no-monitor", "--pattern", "root-like", "--trace-out", str(trace)]
    assert cli.main([*argv, "-o", str(tmp_path / "r.jsonl"), str(pattern_file)]) == 0
    assert cli.main(["bench", "plot", str(trace), "--outdir", str(tmp_path / "p")]) == 0
    assert (tmp_path / "p" / "offset_vs_time.png").is_file() and (tmp_path / "p" / "read_sizes.png").is_file()
