"""The analysis benchmark on the real ROOT files: right entry counts, clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from afkit.bench.analysis import AnalysisConfig, not_found_reason, open_root, run_analysis
from afkit.bench.records import JsonlWriter, read_jsonl
from afkit.errors import InvalidError, NotFoundError, UsageError

HZZ = ["uproot-HZZ.root"] + [f"uproot-HZZ-{c}.root" for c in ("lz4", "lzma", "uncompressed", "zlib", "zstd")]
HYP_PT = "SHyperTriton/RHyperTriton3O2/RHyperTriton/pt"


def _analyse(tmp_path: Path, cfg: AnalysisConfig) -> tuple[dict, list[dict]]:
    out = tmp_path / "a.jsonl"
    with JsonlWriter(out) as writer:
        summary = run_analysis(cfg, writer)
    return summary, read_jsonl(out)


@pytest.mark.parametrize(
    ("name", "branches", "entries"),
    [
        ("nanoAOD_2015_CMS_Open_Data_ttbar.root", ["Muon_pt", "nJet"], 200),
        *[(h, ["Jet_Px"], 2421) for h in HZZ],
        ("uproot-Zmumu.root", ["E1", "px1"], 2304),
        ("uproot-issue-85.root", [HYP_PT], 39308),
        ("uproot-issue79.root", ["pt"], 1_000_000),
    ],
)
def test_entry_counts_of_the_real_files(
    tmp_path: Path, data_dir: Path, name: str, branches: list[str], entries: int
) -> None:
    summary, recs = _analyse(tmp_path, AnalysisConfig([str(data_dir / name)], branches))
    assert summary["events"] == entries
    assert summary["files"][0]["tree_entries"] == entries
    assert sum(r.get("events", 0) for r in recs if r["type"] == "interval") == entries


def test_bytes_are_the_compressed_bytes_read(tmp_path: Path, data_dir: Path) -> None:
    import uproot

    path = data_dir / "uproot-issue79.root"
    summary, _ = _analyse(tmp_path, AnalysisConfig([str(path)], ["pt"], library="np"))
    compressed = uproot.open(path)["taus"]["pt"].compressed_bytes
    assert compressed <= summary["bytes"] <= path.stat().st_size
    assert summary["mbps"] > 0


def test_histogram_fill_counts_every_value(tmp_path: Path, data_dir: Path) -> None:
    cfg = AnalysisConfig([str(data_dir / "uproot-Zmumu.root")], ["E1"], fill_hist=True)
    summary, _ = _analyse(tmp_path, cfg)
    assert summary["hist"]["entries"] == 2304


def test_several_files_add_up(tmp_path: Path, data_dir: Path) -> None:
    files = [str(data_dir / h) for h in HZZ[:3]]
    summary, _ = _analyse(tmp_path, AnalysisConfig(files, ["Muon_Px"], library="np", fill_hist=True))
    assert summary["events"] == 3 * 2421
    assert [f["entries"] for f in summary["files"]] == [2421] * 3


def test_missing_branch_names_it_and_the_available_ones(tmp_path: Path, data_dir: Path) -> None:
    with pytest.raises(NotFoundError) as exc:
        _analyse(tmp_path, AnalysisConfig([str(data_dir / "uproot-Zmumu.root")], ["E1", "nope"]))
    assert "'nope'" in str(exc.value) and "E1" not in str(exc.value)
    assert exc.value.hint and "px1" in exc.value.hint


def test_missing_tree_lists_the_trees(tmp_path: Path, data_dir: Path) -> None:
    with pytest.raises(NotFoundError) as exc:
        _analyse(tmp_path, AnalysisConfig([str(data_dir / "uproot-Zmumu.root")], ["E1"], tree="Events"))
    assert exc.value.hint and "events" in exc.value.hint


def test_non_root_file_is_invalid(tmp_path: Path, data_dir: Path) -> None:
    with pytest.raises(InvalidError):
        _analyse(tmp_path, AnalysisConfig([str(data_dir / "LICENSE.scikit-hep-testdata")], ["x"]))


def test_missing_file_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError):
        _analyse(tmp_path, AnalysisConfig([str(tmp_path / "nope.root")], ["x"]))


def test_file_with_several_trees_needs_tree(tmp_path: Path) -> None:
    import numpy as np
    import uproot

    path = tmp_path / "two.root"
    with uproot.recreate(path) as f:
        f.mktree("a", {"x": np.int64}).extend({"x": np.arange(3)})
        f.mktree("b", {"x": np.int64}).extend({"x": np.arange(4)})
    with pytest.raises(UsageError):
        _analyse(tmp_path, AnalysisConfig([str(path)], ["x"]))
    summary, _ = _analyse(tmp_path, AnalysisConfig([str(path)], ["x"], tree="b"))
    assert summary["events"] == 4


def test_tree_pattern_reads_every_matching_tree_in_natural_order(tmp_path: Path) -> None:
    import numpy as np
    import uproot

    path = tmp_path / "df.root"
    with uproot.recreate(path) as f:
        for df, n in (("DF_10", 2), ("DF_2", 3)):
            f.mktree(f"{df}/O2track", {"fX": np.float32}).extend({"fX": np.zeros(n, np.float32)})
            f.mktree(f"{df}/O2collision", {"fPosZ": np.float32}).extend({"fPosZ": np.zeros(1, np.float32)})
    summary, _ = _analyse(tmp_path, AnalysisConfig([str(path)], ["fX"], tree="DF_*/O2track"))
    assert [f["tree"] for f in summary["files"]] == ["DF_2/O2track", "DF_10/O2track"]
    assert summary["events"] == 5


def test_tree_pattern_without_a_match_lists_the_trees(tmp_path: Path, data_dir: Path) -> None:
    with pytest.raises(NotFoundError, match="no tree matching 'DF_\\*/O2track'") as exc:
        _analyse(tmp_path, AnalysisConfig([str(data_dir / "uproot-Zmumu.root")], [], tree="DF_*/O2track"))
    assert "events" in (exc.value.hint or "")


def test_a_file_the_xrootd_server_lacks_keeps_the_servers_words() -> None:
    # uproot.source.xrootd raises _file_not_found(URL, status.message); the message is XRootD's
    # XRootDStatus::ToStr of the server's answer, ending in a newline (XrdClXRootDResponses.hh)
    from uproot._util import _file_not_found

    said = ("[ERROR] Server responded with an error: [3011] Unable to open /data/none.root; "
            "No such file or directory\n")  # fmt: skip
    err = _file_not_found("root://se:1094//data/none.root", said)
    assert not_found_reason(err) == said.strip()
    assert not_found_reason(_file_not_found("/data/none.root")) == ""  # a local file: uproot says no more


def test_a_missing_local_file_is_exit_5_without_uproots_usage_text(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError) as err:
        open_root(str(tmp_path / "none.root"))
    assert str(err.value) == f"ROOT file '{tmp_path / 'none.root'}' does not exist"
