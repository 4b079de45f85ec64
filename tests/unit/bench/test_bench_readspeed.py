"""rootreadspeed's output parsed from real runs of ROOT 6.40's binary; its command line."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from afkit.bench import readspeed

CAPTURED = Path(__file__).resolve().parents[2] / "data" / "rootreadspeed"


def captured(name: str) -> str:
    return (CAPTURED / f"rootreadspeed-{name}.txt").read_text()


def test_threads1_output_gives_times_bytes_and_setup() -> None:
    r = readspeed.parse(captured("threads1"))
    assert r.threads == 1
    assert r.real_s == pytest.approx(1.31673)
    assert r.cpu_s == pytest.approx(0.42)
    assert r.compressed_bytes == 69459283
    assert r.uncompressed_bytes == 0
    assert r.setup_real_s == pytest.approx(0.270674)
    assert r.cpu_efficiency_percent == pytest.approx(31.8972)


def test_io_bound_verdict_is_named() -> None:
    assert readspeed.parse(captured("threads1")).verdict == "io-bound"


def test_balanced_verdict_is_named() -> None:
    assert readspeed.parse(captured("xrootd")).verdict == "balanced"


def test_sequential_output_has_no_setup_time_and_zero_threads() -> None:
    r = readspeed.parse(captured("sequential"))
    assert (r.threads, r.setup_real_s) == (0, None)
    assert r.compressed_bytes == 63301457


def test_decompression_verdict_is_named() -> None:
    text = captured("threads1").replace("likely I/O bound.", "likely CPU bound (decompression).")
    assert readspeed.parse(text).verdict == "decompression-bound"


def test_mbps_counts_compressed_bytes_per_real_second() -> None:
    r = readspeed.parse(captured("xrootd"))
    assert r.mbps == pytest.approx(69459283 * 8 / 1e6 / 0.706305)


def test_events_per_s_from_the_entries_given() -> None:
    r = readspeed.parse(captured("xrootd"))
    assert r.events_per_s(740) == pytest.approx(740 / 0.706305)
    rec = r.record(740)
    assert rec["events"] == 740 and rec["verdict"] == "balanced" and rec["mbps"] > 0


def test_unfinished_output_is_refused_naming_the_missing_figures() -> None:
    with pytest.raises(readspeed.ReadSpeedError, match="real_s"):
        readspeed.parse("Total number of tasks: 10\nThread pool size:\t\t1\n")


def test_unknown_verdict_is_refused() -> None:
    text = captured("threads1").replace("likely I/O bound.", "fast.")
    with pytest.raises(readspeed.ReadSpeedError, match="verdict"):
        readspeed.parse(text)


def test_command_with_one_thread() -> None:
    cmd = readspeed.command(["a.root", "b.root"], "Events", ["x", "y"], threads=1)
    assert cmd == ["rootreadspeed", "--files", "a.root", "b.root", "--trees", "Events",
                   "--branches", "x", "y", "--threads", "1"]  # fmt: skip


def test_command_sequential_has_no_threads_option() -> None:
    assert "--threads" not in readspeed.command(["a.root"], "T", ["x"], threads=0)


def test_command_with_a_tree_per_file_for_a_tree_pattern() -> None:
    """AO2D's DF_*/O2track: the file once per tree, the i-th tree read from the i-th file."""
    cmd = readspeed.command(["a.root", "a.root"], "DF_1/O2track", ["fX"], extra_trees=["DF_2/O2track"])
    assert cmd[: cmd.index("--branches")] == ["rootreadspeed", "--files", "a.root", "a.root",
                                              "--trees", "DF_1/O2track", "DF_2/O2track"]  # fmt: skip


def test_command_refuses_trees_that_do_not_pair_with_the_files() -> None:
    with pytest.raises(ValueError, match="one tree per file"):
        readspeed.command(["a.root"], "DF_1/O2track", ["fX"], extra_trees=["DF_2/O2track"])


def test_command_needs_files_and_branches() -> None:
    with pytest.raises(ValueError, match="file and one branch"):
        readspeed.command([], "T", ["x"])


def _stub(tmp_path: Path, body: str) -> str:
    exe = tmp_path / "rootreadspeed"
    exe.write_text(f"#!/bin/sh\n{body}\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return str(exe)


def test_run_forces_root_urls_through_xrootd(tmp_path: Path) -> None:
    out = CAPTURED / "rootreadspeed-xrootd.txt"
    exe = _stub(tmp_path, f'cat .rootrc > "{tmp_path}/rc"; cat "{out}"')
    result, _ = readspeed.run(["root://127.0.0.1:1094//f.root"], "Events", ["x"], exe=exe)
    assert (tmp_path / "rc").read_text() == readspeed.FORCE_REMOTE_RC
    assert result.verdict == "balanced"


def test_run_leaves_local_paths_alone(tmp_path: Path) -> None:
    out = CAPTURED / "rootreadspeed-threads1.txt"
    exe = _stub(tmp_path, f'test -e .rootrc && touch "{tmp_path}/rc"; cat "{out}"')
    readspeed.run(["/data/f.root"], "Events", ["x"], exe=exe)
    assert not (tmp_path / "rc").exists()


def test_run_failure_names_rootreadspeeds_message(tmp_path: Path) -> None:
    exe = _stub(tmp_path, "echo \"  what():  Could not retrieve branch 'nope'\" >&2; exit 134")
    with pytest.raises(readspeed.ReadSpeedError, match=r"exited 134.*Could not retrieve branch 'nope'"):
        readspeed.run(["/data/f.root"], "Events", ["nope"], exe=exe)


def test_run_without_rootreadspeed_says_root_provides_it(tmp_path: Path) -> None:
    with pytest.raises(readspeed.ReadSpeedError, match=r"ROOT >= 6\.28 provides it"):
        readspeed.run(["/data/f.root"], "Events", ["x"], exe=str(tmp_path / "absent"))


def test_run_real_rootreadspeed_on_a_real_file() -> None:
    """The cached ROOT 6.40 build (the CVMFS fixture's upstream cache) on a testdata file."""
    from tests.fixtures.cvmfsfix.upstream import root_tree

    exe = root_tree() / "ROOT" / "bin" / "rootreadspeed"
    data = Path(__file__).resolve().parents[2] / "data" / "uproot-HZZ.root"
    result, text = readspeed.run([str(data)], "events", ["Muon_Px", "Muon_Py"], exe=str(exe),
                                 env={**os.environ, "ROOTENV_NO_HOME": "1"})  # fmt: skip
    assert result.threads == 1 and result.compressed_bytes > 0
    assert "Reading data is" in text


def _real_root_env() -> dict[str, str]:
    from tests.fixtures.cvmfsfix.upstream import root_tree

    return {**os.environ, "PATH": f"{root_tree() / 'ROOT' / 'bin'}:{os.environ['PATH']}"}


def test_campaign_payload_reports_bytes_events_and_the_verdict(monkeypatch: pytest.MonkeyPatch) -> None:
    """payload: rootreadspeed as the job runs it, with the real ROOT 6.40 on PATH."""
    monkeypatch.setenv("PATH", _real_root_env()["PATH"])
    data = Path(__file__).resolve().parents[2] / "data" / "uproot-HZZ.root"
    intervals, summary = readspeed.payload({"tree": "events", "branches": ["Muon_Px"]}, [str(data)])
    assert summary["events"] == 2421
    assert summary["bytes"] == summary["readspeed"]["compressed_bytes"] > 0
    assert summary["readspeed"]["verdict"] in readspeed.VERDICTS.values()
    assert [i["bytes"] for i in intervals] == [summary["bytes"]]


def test_campaign_payload_refuses_a_tree_pattern() -> None:
    with pytest.raises(readspeed.ReadSpeedError, match="one tree by name"):
        readspeed.payload({"tree": "DF_*/O2track", "branches": ["fPt"]}, ["f.root"])


def test_the_jobs_processing_step_with_payload_rootreadspeed_matches_the_record_contract(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """afkit.campaign.processing.process as a campaign job runs it (the real ROOT 6.40 on PATH)."""
    from afkit.campaign import jobrecord, processing
    from afkit.campaign.contract import Job, PayloadResult, PayloadSpec

    monkeypatch.setenv("PATH", _real_root_env()["PATH"])
    data = Path(__file__).resolve().parents[2] / "data" / "uproot-HZZ.root"
    job = Job(bench="b", type="analysis", site="s", dataset="d", scenario="origin", access="direct",
              clients=1, block_size="1M", stride="0", repetition=0, payload="rootreadspeed",
              branches=("Muon_Px", "Muon_Py"))  # fmt: skip
    spec = PayloadSpec(job=job, tree="events", scratch=str(tmp_path), stage_out="", result="", t_launch=0.0)
    out = processing.process(spec, [str(data)], tmp_path / "bench")
    rec = PayloadResult(host="wn", container_start=1.0, status="ok", steps={"processing": 0.5},
                        processing_start=1.0, bytes_staged=0, bytes_out=0).updated(out)  # fmt: skip
    assert jobrecord.problems(rec.to_dict(), part="payload") == []
    assert out.readspeed is not None
    assert out.events == 2421 and out.readspeed_verdict == out.readspeed["verdict"]
    assert out.bytes == out.readspeed["compressed_bytes"] > 0
