"""ROOT's own reader (afkit.bench.rootread and its macro afkit_read.C).

The driver is tested on the macro's output lines (no ROOT) and with a stand-in ``root.exe`` (a
script printing what the macro prints); the macro itself runs with the real ROOT of the fixture's
cache (ROOT 6.40.00 from PyPI, tests/fixtures/cvmfsfix/upstream.py) on the real files of
tests/data and on an AO2D-shaped file ROOT writes here.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from afkit.bench.intervals import IntervalCounter, Record
from afkit.bench.records import JsonlWriter, read_jsonl
from afkit.bench.rootread import (
    Parsed,
    RootReadConfig,
    command,
    config_text,
    find_root,
    macro_path,
    root_errors,
    run_rootread,
)
from afkit.errors import AfkitError, ExitCode, PrereqError

REPO = Path(__file__).resolve().parents[3]
HZZ_BRANCHES = ["NMuon", "Muon_Px", "Muon_Py"]


@pytest.fixture(scope="module")
def root_bin() -> Path:
    """bin/ of the real ROOT the CVMFS fixture installs (fetched once into the upstream cache)."""
    sys.path.insert(0, str(REPO / "tests" / "fixtures"))
    try:
        from cvmfsfix import upstream
    finally:
        sys.path.pop(0)
    path = upstream.root_tree() / "ROOT" / "bin"
    assert (path / "root.exe").is_file(), path
    return path


@pytest.fixture
def with_root(root_bin: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PATH", f"{root_bin}{os.pathsep}{os.environ['PATH']}")
    return root_bin


def afkit_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "afkit", *args],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **(env or {})},
        timeout=300,
    )


def root_analysis(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``afkit bench analysis --engine root --no-monitor ARGS``."""
    return afkit_cli("bench", "analysis", "--engine", "root", "--no-monitor", *args, env=env)


def records_of(path: Path) -> tuple[list[Record], Record]:
    recs = read_jsonl(path)
    return [r for r in recs if r["type"] == "interval"], recs[-1]


# --- the driver, on the macro's lines -------------------------------------------------------------


def parse(lines: list[str], width: float = 1.0) -> tuple[Parsed, list[Record]]:
    out: list[Record] = []
    parsed = Parsed(IntervalCounter(out.append, width=width))
    for line in lines:
        parsed.line(line + "\n")
    return parsed, out


def test_samples_become_intervals_with_the_work_of_the_interval_they_end() -> None:
    parsed, intervals = parse(
        [
            "Processing afkit_read.C...",  # ROOT's own line: ignored
            "afkit-rootread ready 6.40.00",
            "afkit-rootread start 100.5 1000 10 0 0.5",
            "afkit-rootread sample 101.004 5000 14 300 0.9",  # 4 ms after the boundary: the first interval's
            "afkit-rootread sample 101.7 6000 15 350 1.2",  # a late sample: counted when it was taken
            "afkit-rootread done 102.25 9000 17 500 1.6 end-of-data",
        ]
    )
    assert [(r["t"], r["bytes"], r["events"], r["ops"]) for r in intervals] == [
        (100, 4000, 300, 4),
        (101, 1000, 50, 1),
        (102, 3000, 150, 2),
    ]
    assert parsed.ended_by == "end-of-data" and parsed.totals == (9000, 17) and parsed.version == "6.40.00"
    assert parsed.cpu == (0.5, 1.6)


def test_tree_and_hist_lines() -> None:
    parsed, _ = parse(
        [
            "afkit-rootread tree\troot://h:1094//d/f.root\tDF_1/O2track\t40\t40\t3\t12345\t1",
            "afkit-rootread hist 2421 -0.04 4.4 100",
            "afkit-rootread error 5 no branch 'x' in tree 'events' of 'f.root'",
        ]
    )
    assert parsed.trees == [
        {
            "file": "root://h:1094//d/f.root",
            "tree": "DF_1/O2track",
            "entries": 40,
            "tree_entries": 40,
            "vector_reads": 3,
            "cache_bytes": 12345,
            "uncached_read_calls": 1,
        }
    ]
    assert parsed.hist == {"entries": 2421, "range": [-0.04, 4.4], "bins": 100}
    assert parsed.error == (5, "no branch 'x' in tree 'events' of 'f.root'")


def test_read_lines_become_the_trace_in_order() -> None:
    parsed, _ = parse(
        [
            "afkit-rootread read 30115230 118 1795905544.448935 0.000012",
            "afkit-rootread read 100 2048 1795905544.449001 0.000020",
        ]
    )
    assert parsed.reads == [(1795905544.448935, 30115230, 118), (1795905544.449001, 100, 2048)]


def test_the_configuration_and_the_command() -> None:
    cfg = RootReadConfig(
        files=["a.root", "root://h//b.root"],
        branches=["x", "y"],
        tree="DF_*/O2track",
        reader="rdataframe",
        work="histogram",
        cache_mb=20,
        duration=5,
        interval=0.5,
    )
    assert config_text(cfg, wait=True).splitlines() == [
        "file a.root",
        "file root://h//b.root",
        "tree DF_*/O2track",
        "branch x",
        "branch y",
        "reader rdataframe",
        "work histogram",
        "width 0.5",
        "cache_mb 20",
        "duration 5",
        "wait 1",
        "trace 0",
    ]
    assert "trace 1" in config_text(RootReadConfig(files=["a"], branches=[], trace_out=Path("t")), wait=False)
    assert "cache_mb -1" in config_text(RootReadConfig(files=["a"], branches=[]), wait=False)
    cmd = command("/r/bin/root.exe", Path("/tmp/c.txt"))
    assert cmd == ["/r/bin/root.exe", "-b", "-q", "-l", f'{macro_path()}("/tmp/c.txt")']
    assert macro_path().is_file() and macro_path("rdataframe").name == "afkit_read_rdf.C"
    assert command("root.exe", Path("c"), "rdataframe")[-1] == f'{macro_path("rdataframe")}("c")'


def test_no_root_on_path_is_exit_3(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(PrereqError, match=r"ROOT not found: no root\.exe on PATH") as err:
        find_root()
    assert err.value.code == ExitCode.PREREQ


def test_the_cli_without_root_exits_3_before_any_output(tmp_path: Path, data_dir: Path) -> None:
    out = tmp_path / "o.jsonl"
    proc = root_analysis(
        str(data_dir / "uproot-HZZ.root"),
        "-o",
        str(out),
        env={"PATH": os.path.dirname(sys.executable)},
    )
    assert proc.returncode == 3, proc.stderr
    assert "afkit: error: ROOT not found: no root.exe on PATH" in proc.stderr
    assert not out.exists()


def test_the_uproot_engine_still_needs_a_branch(data_dir: Path) -> None:
    proc = afkit_cli("bench", "analysis", str(data_dir / "uproot-HZZ.root"))
    assert proc.returncode == 2
    assert "the uproot engine needs at least one branch: -b BRANCH" in proc.stderr


@pytest.fixture
def fake_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A stand-in root.exe on PATH that prints the lines of $FAKE_ROOT_OUT (after a "ready" line it
    waits for the driver's "go", exit 9 without it), then $FAKE_ROOT_ERR on stderr, and exits
    $FAKE_ROOT_RC."""
    bindir = tmp_path / "fakebin"
    bindir.mkdir()
    exe = bindir / "root.exe"
    exe.write_text(
        "#!/bin/sh\n"
        'if grep -q "rootread ready" "$FAKE_ROOT_OUT"; then\n'  # as the macro: wait for "go" after "ready"
        '  sed "/rootread ready/q" "$FAKE_ROOT_OUT"; read go; [ "$go" = go ] || exit 9\n'
        '  awk "f; /rootread ready/ {f = 1}" "$FAKE_ROOT_OUT"\n'
        'else cat "$FAKE_ROOT_OUT"; fi\n'
        'echo "$FAKE_ROOT_ERR" >&2\nexit "${FAKE_ROOT_RC:-0}"\n'
    )
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    yield tmp_path


def run_fake(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lines: list[str], rc: int = 0, err: str = ""
) -> Record:
    out = tmp_path / "lines.txt"
    out.write_text("\n".join(lines) + "\n")
    monkeypatch.setenv("FAKE_ROOT_OUT", str(out))
    monkeypatch.setenv("FAKE_ROOT_RC", str(rc))
    monkeypatch.setenv("FAKE_ROOT_ERR", err)
    with JsonlWriter(tmp_path / "r.jsonl") as writer:
        return run_rootread(RootReadConfig(files=["f.root"], branches=[]), writer)


def test_a_macro_error_keeps_its_exit_code_and_message(
    fake_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(AfkitError) as err:
        run_fake(
            fake_root,
            monkeypatch,
            ["afkit-rootread error 5 no tree matching 'x' in 'f.root' (trees: events)"],
            5,
        )
    assert err.value.code == ExitCode.NOT_FOUND
    assert str(err.value) == "ROOT reader: no tree matching 'x' in 'f.root' (trees: events)"


# What ROOT prints on stderr when TFile::Open of a root:// URL fails: TNetXNGFile's constructor
# calls Error("Open", "%s", status.ToStr()) (net/netxng/src/TNetXNGFile.cxx), which ROOT's error
# handler prints as "Error in <TNetXNGFile::Open>: ..."; XRootDStatus::ToStr of a server's error
# response is "[ERROR] Server responded with an error: [ERRNO] MESSAGE" and a newline
# (XrdCl/XrdClXRootDResponses.hh), kXR_NotFound = 3011. The [FATAL] line was recorded with
# ROOT 6.40.00 (the PyPI wheel) opening root://127.0.0.1:1//data/x.root, where nothing listens.
XRD_NOT_FOUND = ("Error in <TNetXNGFile::Open>: [ERROR] Server responded with an error: [3011] Unable to "
                 "open /data/none.root; No such file or directory\n")  # fmt: skip
XRD_NO_SERVER = "Error in <TNetXNGFile::Open>: [FATAL] Connection error"


@pytest.mark.parametrize("said", [XRD_NOT_FOUND, XRD_NO_SERVER])
def test_a_file_root_cannot_open_keeps_roots_and_xrootds_reason(
    said: str, fake_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = "root://se:1094//data/none.root"
    with pytest.raises(AfkitError) as err:
        run_fake(fake_root, monkeypatch, [f"afkit-rootread error 5 cannot open ROOT file '{url}'"], 5,
                 err=f"Processing afkit_read.C...\n{said}\n{said}")  # fmt: skip
    assert err.value.code == ExitCode.NOT_FOUND
    assert str(err.value) == f"ROOT reader: cannot open ROOT file '{url}': {said.strip()}"  # once


def test_root_errors_are_roots_own_lines_in_order() -> None:
    stderr = ("Processing afkit_read.C...\nWarning in <TClass::Init>: no dictionary for class X\n"
              f"{XRD_NOT_FOUND}\n"
              "SysError in <TFile::TFile>: could not open 'f.root' (No such file)\n")  # fmt: skip
    assert root_errors(stderr) == (XRD_NOT_FOUND.strip() + "; SysError in <TFile::TFile>: could not open "
                                   "'f.root' (No such file)")  # fmt: skip
    assert root_errors("Processing afkit_read.C...\n") == ""


def test_a_root_that_dies_is_one_line_with_roots_error(
    fake_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cling = "ERROR in cling::CIFactory::createCI(): cannot extract standard library include paths!"
    with pytest.raises(AfkitError) as err:
        run_fake(fake_root, monkeypatch, ["Processing afkit_read.C..."], 1, err=f"some noise\n{cling}")
    assert err.value.code == ExitCode.FAILURE
    assert str(err.value).endswith(f"exited 1: {cling}")
    assert "\n" not in str(err.value)


def test_the_driver_releases_the_macro_after_the_barrier(
    fake_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = [
        "afkit-rootread ready 6.40.00",
        "afkit-rootread start 10.0 100 1 0 0.1",
        "afkit-rootread tree\tf.root\tevents\t7\t7\t1\t50\t0",
        "afkit-rootread done 10.5 300 3 7 0.2 end-of-data",
    ]
    summary = run_fake(fake_root, monkeypatch, lines)
    assert summary["events"] == 7 and summary["bytes"] == 200 and summary["engine"] == "root"
    assert summary["root"] == {
        "version": "6.40.00",
        "bytes_read": 300,
        "read_calls": 3,
        "vector_reads": 1,
        "cache_bytes": 50,
        "uncached_read_calls": 0,
    }
    assert summary["cpu_s"] == pytest.approx(0.1)


# --- the macro, with the real ROOT ----------------------------------------------------------------


def test_root_reads_the_branches_and_reports_its_read_counts(
    with_root: Path, data_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "o.jsonl"
    proc = root_analysis(
        str(data_dir / "uproot-HZZ.root"),
        *[a for b in HZZ_BRANCHES for a in ("-b", b)],
        "-o",
        str(out),
    )
    assert proc.returncode == 0, proc.stderr
    intervals, summary = records_of(out)
    assert summary["status"] == "ok" and summary["events"] == 2421 and summary["ended_by"] == "end-of-data"
    # an interval in which no event completed (a slow start on a loaded host) has no "events" key
    assert sum(r.get("events", 0) for r in intervals) == 2421
    assert sum(r["bytes"] for r in intervals) == summary["bytes"]
    assert summary["files"] == [
        {
            "file": str(data_dir / "uproot-HZZ.root"),
            "tree": "events",
            "entries": 2421,
            "tree_entries": 2421,
            "vector_reads": summary["root"]["vector_reads"],
            "cache_bytes": summary["root"]["cache_bytes"],
            "uncached_read_calls": 0,
        }
    ]
    root = summary["root"]
    assert root["version"] == "6.40.00"
    assert root["vector_reads"] >= 1  # the TTreeCache fetched the baskets
    assert root["bytes_read"] > summary["bytes"] > 0  # the open's bytes are ROOT's, not the loop's
    assert root["read_calls"] > root["vector_reads"]


def test_the_trace_holds_every_read_of_a_basket_without_a_cache(
    with_root: Path, data_dir: Path, tmp_path: Path
) -> None:
    """Without a tree cache each basket of a read branch is one read (TTreePerfStats' offset and
    length): the trace's reads are exactly the baskets' positions and sizes on disk (uproot's view
    of the same file: fBasketSeek, fBasketBytes) of Muon_Px and of NMuon, its leaf's counter,
    which ROOT reads with it."""
    import uproot

    out, trace = tmp_path / "o.jsonl", tmp_path / "trace.jsonl"
    proc = root_analysis(str(data_dir / "uproot-HZZ.root"), "-b", "Muon_Px", "--cache-mb", "0",
                         "--trace-out", str(trace), "-o", str(out))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    _, summary = records_of(out)
    reads = read_jsonl(trace)
    with uproot.open(data_dir / "uproot-HZZ.root") as f:
        baskets = sorted(
            (int(b.member("fBasketSeek")[i]), int(b.member("fBasketBytes")[i]))
            for b in (f["events"]["Muon_Px"], f["events"]["NMuon"])
            for i in range(b.num_baskets)
        )
    assert sorted((r["offset"], r["length"]) for r in reads) == baskets
    assert [r["offset"] for r in reads] == sorted(r["offset"] for r in reads)
    assert summary["trace"] == {"file": str(trace), "reads": len(reads)}
    assert all(r["time"] > 1.7e9 for r in reads)


def test_trace_out_needs_the_root_engine(data_dir: Path, tmp_path: Path) -> None:
    proc = afkit_cli("bench", "analysis", str(data_dir / "uproot-HZZ.root"), "-b", "NMuon", "--trace-out",
                     str(tmp_path / "t.jsonl"))  # fmt: skip
    assert proc.returncode == 2 and "--trace-out needs --engine root" in proc.stderr
    assert not (tmp_path / "t.jsonl").exists()


def test_histogram_and_rdataframe(with_root: Path, data_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "o.jsonl"
    proc = root_analysis(
        "--reader",
        "rdataframe",
        "--fill-hist",
        str(data_dir / "uproot-HZZ.root"),
        "-b",
        "NMuon",
        "-b",
        "Muon_Px",
        "-o",
        str(out),
    )
    assert proc.returncode == 0, proc.stderr
    _intervals, summary = records_of(out)
    assert summary["events"] == 2421 and summary["reader"] == "rdataframe" and summary["work"] == "histogram"
    assert summary["hist"]["entries"] == 2421 and summary["hist"]["bins"] == 100  # one NMuon per event


AO2D = """
void ao2d(const char *name) {
   TFile f(name, "RECREATE");
   for (int df = 1; df <= 2; ++df) {
      auto *dir = f.mkdir(Form("DF_%d", df));
      dir->cd();
      Float_t pt; Int_t idx;
      TTree tracks("O2track", "tracks"), colls("O2collision", "collisions");
      tracks.Branch("fPt", &pt); tracks.Branch("fIndexCollisions", &idx);
      colls.Branch("fPosZ", &pt);
      for (int i = 0; i < 1000 * df; ++i) { pt = i; idx = i / 10; tracks.Fill(); }
      for (int i = 0; i < 10; ++i) colls.Fill();
      tracks.Write(); colls.Write();
   }
}
"""


def test_a_tree_pattern_reads_every_df_folders_table(with_root: Path, tmp_path: Path) -> None:
    (tmp_path / "ao2d.C").write_text(AO2D)
    made = subprocess.run(
        ["root.exe", "-b", "-q", "-l", f'ao2d.C("{tmp_path / "AO2D.root"}")'],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert made.returncode == 0, made.stderr
    out = tmp_path / "o.jsonl"
    proc = root_analysis(
        "-t",
        "DF_*/O2track",
        "-o",
        str(out),
        str(tmp_path / "AO2D.root"),
    )
    assert proc.returncode == 0, proc.stderr
    _intervals, summary = records_of(out)
    assert [(f["tree"], f["entries"]) for f in summary["files"]] == [
        ("DF_1/O2track", 1000),
        ("DF_2/O2track", 2000),
    ]
    assert summary["events"] == 3000
    wrong = root_analysis("-t", "O2track", str(tmp_path / "AO2D.root"))
    assert wrong.returncode == 5
    assert "no tree matching 'O2track'" in wrong.stderr and "DF_1/O2track" in wrong.stderr


def test_two_clients_start_together(with_root: Path, data_dir: Path, tmp_path: Path) -> None:
    files = [str(data_dir / "uproot-HZZ.root"), str(data_dir / "uproot-HZZ-zlib.root")]
    proc = afkit_cli(
        "bench",
        "multi-analysis",
        "--engine",
        "root",
        "-n",
        "2",
        "--outdir",
        str(tmp_path / "m"),
        "--no-monitor",
        "-b",
        "NMuon",
        *files,
    )
    assert proc.returncode == 0, proc.stderr
    summary = read_jsonl(tmp_path / "m" / "sum.jsonl")[-1]
    assert summary["client_events"] == [2421, 2421] and summary["clients_ok"] == 2
    # released by one barrier: both measured from the same instant (the macro's start after "go")
    starts = [
        datetime.fromisoformat(read_jsonl(tmp_path / "m" / f"client-00{i}.jsonl")[-1]["start"])
        for i in range(2)
    ]
    assert abs((starts[0] - starts[1]).total_seconds()) < 1.0


def test_a_missing_branch_is_exit_5_naming_the_tree(with_root: Path, data_dir: Path) -> None:
    proc = root_analysis(
        "-b",
        "Nope",
        str(data_dir / "uproot-HZZ.root"),
    )
    assert proc.returncode == 5
    assert (
        f"afkit: error: ROOT reader: no branch 'Nope' in tree 'events' of '{data_dir / 'uproot-HZZ.root'}'"
        in (proc.stderr)
    )


def test_client_threads_each_run_their_own_root(with_root: Path, data_dir: Path, tmp_path: Path) -> None:
    """The campaign's root payload runs clients as threads (afkit.bench.multi.run_threads)."""
    from afkit.bench.multi import run_threads

    cfgs = [
        RootReadConfig(files=[str(data_dir / "uproot-HZZ.root")], branches=["NMuon"], interval=0.5)
        for _ in range(2)
    ]
    summaries = run_threads(cfgs, tmp_path / "t")
    assert [s["events"] for s in summaries] == [2421, 2421]
    assert [s["root"]["vector_reads"] >= 1 for s in summaries] == [True, True]


def test_a_root_job_runs_with_the_standard_library_alone(
    with_root: Path, data_dir: Path, tmp_path: Path
) -> None:
    """payload: root inside an image: the job imports nothing but the standard library (no uproot,
    no XRootD bindings); the tag's ROOT reads."""
    from test_bench_core import run_job

    hzz = tmp_path / "hzz.root"
    hzz.write_bytes((data_dir / "uproot-HZZ.root").read_bytes())
    rec, modules = run_job(
        tmp_path,
        type="analysis",
        payload="root",
        access="direct",
        urls=[str(hzz)],
        tree="events",
        branches=["NMuon"],
        root={"work": "histogram"},
    )
    assert rec["status"] == "ok", rec
    assert rec["events"] == 2 * 2421  # two clients, each reads the file once
    assert rec["root_vector_reads"] >= 2 and rec["root_read_calls"] >= rec["root_vector_reads"]
    assert rec["root_bytes_read"] > rec["bytes"] > 0
    ours = {"afkit", "__main__", "__mp_main__"}
    assert not {m.split(".")[0] for m in modules} - set(sys.stdlib_module_names) - ours
    assert "afkit.bench.analysis" not in modules  # the uproot engine is not even imported


def test_a_tls_url_is_given_to_root_as_root_url() -> None:
    """ROOT sends only [x]root: to its XRootD client (roots: to the removed rootd one); the guarded
    server's TLS demand upgrades the root:// connection (afkit.bench.sources.for_root)."""
    from afkit.bench.rootread import RootReadConfig, config_text

    files = ["roots://h:1094//d/a.root", "xroots://h:1094//d/b.root", "/d/c.root"]
    cfg = RootReadConfig(files=files, branches=[], tree="t")
    text = config_text(cfg, wait=False)
    assert "file root://h:1094//d/a.root\nfile xroot://h:1094//d/b.root\nfile /d/c.root\n" in text
