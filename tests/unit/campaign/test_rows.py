"""jobs.csv and intervals.csv read back as typed rows (afkit.campaign.rows): each cell its field's
type once, empty cells of failed and missing jobs, tables of older afkit versions, bad cells."""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_aggregate import record, typed

from afkit.campaign import aggregate as agg
from afkit.campaign import plan
from afkit.campaign.config import Campaign
from afkit.campaign.contract import FIELDS, INT, NUM, STR, Job, JobRecord
from afkit.campaign.rows import REQUIRED, IntervalRow, JobRow, read_intervals, read_jobs
from afkit.cli import main
from afkit.errors import ExitCode, InvalidError

FIX = Path(__file__).parent / "fixtures" / "compare"


def _tables(tmp_path: Path, records: list[JobRecord], expected: list[Job] | None = None) -> tuple[Path, Path]:
    jobs, intervals = tmp_path / "jobs.csv", tmp_path / "intervals.csv"
    agg.aggregate(records, jobs, intervals, expected=expected)
    return jobs, intervals


def _drop(path: Path, *columns: str) -> None:
    """PATH without COLUMNS: a table an older afkit wrote."""
    rows = [{k: v for k, v in r.items() if k not in columns} for r in agg.read_csv(path)]
    agg.write_csv(path, list(rows[0]), rows)


def test_every_cell_is_its_fields_type(tmp_path: Path) -> None:
    jobs, _ = _tables(tmp_path, typed([record(0)]))
    [row] = read_jobs(jobs)
    assert (row.clients, row.wave_size, row.repetition, row.bytes, row.events) == (2, 1, 0, 50_000_000, 2000)
    assert (row.start, row.end, row.setup_s, row.processing_s) == (100.0, 112.0, 1.0, 10.0)
    assert row.throughput_MBps == pytest.approx(5.0) and row.events_per_s == pytest.approx(200.0)
    assert (row.status, row.url, row.payload, row.bottleneck) == ("ok", "/d/f", "builtin", "none")
    assert row.step_s("stage_out") == 0.5


def test_a_failed_jobs_empty_cells_are_none_and_its_text_is_empty(tmp_path: Path) -> None:
    failed = record(0, status="failed", error="connection refused", steps={}, intervals=[])
    for key in ("processing_start", "bytes", "events", "bytes_staged", "bytes_out"):
        failed.pop(key)
    jobs, _ = _tables(tmp_path, typed([failed]))
    [row] = read_jobs(jobs)
    assert row.status == "failed" and row.error == "connection refused"
    assert (row.bytes, row.events, row.processing_start, row.throughput_MBps, row.events_per_s) == (None,) * 5
    assert [row.step_s(s) for s in ("setup", "stage_in", "processing", "stage_out")] == [None] * 4
    assert row.start == 100.0  # launched: it has a start


def test_a_missing_job_has_its_planned_fields_and_nothing_measured(
    tmp_path: Path, raw: dict[str, Any], make: Callable[[dict[str, Any]], Campaign]
) -> None:
    expected = plan.expand(make(raw))
    jobs, _ = _tables(tmp_path, [], expected=expected[:1])
    [row] = read_jobs(jobs)
    assert (row.status, row.id, row.clients, row.repetition) == (
        "missing", expected[0].id, expected[0].clients, expected[0].repetition)  # fmt: skip
    assert (row.start, row.end, row.bytes, row.throughput_MBps, row.campaign_hash) == (
        None,
        None,
        None,
        None,
        "",
    )


def test_a_table_of_an_older_afkit_takes_the_defaults_of_its_newer_columns(tmp_path: Path) -> None:
    # the comparison fixtures were written before payload, bottleneck, wn_site ... were columns
    rows = read_jobs(FIX / "base.jobs.csv")
    assert len(rows) == 10 and {r.payload for r in rows} == {""} and {r.bottleneck for r in rows} == {""}
    assert {r.clients for r in rows} == {1, 2} and {r.repetition for r in rows} == {0, 1, 2, 3, 4}
    jobs, _ = _tables(tmp_path, typed([record(0)]))
    _drop(jobs, "repetition", "wave_size", "url", "interval", "events_per_s", "payload")
    [row] = read_jobs(jobs)
    assert (row.repetition, row.wave_size, row.url, row.interval, row.events_per_s, row.payload) == (
        None, 1, "", None, None, "")  # fmt: skip
    assert row.throughput_MBps == pytest.approx(5.0)


@pytest.mark.parametrize("column", REQUIRED)
def test_a_table_without_a_comparison_column_is_not_a_jobs_table(tmp_path: Path, column: str) -> None:
    jobs, _ = _tables(tmp_path, typed([record(0)]))
    _drop(jobs, column)
    with pytest.raises(InvalidError, match=r"not a jobs.csv \(needs columns bench, .*\)") as err:
        read_jobs(jobs)
    assert err.value.code == ExitCode.INVALID and f"missing: {column}" in str(err.value.hint)


@pytest.mark.parametrize(
    ("column", "text", "message"),
    [("clients", "two", "column clients: 'two' is not an integer"),
     ("bytes", "1.5e9", "column bytes: '1.5e9' is not an integer"),
     ("start", "noon", "column start: 'noon' is not a number"),
     ("clients", "", "column clients is empty")],
)  # fmt: skip
def test_a_cell_that_is_not_its_fields_type_names_line_and_column(
    tmp_path: Path, column: str, text: str, message: str
) -> None:
    jobs, _ = _tables(tmp_path, typed([record(0), record(1)]))
    rows = agg.read_csv(jobs)
    rows[1][column] = text
    agg.write_csv(jobs, list(rows[0]), rows)
    with pytest.raises(InvalidError, match=rf"jobs.csv line 3: {message}") as err:
        read_jobs(jobs)
    assert err.value.code == ExitCode.INVALID


def test_intervals_are_typed_and_optional(tmp_path: Path) -> None:
    _, intervals = _tables(tmp_path, typed([record(0)]))
    assert read_intervals(intervals) == [
        IntervalRow("j0", 1.0, 5_000_000.0, 102.0),
        IntervalRow("j0", 2.0, 7.0, 103.0),
    ]
    assert read_intervals(tmp_path / "absent.csv") == [] and read_intervals(None) == []
    _drop(intervals, "time")  # before samples carried their wall clock
    assert [s.time for s in read_intervals(intervals)] == [None, None]


def test_the_row_is_the_contracts_columns_with_their_types() -> None:
    """JobRow cannot drift from the field table: each field is a jobs.csv column of the contract's
    type, optional (None) exactly where a number may be unmeasured."""
    contract = {f.name: f for f in FIELDS if f.column}
    python = {STR: "str", INT: "int", NUM: "float"}
    named = [f for f in dataclasses.fields(JobRow) if f.name != "others"]  # others: the rest, by name
    for f in named:
        assert f.name in contract, f.name
        assert str(f.type).split(" |")[0] == python[contract[f.name].types], f.name
    names = [f.name for f in named]
    assert names == [c for c in contract if c in names]  # jobs.csv's order


def test_compare_of_a_table_without_the_throughput_column_exits_6(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, new = tmp_path / "base.csv", tmp_path / "new.csv"
    shutil.copyfile(FIX / "base.jobs.csv", base)
    shutil.copyfile(FIX / "again.jobs.csv", new)
    _drop(new, "throughput_MBps")
    assert main(["campaign", "compare", str(base), str(new)]) == ExitCode.INVALID
    assert f"{new}: not a jobs.csv (needs columns" in capsys.readouterr().err
