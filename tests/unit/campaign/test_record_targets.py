"""afkit.campaign.rules.record_targets: which job records the workflow names as targets besides
its report (a deleted record is redone: Snakemake does not redo a missing input of a job whose
outputs are up to date; test_finished_campaign.py runs it)."""

from __future__ import annotations

from pathlib import Path

from afkit.campaign.rules import record_targets


def _files(tmp_path: Path, names: list[str]) -> list[str]:
    for name in names:
        (tmp_path / name).write_text("{}", encoding="utf-8")
    return [str(tmp_path / n) for n in names]


def test_no_record_is_a_target_while_a_table_is_missing(tmp_path: Path) -> None:
    records = [str(tmp_path / "a.json"), *_files(tmp_path, ["b.json"])]
    tables = [*_files(tmp_path, ["jobs.csv"]), str(tmp_path / "intervals.csv")]
    assert record_targets(records, tables) == []


def test_the_records_missing_beside_made_tables_are_targets(tmp_path: Path) -> None:
    kept = _files(tmp_path, ["b.json"])
    records = [str(tmp_path / "a.json"), *kept, str(tmp_path / "c.json")]
    tables = _files(tmp_path, ["jobs.csv", "intervals.csv"])
    assert record_targets(records, tables) == [str(tmp_path / "a.json"), str(tmp_path / "c.json")]
