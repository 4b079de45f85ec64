"""``afkit campaign``: exit codes and output of validate, locations, jobs, extrapolate, report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from afkit import cli
from afkit.errors import ExitCode


def test_validate_ok(raw: dict[str, Any], write: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["campaign", "validate", str(write(raw))]) == ExitCode.OK
    assert "valid; campaign unit" in capsys.readouterr().out


def test_validate_bad_is_exit_6(raw: dict[str, Any], write: Any, capsys: pytest.CaptureFixture[str]) -> None:
    raw["benchmarks"][0]["type"] = "stress"
    assert cli.main(["campaign", "validate", str(write(raw))]) == ExitCode.INVALID
    err = capsys.readouterr().err
    assert "benchmarks[0].type" in err and '"read", "analysis", "train", "steps"' in err
    assert "afkit: hint:" in err


def test_validate_missing_file_is_exit_5(tmp_path: Path) -> None:
    assert cli.main(["campaign", "validate", str(tmp_path / "none.yaml")]) == ExitCode.NOT_FOUND


def test_locations_prints_the_matrix(
    raw: dict[str, Any], write: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["campaign", "locations", str(write(raw)), "--scenario", "origin"]) == ExitCode.OK
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1 + 4  # header + 2 sites x 2 datasets
    assert any(
        line.split()[:3] == ["far", "hzz", "origin"] and "root://127.0.0.1:1094//data/" in line
        for line in out
    )


def test_locations_pair_without_template_is_exit_6(
    raw: dict[str, Any], write: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    raw["locations"] = {"default": None}
    assert cli.main(["campaign", "locations", str(write(raw))]) == ExitCode.INVALID
    assert "no input-location template for the pair" in capsys.readouterr().err


def test_jobs_lists_ids(raw: dict[str, Any], write: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["campaign", "jobs", str(write(raw))]) == ExitCode.OK
    assert len(capsys.readouterr().out.splitlines()) == 4


def test_extrapolate_gsi(capsys: pytest.CaptureFixture[str]) -> None:
    args = [
        "campaign",
        "extrapolate",
        "--target",
        "115GB/s",
        "--per-job",
        "12.8MB/s",
        "--per-server",
        "32GB/s",
    ]
    assert cli.main(args) == ExitCode.OK
    assert "8985 jobs" in capsys.readouterr().out


def test_extrapolate_needs_a_rate(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["campaign", "extrapolate"]) == ExitCode.USAGE
    assert "--per-job" in capsys.readouterr().err


def test_report_marks_jobs_that_never_ran(
    raw: dict[str, Any], write: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli.main(["campaign", "report", str(write(raw))]) == ExitCode.OK
    [html] = list(tmp_path.glob("results/unit-*/report/report.html"))
    assert html.read_text().count('<td class="missing">') == 4
