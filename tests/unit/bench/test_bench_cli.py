"""``afkit bench`` command lines: outputs, exit codes, the host monitor."""

from __future__ import annotations

from pathlib import Path

import pytest
from waitsupport import wait_until

from afkit import cli
from afkit.bench.records import read_jsonl
from afkit.errors import ExitCode


def test_read_writes_intervals_summary_and_monitor(tmp_path: Path, pattern_file: Path) -> None:
    out = tmp_path / "r.jsonl"
    assert cli.main(["bench", "read", str(pattern_file), "--block", "4k", "-o", str(out)]) == 0
    recs = read_jsonl(out)
    summary = recs[-1]
    assert summary["type"] == "summary" and summary["bytes"] == pattern_file.stat().st_size
    prov = summary["provenance"]
    assert prov["afkit_version"] and prov["host"] and prov["args"]["block"] == "4k"
    assert summary["monitor"]["file"].endswith("r.monitor.jsonl")
    assert (tmp_path / "r.monitor.jsonl").is_file()


def test_monitor_samples_each_interval(tmp_path: Path) -> None:
    from afkit.bench.monitor import HostMonitor

    path = tmp_path / "m.jsonl"
    with HostMonitor(path, interval=0.1) as mon:
        wait_until(lambda: mon.samples >= 3, 30, 0.05, what="three samples of the host monitor")
    recs = read_jsonl(path)
    assert mon.samples == len(recs) >= 3
    rec = recs[0]
    for key in ("cpu_percent", "load", "net_recv_bps", "net_sent_bps"):
        assert key in rec


@pytest.mark.parametrize(
    ("argv", "code"),
    [
        (["bench", "read", "/nonexistent/file"], ExitCode.NOT_FOUND),
        (["bench", "read", "--block", "huge", "x"], ExitCode.USAGE),
        (["bench", "read", "--duration", "0", "x"], ExitCode.USAGE),
        (["bench", "read", "--replay", "/nonexistent.csv", "x"], ExitCode.NOT_FOUND),
        (["bench", "analysis", "-b", "x", "/nonexistent.root"], ExitCode.NOT_FOUND),
    ],
)
def test_bad_input_exit_codes(argv: list[str], code: int, tmp_path: Path) -> None:
    assert cli.main([*argv, "-o", str(tmp_path / "o.jsonl")]) == code
    assert list(tmp_path.iterdir()) == [], "files were left for a run that measured nothing"


def test_root_url_without_bindings_is_a_prereq_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "XRootD", None)
    assert cli.main(["bench", "read", "--no-monitor", "root://127.0.0.1:1//x"]) == ExitCode.PREREQ


def test_replay_of_a_trace(tmp_path: Path, pattern_file: Path) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text("offset,length\n0,100\n5000,200\n")
    out = tmp_path / "o.jsonl"
    assert (
        cli.main(["bench", "read", "--no-monitor", "--replay", str(trace), "-o", str(out), str(pattern_file)])
        == 0
    )
    assert read_jsonl(out)[-1]["bytes"] == 300


@pytest.mark.parametrize(
    "argv",
    [
        ["bench", "read"],
        ["bench", "multi"],
        ["bench", "merge"],
        ["bench", "analysis"],
        ["bench", "multi-analysis"],
        ["bench", "gen", "random"],
        ["bench", "gen", "aod"],
        ["bench", "gen", "ao2d"],
        ["bench", "gen", "esd"],
        ["bench", "disk"],
        ["bench", "compare"],
        ["bench", "plot"],
        ["storage", "up"],
        ["storage", "down"],
        ["storage", "status"],
        ["storage", "url"],
        ["storage", "render"],
    ],
)
def test_every_subcommand_has_help(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main([*argv, "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: afkit " + " ".join(argv))
