"""``afkit campaign``: exit codes and output of validate, locations, jobs, extrapolate, report."""

from __future__ import annotations

import copy
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from afkit import cli
from afkit.errors import ExitCode


def test_validate_ok(raw: dict[str, Any], write: Any, sif: Path, capsys: pytest.CaptureFixture[str]) -> None:
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


def test_run_of_a_mixed_executor_campaign_ends_with_the_report(
    raw: dict[str, Any],
    sif: Path,
    write: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from afkit.campaign import runner

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runner, "run", lambda *a, **k: 0)  # every snakemake call succeeded
    assert cli.main(["campaign", "run", str(write(raw))]) == ExitCode.OK  # sites: local + slurm
    assert capsys.readouterr().out.strip().endswith("report/report.html")
    assert list(tmp_path.glob("results/*/report/report.html"))


def test_run_interrupted_exits_130_without_a_report(
    raw: dict[str, Any], write: Any, sif: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from afkit.campaign import runner

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runner, "run", lambda *a, **k: 130)
    assert cli.main(["campaign", "run", str(write(raw))]) == ExitCode.INTERRUPTED
    assert not list(tmp_path.glob("results/*/report/report.html"))


def test_run_with_a_missing_dataset_file_is_afkits_message_alone_before_any_snakemake(
    raw: dict[str, Any],
    sif: Path,
    write: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    from afkit.campaign import runner

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runner, "run", lambda *a, **k: pytest.fail("snakemake was started"))
    raw["datasets"]["hzz"]["files"] = ["hzz/none.root"]  # not in the storage's local path
    raw["benchmarks"][0]["datasets"] = ["hzz"]
    assert cli.main(["campaign", "run", str(write(raw))]) == ExitCode.NOT_FOUND
    err = capfd.readouterr().err.splitlines()
    assert err[0].startswith("afkit: error: dataset file(s) not found: hzz/none.root (dataset hzz) on disk")
    assert err[1].startswith("afkit: hint:") and len(err) == 2


def test_help_lists_only_actions_that_exist(capsys: pytest.CaptureFixture[str]) -> None:
    from afkit.cli import AREAS  # the summary `afkit --help` shows for the area

    with pytest.raises(SystemExit):
        cli.main(["--help"])
    assert AREAS["campaign"] in " ".join(capsys.readouterr().out.split())
    actions = [a.strip() for a in AREAS["campaign"].split(":", 1)[1].split(",")]
    with pytest.raises(SystemExit):
        cli.main(["campaign", "--help"])
    listed = capsys.readouterr().out.split()
    assert actions and all(a in listed for a in actions), actions


FIXTURES = Path(__file__).parent / "fixtures"


def _fake_apptainer(mp: pytest.MonkeyPatch) -> None:
    mp.setenv("PATH", f"{FIXTURES}{os.pathsep}{os.environ['PATH']}")
    mp.setenv("FAKE_APPTAINER_PYTHON", sys.executable)


@pytest.fixture(scope="module")
def steps_finished(module_raw: tuple[Path, dict[str, Any]]) -> Path:
    """A local steps campaign of two jobs (the fake apptainer), run once for the module by
    `afkit campaign run` in the module's folder; its file."""
    base, raw = module_raw
    raw = copy.deepcopy(raw)
    (base / "fake.sif").write_bytes(b"#!/usr/bin/env run-singularity\n\0SIF_MAGIC\0fake")
    raw["sites"] = {"here": raw["sites"]["here"]}
    raw["benchmarks"] = [{"name": "s", "type": "steps", "sites": ["here"], "datasets": ["hzz"],
                          "sweep": {"access": ["direct", "copy"]}}]  # fmt: skip
    campaign = base / "campaign.yaml"
    campaign.write_text(yaml.safe_dump(raw), encoding="utf-8")
    with pytest.MonkeyPatch.context() as mp:
        _fake_apptainer(mp)
        mp.chdir(base)
        assert cli.main(["campaign", "run", str(campaign)]) == ExitCode.OK
    return campaign


@pytest.fixture
def steps_run(steps_finished: Path, copy_run: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The steps campaign's run copied into tmp_path, the cwd (the fake apptainer on PATH); its file."""
    _fake_apptainer(monkeypatch)
    monkeypatch.chdir(tmp_path)
    copy_run(steps_finished.parent)
    return str(steps_finished)


def test_retry_reruns_exactly_the_failed_job(steps_run: str, tmp_path: Path) -> None:
    from afkit.campaign import aggregate as agg

    campaign = steps_run
    failed, kept = sorted(tmp_path.glob("results/*/job/s/*.json"))
    rec = json.loads(failed.read_text())
    failed.write_text(json.dumps({**rec, "status": "failed", "error": "endpoint down"}))
    kept_mtime = kept.stat().st_mtime_ns
    assert cli.main(["campaign", "retry", campaign, "--failed"]) == ExitCode.OK
    assert json.loads(failed.read_text())["status"] == "ok"
    assert kept.stat().st_mtime_ns == kept_mtime  # exactly the failed job
    [jobs_csv] = tmp_path.glob("results/*/aggregate/jobs.csv")
    assert {r["status"] for r in agg.read_csv(jobs_csv)} == {"ok"}  # the report was remade


@pytest.mark.parametrize("code", [0, 130])
def test_run_or_interrupt_leaves_the_tables_current(
    code: int, steps_run: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A record written after the tables (a call the watchdog stopped, an interrupt) is in jobs.csv
    and the report when afkit returns, without afkit campaign report."""
    from afkit.campaign import aggregate as agg
    from afkit.campaign import runner

    campaign = steps_run
    first, _ = sorted(tmp_path.glob("results/*/job/s/*.json"))
    [jobs_csv] = tmp_path.glob("results/*/aggregate/jobs.csv")
    old = jobs_csv.stat().st_mtime
    first.write_text(json.dumps({**json.loads(first.read_text()), "status": "failed", "error": "late"}))
    os.utime(first, (old + 5, old + 5))  # written after the tables
    monkeypatch.setattr(runner, "run", lambda *a, **k: code)
    assert cli.main(["campaign", "run", campaign]) == code
    assert sorted(r["status"] for r in agg.read_csv(jobs_csv)) == ["failed", "ok"]
    [html] = tmp_path.glob("results/*/report/report.html")
    assert "late" in html.read_text()


def test_retry_asks_snakemake_again_for_the_jobs_a_call_left_out(
    raw: dict[str, Any],
    sif: Path,
    write: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # snakemake 9 makes only the first of chained wave jobs per call (snakemake/snakemake#4166):
    # a retry of 4 jobs without a record must not end with 3 still missing and exit 0
    from afkit.campaign import cli as campaign_cli
    from afkit.campaign import runner

    calls: list[list[str]] = []

    def one_per_call(*_: Any, targets: dict[str, list[str]], **__: Any) -> int:
        files = sorted(f for fs in targets.values() for f in fs)
        calls.append(files)
        Path(files[0]).parent.mkdir(parents=True, exist_ok=True)
        Path(files[0]).write_text("{}")
        return 0

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runner, "run", one_per_call)
    monkeypatch.setattr(campaign_cli, "_after_run", lambda c, code, **_: code)  # no tables of fake records
    assert cli.main(["campaign", "retry", str(write(raw)), "--missing"]) == ExitCode.OK
    assert [len(c) for c in calls] == [4, 3, 2, 1]
    assert "snakemake left 3 job(s) out" in capsys.readouterr().err
