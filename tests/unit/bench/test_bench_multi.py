"""The multi-client runner (real processes on local files) and the merge of results."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from afkit import cli
from afkit.bench.multi import split_files
from afkit.bench.records import read_jsonl
from afkit.errors import ExitCode, UsageError


def test_split_gives_every_client_different_files() -> None:
    assert split_files(["a", "b", "c", "d", "e"], 2) == [["a", "c", "e"], ["b", "d"]]
    with pytest.raises(UsageError):
        split_files(["a"], 2)
    with pytest.raises(UsageError):
        split_files(["a", "a"], 2)
    with pytest.raises(UsageError):
        split_files(["a"], 0)


def test_three_clients_are_released_together_and_summed(tmp_path: Path, pattern_file: Path) -> None:
    files = []
    for i in range(3):
        dest = tmp_path / f"copy{i}.bin"
        shutil.copyfile(pattern_file, dest)
        files.append(str(dest))
    outdir = tmp_path / "run"
    code = cli.main(["bench", "multi", "-n", "3", "--outdir", str(outdir), "--block", "64k", *files])
    assert code == 0
    size = pattern_file.stat().st_size
    clients = [read_jsonl(outdir / f"client-{i:03d}.jsonl") for i in range(3)]
    summaries = [c[-1] for c in clients]
    assert [s["bytes"] for s in summaries] == [size] * 3
    assert sorted(s["client"] for s in summaries) == [0, 1, 2]
    assert {s["files"][0]["url"] for s in summaries} == set(files)
    assert all(s["provenance"]["args"]["block"] == "64k" for s in summaries)
    assert [s["ops"] for s in summaries] == [-(-size // (64 << 10))] * 3, "clients ignored --block"
    starts = [min(r["t"] for r in c if r["type"] == "interval") for c in clients]
    assert max(starts) - min(starts) <= 1, "clients were not released together"
    summed = read_jsonl(outdir / "sum.jsonl")
    assert summed[-1]["type"] == "summary" and summed[-1]["bytes"] == 3 * size
    assert sum(r["bytes"] for r in summed if r["type"] == "interval") == 3 * size
    assert (outdir / "monitor.jsonl").is_file()


def test_a_client_that_cannot_open_stops_all_with_its_code(tmp_path: Path, pattern_file: Path) -> None:
    outdir = tmp_path / "run"
    code = cli.main(
        [
            "bench",
            "multi",
            "-n",
            "2",
            "--outdir",
            str(outdir),
            "--no-monitor",
            str(pattern_file),
            "/nonexistent",
        ]
    )
    assert code == ExitCode.NOT_FOUND
    assert not list(outdir.glob("client-*.jsonl")) and not (outdir / "sum.jsonl").exists()


def test_merge_sums_series_of_several_nodes(tmp_path: Path) -> None:
    a = tmp_path / "a.jsonl"
    b = tmp_path / "b.jsonl"
    a.write_text('{"type":"interval","t":10,"bytes":5,"covered":1.0}\n{"type":"summary","bytes":5}\n')
    b.write_text('{"type":"interval","t":10,"bytes":1,"covered":1.0}\n{"type":"interval","t":11,"bytes":2}\n')
    out = tmp_path / "m.jsonl"
    assert cli.main(["bench", "merge", "-o", str(out), str(a), str(b)]) == 0
    recs = read_jsonl(out)
    assert [(r["t"], r["bytes"], r["clients"]) for r in recs[:-1]] == [(10, 6, 2), (11, 2, 1)]
    assert recs[-1]["kind"] == "merge" and recs[-1]["bytes"] == 8


def test_merge_of_a_missing_file_is_not_found(tmp_path: Path) -> None:
    assert cli.main(["bench", "merge", "-o", str(tmp_path / "m"), str(tmp_path / "x")]) == ExitCode.NOT_FOUND


def test_analysis_clients_are_summed_with_their_events(tmp_path: Path, data_dir: Path) -> None:
    files = [str(data_dir / "uproot-HZZ-zlib.root"), str(data_dir / "uproot-HZZ-zstd.root")]
    outdir = tmp_path / "ana"
    argv = ["bench", "multi-analysis", "-n", "2", "--outdir", str(outdir), "--no-monitor", "-b", "Jet_Px"]
    assert cli.main([*argv, *files]) == 0
    clients = [read_jsonl(outdir / f"client-{i:03d}.jsonl")[-1] for i in range(2)]
    assert [c["events"] for c in clients] == [2421, 2421]
    summed = read_jsonl(outdir / "sum.jsonl")
    assert summed[-1]["kind"] == "multi-analysis"
    assert summed[-1]["events"] == 2 * 2421 and summed[-1]["client_events"] == [2421, 2421]
    assert sum(r.get("events", 0) for r in summed if r["type"] == "interval") == 2 * 2421


def test_analysis_client_with_a_missing_branch_stops_all(tmp_path: Path, data_dir: Path) -> None:
    files = [str(data_dir / "uproot-HZZ-zlib.root"), str(data_dir / "uproot-Zmumu.root")]
    argv = [
        "bench",
        "multi-analysis",
        "-n",
        "2",
        "--outdir",
        str(tmp_path / "a"),
        "--no-monitor",
        "-b",
        "Jet_Px",
    ]
    assert cli.main([*argv, *files]) == ExitCode.NOT_FOUND


def test_thread_clients_report_the_real_failure_not_the_broken_barrier(
    tmp_path: Path, pattern_file: Path
) -> None:
    from afkit.bench.multi import run_threads
    from afkit.bench.offsets import BlockPlan
    from afkit.bench.readbench import ReadConfig
    from afkit.errors import NotFoundError

    good = ReadConfig([str(pattern_file)], BlockPlan(block=65536))
    summaries = run_threads([good, good], tmp_path / "ok")
    assert [s["bytes"] for s in summaries] == [pattern_file.stat().st_size] * 2
    gone = ReadConfig([str(tmp_path / "gone.bin")], BlockPlan(block=65536))
    with pytest.raises(NotFoundError, match=r"gone\.bin"):
        run_threads([good, gone], tmp_path / "failed")


def test_a_ctrl_c_while_clients_still_open_frees_the_ones_at_the_barrier(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C while one client still opens its file: the client waiting at the barrier is let go at
    once (not after BARRIER_TIMEOUT), and the interrupt reaches the caller."""
    import signal
    import threading

    from afkit.bench import multi
    from afkit.bench.offsets import BlockPlan
    from afkit.bench.readbench import ReadConfig

    at_barrier, freed, opening, release = (threading.Event() for _ in range(4))
    outcome: list[str] = []
    main = threading.main_thread().ident
    assert main is not None

    def fake_client(cfg: ReadConfig, writer: object, wait: object) -> dict[str, object]:
        if cfg.urls == ["first"]:
            at_barrier.set()
            try:
                wait()  # type: ignore[operator]
            except threading.BrokenBarrierError:
                outcome.append("broken")
                freed.set()
                raise
            outcome.append("released")
            return {"type": "summary", "status": "ok"}
        opening.set()
        at_barrier.wait()
        signal.pthread_kill(main, signal.SIGINT)  # the terminal's Ctrl-C, as Linux delivers it
        release.wait(60)  # still opening its file
        return {"type": "summary", "status": "ok"}

    monkeypatch.setattr(multi, "run_client", fake_client)
    monkeypatch.setattr(multi, "STOP_GRACE_S", 0.1, raising=False)
    # Python's own Ctrl-C handler, whatever the test run inherited (started with '&' by a script,
    # SIGINT is ignored, and Python then installs no handler)
    old_handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    plan = BlockPlan(block=65536)
    try:
        with pytest.raises(KeyboardInterrupt):
            multi.run_threads([ReadConfig(["first"], plan), ReadConfig(["second"], plan)], tmp_path / "run")
        assert freed.wait(10), "the client at the barrier was not let go"
        assert outcome == ["broken"]
        assert not release.is_set() and opening.is_set()  # the interrupt did not wait for the opener
    finally:
        release.set()
        signal.signal(signal.SIGINT, old_handler)
