"""AO2D- and ESD-shaped files written by the real ROOT (afkit bench gen ao2d|esd), read by uproot."""

from __future__ import annotations

import contextlib
import io
import json
import os
from pathlib import Path
from typing import Any

import pytest

from afkit import cli
from afkit.bench import rootgen, treepattern
from afkit.errors import ExitCode, UsageError

TOLERANCE = 0.10  # on-disk bytes per event within 10 % of the papers'


def _gen(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[dict[str, Any]]]:
    code = cli.main(["bench", "gen", *argv])
    out = capsys.readouterr().out
    return code, [json.loads(line) for line in out.splitlines() if line.startswith("{")]


@pytest.fixture(scope="module")
def ao2d(root_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """8 MB of AO2D in zstd:5 (O2's 505), 5 collisions per DF: 19 collisions in 4 DF folders."""
    out = tmp_path_factory.mktemp("ao2d")
    argv = ["ao2d", "--size", "8MB", "--outdir", str(out), "--compression", "zstd:5", "--df-events", "5"]
    assert cli.main(["bench", "gen", *argv, "--root", str(root_dir)]) == 0
    (path,) = out.glob("ao2d-*.root")
    return path, {"argv": argv}


def test_ao2d_has_df_folders_with_the_o2_tables(ao2d: tuple[Path, dict[str, Any]]) -> None:
    import uproot

    path, _ = ao2d
    with uproot.open(path) as f:
        trees = [k for k, c in f.classnames().items() if c == "TTree"]
        assert treepattern.select("DF_*/O2collision", trees) == [
            f"DF_{n}/O2collision" for n in range(1000000, 1000004)
        ]
        for table in ("O2bc", "O2track", "O2trackcov", "O2trackextra"):
            assert len(treepattern.select(f"DF_*/{table}", trees)) == 4, table
        assert f.classnames()["metaData;1"] == "TMap"
        track = f["DF_1000000/O2track"]
        assert track.typenames() == {
            "fIndexCollisions": "int32_t", "fTrackType": "uint8_t", "fX": "float", "fAlpha": "float",
            "fY": "float", "fZ": "float", "fSnp": "float", "fTgl": "float", "fSigned1Pt": "float",
        }  # fmt: skip
        assert f["DF_1000000/O2collision"].typenames()["fNumContrib"] == "uint16_t"
        assert f["DF_1000000/O2trackcov"].typenames()["fRhoZY"] == "int8_t"


def test_ao2d_index_column_points_at_the_collisions_of_its_df(ao2d: tuple[Path, dict[str, Any]]) -> None:
    import numpy as np
    import uproot

    path, _ = ao2d
    with uproot.open(path) as f:
        collisions = sum(f[t].num_entries for t in treepattern.select("DF_*/O2collision", f.keys()))
        assert collisions == 19
        last = f["DF_1000003"]
        index = last["O2track"]["fIndexCollisions"].array(library="np")
        assert np.all(np.diff(index) >= 0) and set(index) == set(range(last["O2collision"].num_entries))
        assert last["O2trackextra"].num_entries == last["O2track"].num_entries == len(index)


def test_ao2d_size_and_compression(ao2d: tuple[Path, dict[str, Any]]) -> None:
    path, _ = ao2d
    per_event = path.stat().st_size / 19
    assert abs(per_event / rootgen.AOD_EVENT_BYTES - 1) < TOLERANCE, per_event
    import uproot

    with uproot.open(path) as f:
        assert f.file.fCompress == 505  # TFile's compression setting: zstd level 5


@pytest.fixture(scope="module")
def esd(root_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    """6 MB of ESD written by `afkit bench gen esd` (ROOT's default compression): the file and the
    records the command printed."""
    out = tmp_path_factory.mktemp("esd")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = cli.main(["bench", "gen", "esd", "--size", "6MB", "--outdir", str(out),
                         "--root", str(root_dir)])  # fmt: skip
    assert code == 0
    return out / "esd-000.root", [json.loads(line) for line in printed.getvalue().splitlines()
                                  if line.startswith("{")]  # fmt: skip


def test_esd_is_a_split_esd_tree(esd: tuple[Path, list[dict[str, Any]]]) -> None:
    import uproot

    path, records = esd
    (rec,) = records
    assert (rec["events"], rec["compression"], rec["trees"]) == (3, 101, ["esdTree"])  # ROOT's default
    with uproot.open(path) as f:
        tree = f["esdTree"]
        assert tree.num_entries == 3
        for branch in ("AliESDRun.", "AliESDHeader.", "PrimaryVertex.", "Tracks", "V0s", "CaloClusters"):
            assert branch in tree.keys(recursive=False), branch
        assert {"Tracks.fP[5]", "Tracks.fC[15]", "V0s.fParamN.fP[5]"} <= set(
            tree.keys(filter_typename=None, full_paths=False)
        )
        pz = tree["Tracks/Tracks.fP[5]"].array(library="np")
        assert len(pz) == 3 and pz[0].shape[1] == 5
    assert abs(rec["bytes_per_event"] / rootgen.ESD_EVENT_BYTES - 1) < TOLERANCE


def test_same_parameters_are_kept_others_refused(
    root_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["ao2d", "--size", "1MB", "--outdir", str(tmp_path), "--root", str(root_dir)]
    assert _gen(capsys, *argv)[0] == 0
    path = tmp_path / "ao2d-000.root"
    before = path.stat().st_mtime_ns
    code, (rec,) = _gen(capsys, *argv)
    assert code == 0 and rec["kept"] is True and path.stat().st_mtime_ns == before
    assert _gen(capsys, *argv, "--seed", "2")[0] == ExitCode.UNSAFE
    assert path.stat().st_mtime_ns == before
    code, (rec,) = _gen(capsys, *argv, "--seed", "2", "--force")
    assert code == 0 and rec["kept"] is False
    assert not list(tmp_path.glob(".*")), "no temporary file left"


def test_without_root_exit_3_names_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("ROOTSYS", raising=False)
    assert (
        cli.main(["bench", "gen", "esd", "--size", "4MB", "--outdir", str(tmp_path / "o")]) == ExitCode.PREREQ
    )
    err = capsys.readouterr().err
    assert "ROOT not found" in err and "--root DIR" in err
    assert not list((tmp_path / "o").iterdir())


@pytest.mark.parametrize(
    ("spec", "setting"),
    [
        ("default", -1),
        ("none", 0),
        ("505", 505),
        ("zstd:5", 505),
        ("zlib:1", 101),
        ("LZMA:9", 209),
        ("404", 404),
    ],
)
def test_compression_settings(spec: str, setting: int) -> None:
    assert rootgen.parse_compression(spec) == setting


@pytest.mark.parametrize("spec", ["snappy:1", "zstd:0", "zstd:10", "306", "5", "zstd"])
def test_bad_compression_is_a_usage_error(spec: str) -> None:
    with pytest.raises(UsageError):
        rootgen.parse_compression(spec)


def test_the_root_reader_reads_a_split_trees_members_when_no_branch_is_named(
    root_dir: Path, esd: tuple[Path, list[dict[str, Any]]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ESD tree's top-level branches are split objects and TClonesArrays: their members are
    branches of their own, which the reader must enable too (it once read 874 B of a 7 MB ESD file:
    the top-level names only)."""
    data, _ = esd
    monkeypatch.setenv("PATH", f"{root_dir / 'bin'}:{os.environ['PATH']}")
    out = tmp_path / "esd.jsonl"
    assert (
        cli.main(["bench", "analysis", "--engine", "root", "-t", "esdTree", "-o", str(out), str(data)]) == 0
    )
    summary = [json.loads(line) for line in out.read_text().splitlines()][-1]
    assert summary["status"] == "ok" and summary["events"] == 3
    assert summary["root"]["bytes_read"] > 0.9 * data.stat().st_size, summary["root"]


def test_a_file_elsewhere_with_the_same_parameters_keeps_it_and_writes_nothing(
    root_dir: Path, tmp_path: Path
) -> None:
    """kept_at (a guarded storage's file, which ROOT reads through its door): the same parameters
    keep it, and nothing is written here; other parameters are refused as for a local file."""
    from afkit.errors import UnsafeError

    cmd, shape = [str(root_dir / "bin" / "root.exe")], rootgen.SHAPES["ao2d"]
    there = tmp_path / "there.root"
    args: dict[str, Any] = {"compression": 505, "df_events": 5, "force": False}
    first = rootgen.write(cmd, shape, there, 20, seed=1, **args)
    assert first["kept"] is False
    here = tmp_path / "stage" / "0000.root"
    here.parent.mkdir()
    rec = rootgen.write(cmd, shape, here, 20, seed=1, kept_at=str(there), kept_bytes=123, **args)
    assert rec["kept"] is True and rec["bytes"] == 123
    assert not here.exists() and list(here.parent.iterdir()) == []
    with pytest.raises(UnsafeError):
        rootgen.write(cmd, shape, here, 20, seed=2, kept_at=str(there), kept_bytes=123, **args)
    rec = rootgen.write(cmd, shape, here, 20, seed=1, kept_at="", **args)  # nothing there: written
    assert rec["kept"] is False and here.stat().st_size == rec["bytes"] > 0


def test_root_writing_a_file_dies_with_the_process_that_started_it(tmp_path: Path) -> None:
    """SIGTERM's default action to the writer (snakemake stopping an interrupted dataset step) runs
    no cleanup: ROOT is started with a parent-death SIGKILL, so it does not write on, orphaned."""
    import signal
    import subprocess
    import sys

    from waitsupport import running, wait_until

    fake = tmp_path / "root.exe"
    fake.write_text(f"#!/bin/sh\necho $$ > {tmp_path / 'root.pid'}\nexec sleep 300\n")
    fake.chmod(0o755)
    writer = (
        "import sys; from pathlib import Path; from afkit.bench import rootgen\n"
        "rootgen.write([sys.argv[1]], rootgen.SHAPES['esd'], Path(sys.argv[2]), 10,"
        " compression=0, seed=1, df_events=1, force=True)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", writer, str(fake), str(tmp_path / "esd.root")])
    try:
        pidfile = tmp_path / "root.pid"
        pid = int(wait_until(lambda: pidfile.is_file() and pidfile.read_text(), 60,
                             what="the fake ROOT to start", proc=proc))  # fmt: skip
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == -signal.SIGTERM
        wait_until(lambda: not running(pid), 30, what="ROOT to die with its parent")
    finally:
        proc.kill()
        proc.wait()
    assert not (tmp_path / "esd.root").exists()
