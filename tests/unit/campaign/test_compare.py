"""``afkit campaign compare``: verdicts and exit codes on jobs.csv tables recorded in the testbed.

fixtures/compare/*.jobs.csv are real runs (build/cmp/run.sh-style, local executor, XRootD origin,
2 s reads, 1 and 2 clients, 5 repetitions): ``base`` and ``again`` are the same campaign on an idle
testbed, ``throttled`` the same cells read in 4 KiB instead of 1 MiB blocks. The block size is part
of a cell, so ``throttled`` is read with the baseline's block size in its table: it stands for the
same campaign against a slower endpoint. Subsets of their repetitions stand for runs with fewer.
"""

from __future__ import annotations

import csv
import itertools
import re
from dataclasses import replace
from pathlib import Path

import pytest

from afkit.campaign import compare
from afkit.campaign.rows import JobRow, read_jobs
from afkit.cli import main
from afkit.errors import ExitCode, InvalidError

FIX = Path(__file__).parent / "fixtures" / "compare"


def _rows(name: str) -> list[JobRow]:
    rows = read_jobs(FIX / f"{name}.jobs.csv")
    return [replace(r, block_size="1m") for r in rows] if name == "throttled" else rows


def _reps(name: str, reps: set[int]) -> list[JobRow]:
    return [r for r in _rows(name) if r.repetition in reps]


def test_two_runs_of_the_same_campaign_are_inconclusive_not_changed() -> None:
    result = compare.compare(_rows("base"), _rows("again"))
    # 5 repetitions a side, but the testbed's noise (108-217 MB/s in one cell) is wider than 10 %
    assert [c.verdict for c in result] == ["inconclusive", "inconclusive"]
    assert all(c.low <= c.ratio <= c.high and c.low < 1 - compare.TOLERANCE for c in result)
    assert [(c.reps_base, c.reps_new) for c in result] == [(5, 5), (5, 5)]
    assert not compare.regressions(result)


def test_single_repetitions_of_the_same_campaign_are_inconclusive() -> None:
    # every pair of one repetition of each run: the old rule (the ratio alone when n = 1) called
    # them better or worse by up to 2.13x
    for i, j in itertools.product(range(5), repeat=2):
        result = compare.compare(_reps("base", {i}), _reps("again", {j}))
        assert {c.verdict for c in result} == {"inconclusive"}, (i, j, result)
        assert {(c.reps_base, c.reps_new) for c in result} == {(1, 1)}


def test_identical_campaigns_with_four_repetitions_are_never_changed() -> None:
    for sb, sa in itertools.product(itertools.combinations(range(5), 4), repeat=2):
        verdicts = {c.verdict for c in compare.compare(_reps("base", set(sb)), _reps("again", set(sa)))}
        assert verdicts <= {"same", "inconclusive"}, (sb, sa, verdicts)


def test_the_throttled_run_is_worse_in_every_cell() -> None:
    result = compare.compare(_rows("base"), _rows("throttled"))
    assert [(c.value("clients"), c.verdict) for c in result] == [(1, "worse"), (2, "worse")]
    assert all(c.high < 0.5 for c in result)


def test_fewer_than_three_repetitions_on_a_side_are_inconclusive_even_when_far_apart() -> None:
    result = compare.compare(_rows("base"), _reps("throttled", {0, 1}))
    assert all(c.high < 0.5 for c in result)
    assert [c.verdict for c in result] == ["inconclusive", "inconclusive"]
    assert not compare.regressions(result)


def test_three_repetitions_a_side_give_the_throttled_run_its_verdict() -> None:
    result = compare.compare(_reps("base", {0, 1, 2}), _reps("throttled", {0, 1, 2}))
    assert [c.verdict for c in result] == ["worse", "worse"]


def test_the_jobs_of_one_wave_are_one_repetition() -> None:
    # three jobs of the same repetition (a wave) are not three independent runs
    one = _reps("throttled", {0})
    wave = [replace(r, repetition=0, id=f"{r.id}.j{k}") for r in one for k in range(3)]
    result = compare.compare(_rows("base"), wave)
    assert [(c.n_new, c.reps_new, c.verdict) for c in result] == [(3, 1, "inconclusive")] * 2


def _steady(rows: list[JobRow], scale: float) -> list[JobRow]:
    """ROWS with a steady throughput (100 MB/s +- 1 %, times SCALE): a quiet endpoint."""
    return [replace(r, throughput_MBps=scale * (99 + (r.repetition or 0) / 2)) for r in rows]


def test_a_small_change_within_the_tolerance_of_a_quiet_endpoint_is_the_same() -> None:
    result = compare.compare(_steady(_rows("base"), 1.0), _steady(_rows("base"), 0.95))
    assert {c.verdict for c in result} == {"same"}
    assert all(0.9 <= c.low <= c.high <= 1.1 for c in result)


def test_an_interval_that_spans_the_threshold_is_inconclusive() -> None:
    # 15 % slower on average, but the noise reaches past 0.9
    new = [replace(r, throughput_MBps=(r.throughput_MBps or 0.0) * 0.85) for r in _rows("again")]
    result = compare.compare(_rows("base"), new)
    assert all(c.low < 1 - compare.TOLERANCE < c.high for c in result)
    assert {c.verdict for c in result} == {"inconclusive"}


def test_a_clear_change_of_a_quiet_endpoint_is_better_or_worse() -> None:
    base = _steady(_rows("base"), 1.0)
    assert {c.verdict for c in compare.compare(base, _steady(_rows("base"), 1.3))} == {"better"}
    assert {c.verdict for c in compare.compare(base, _steady(_rows("base"), 0.7))} == {"worse"}


def test_a_cell_without_successful_jobs_in_new_is_lost() -> None:
    new = [replace(r, status="failed") if r.clients == 2 else r for r in _rows("base")]
    verdicts = {c.value("clients"): c.verdict for c in compare.compare(_rows("base"), new)}
    assert verdicts == {1: "inconclusive", 2: "lost"}


def test_each_block_size_of_a_read_sweep_is_its_own_cell() -> None:
    # one campaign that swept block_size [1m, 4k]: pooled, 4 KiB reads would sit in the 1 MiB cell
    sweep = _rows("base") + read_jobs(FIX / "throttled.jobs.csv")
    result = compare.compare(sweep, sweep)
    assert [(c.value("clients"), c.value("block_size"), c.n_base) for c in result] == [
        (1, "4k", 5), (1, "1m", 5), (2, "4k", 5), (2, "1m", 5)]  # fmt: skip
    assert [c.label for c in result][:2] == ["rd wn hzz origin direct 1cl block 4 KiB",
                                             "rd wn hzz origin direct 1cl block 1 MiB"]  # fmt: skip
    assert {c.ratio for c in result} == {1.0}


def test_each_wave_size_of_a_train_is_its_own_cell() -> None:
    rows = [replace(r, bench="train", type="train", wave_size=w) for r in _rows("base") for w in (1, 4)]
    result = compare.compare(rows, rows)
    one, four = "1 job(s)/wave", "4 job(s)/wave"
    assert [(c.value("clients"), c.value("wave_size"), c.detail) for c in result] == [
        (1, 1, one), (1, 4, four), (2, 1, one), (2, 4, four)]  # fmt: skip


def test_analysis_cells_ignore_the_read_block_size() -> None:
    rows = [replace(r, type="analysis", block_size=b) for r in _rows("base") for b in ("8M", "1M")]
    result = compare.compare(rows, rows)
    assert [(c.value("block_size"), c.n_base, c.label) for c in result] == [
        ("", 10, "rd wn hzz origin direct 1cl"), ("", 10, "rd wn hzz origin direct 2cl")]  # fmt: skip


def test_no_common_cell_is_a_validation_error() -> None:
    other = [replace(r, site="elsewhere") for r in _rows("base")]
    with pytest.raises(InvalidError, match="no cell in common"):
        compare.compare(_rows("base"), other)


def test_same_tables_give_the_same_numbers() -> None:
    assert compare.compare(_rows("base"), _rows("again")) == compare.compare(_rows("base"), _rows("again"))


def _results_dir(tmp_path: Path, name: str) -> Path:
    d = tmp_path / name / "aggregate"
    d.mkdir(parents=True)
    with (FIX / f"{name}.jobs.csv").open(newline="") as fh:
        reader = csv.DictReader(fh)
        rows = [{**r, "block_size": "1m"} if name == "throttled" else r for r in reader]  # _rows
        fields = list(reader.fieldnames or [])
    with (d / "jobs.csv").open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fields)
        writer.writeheader()
        writer.writerows(rows)
    return d.parent


def test_cli_exit_codes_and_report_section(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base, again, throttled = (_results_dir(tmp_path, n) for n in ("base", "again", "throttled"))
    assert main(["campaign", "compare", str(base), str(again)]) == ExitCode.OK
    out = capsys.readouterr().out
    assert (
        "2 cell(s) inconclusive (fewer than 3 repetitions on a side, or the interval spans a threshold): "
        "rd wn hzz origin direct 1cl; rd wn hzz origin direct 2cl"
    ) in out
    assert re.search(r"rd wn hzz origin direct 1cl .* 5/5  inconclusive \(jobs 5/5\)", out), out
    html = (again / "report" / "report.html").read_text()
    assert "<th>repetitions base/new</th>" in html and "<td>5/5</td>" in html
    assert main(["campaign", "compare", str(base), str(throttled)]) == ExitCode.FAILURE
    out = capsys.readouterr().out
    assert "2 cell(s) regressed: rd wn hzz origin direct 1cl; rd wn hzz origin direct 2cl" in out
    html = (throttled / "report" / "report.html").read_text()
    assert "Comparison with the baseline" in html and "data:image/png;base64," in html
    with (throttled / "report" / "compare.csv").open() as fh:
        assert [r["verdict"] for r in csv.DictReader(fh)] == ["worse", "worse"]
    assert main(["campaign", "compare", str(tmp_path / "nothing"), str(again)]) == ExitCode.NOT_FOUND
