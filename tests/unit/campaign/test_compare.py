"""``afkit campaign compare``: verdicts and exit codes on jobs.csv tables recorded in the testbed.

fixtures/compare/*.jobs.csv are real runs (build/cmp/run.sh-style, local executor, XRootD origin,
2 s reads, 1 and 2 clients, 5 repetitions): ``base`` and ``again`` are the same campaign on an idle
testbed, ``throttled`` the same cells read in 4 KiB instead of 1 MiB blocks.
"""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest

from afkit.campaign import compare
from afkit.campaign.aggregate import read_csv
from afkit.cli import main
from afkit.errors import ExitCode, InvalidError

FIX = Path(__file__).parent / "fixtures" / "compare"


def _rows(name: str) -> list[dict[str, str]]:
    return read_csv(FIX / f"{name}.jobs.csv")


def test_two_runs_of_the_same_campaign_are_the_same() -> None:
    result = compare.compare(_rows("base"), _rows("again"))
    assert [c.verdict for c in result] == ["same", "same"]
    assert all(c.low <= c.ratio <= c.high and c.low < 1 < c.high for c in result)
    assert not compare.regressions(result)


def test_the_throttled_run_is_worse_in_every_cell() -> None:
    result = compare.compare(_rows("base"), _rows("throttled"))
    assert [(c.clients, c.verdict) for c in result] == [("1", "worse"), ("2", "worse")]
    assert all(c.high < 0.5 for c in result)


def test_a_small_change_within_the_tolerance_is_the_same() -> None:
    new = [{**r, "throughput_MBps": str(float(r["throughput_MBps"]) * 0.95)} for r in _rows("base")]
    assert {c.verdict for c in compare.compare(_rows("base"), new)} == {"same"}


def test_a_cell_without_successful_jobs_in_new_is_lost() -> None:
    new = [{**r, "status": "failed"} if r["clients"] == "2" else r for r in _rows("base")]
    verdicts = {c.clients: c.verdict for c in compare.compare(_rows("base"), new)}
    assert verdicts == {"1": "same", "2": "lost"}


def test_no_common_cell_is_a_validation_error() -> None:
    other = [{**r, "site": "elsewhere"} for r in _rows("base")]
    with pytest.raises(InvalidError, match="no cell in common"):
        compare.compare(_rows("base"), other)


def test_same_tables_give_the_same_numbers() -> None:
    assert compare.compare(_rows("base"), _rows("again")) == compare.compare(_rows("base"), _rows("again"))


def _results_dir(tmp_path: Path, name: str) -> Path:
    d = tmp_path / name / "aggregate"
    d.mkdir(parents=True)
    shutil.copyfile(FIX / f"{name}.jobs.csv", d / "jobs.csv")
    return d.parent


def test_cli_exit_codes_and_report_section(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base, again, throttled = (_results_dir(tmp_path, n) for n in ("base", "again", "throttled"))
    assert main(["campaign", "compare", str(base), str(again)]) == ExitCode.OK
    assert main(["campaign", "compare", str(base), str(throttled)]) == ExitCode.FAILURE
    out = capsys.readouterr().out
    assert "2 cell(s) regressed: rd wn hzz origin direct 1cl; rd wn hzz origin direct 2cl" in out
    html = (throttled / "report" / "report.html").read_text()
    assert "Comparison with the baseline" in html and "data:image/png;base64," in html
    with (throttled / "report" / "compare.csv").open() as fh:
        assert [r["verdict"] for r in csv.DictReader(fh)] == ["worse", "worse"]
    assert main(["campaign", "compare", str(tmp_path / "nothing"), str(again)]) == ExitCode.NOT_FOUND
