"""Tests on a campaign run once for the module (the fixture `finished`): each works on a copy of
the run (copy_run, tests/unit/campaign/conftest.py), started from its tmp_path on the same campaign
file, so that what one test changes no other sees. The local executor and the apptainer test
double, as in test_workflow.py.

These tests share the module's run: tests/unit/conftest.py hands the module to one pytest-xdist
worker (SHARED_MODULES), where `finished` runs once.
"""

from __future__ import annotations

import copy
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_workflow import LOCAL, SNAKEFILE, fake_env, snakemake, two_jobs

from afkit.campaign import aggregate as agg


@pytest.fixture(scope="module")
def finished(module_raw: tuple[Path, dict[str, Any]]) -> Path:
    """A campaign run once for the module's tests: two_jobs and a read benchmark of 1 s (its
    intervals), by snakemake started as the venv's `python`. Its file, in the module's folder
    beside fake.sif, the store and the run's results; a test copies the run (copy_run) and starts
    snakemake on this file from tmp_path (the fixture `ran`)."""
    base, raw = module_raw
    raw = two_jobs(copy.deepcopy(raw), base)
    raw["benchmarks"].append({"name": "read", "type": "read", "sites": ["here"], "datasets": ["hzz"],
                              "duration": 1, "interval": 0.5})  # fmt: skip
    campaign = base / "campaign.yaml"
    campaign.write_text(yaml.safe_dump(raw), encoding="utf-8")
    python = Path(sys.executable).parent / "python"
    cmd = [str(python), "-m", "snakemake", "-s", str(SNAKEFILE), "--configfile", str(campaign),
           "--profile", LOCAL]  # fmt: skip
    proc = subprocess.run(cmd, cwd=base, env=fake_env(), capture_output=True, text=True, check=False,
                          timeout=600)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return campaign


@pytest.fixture
def ran(finished: Path, copy_run: Any) -> tuple[str, ...]:
    """The finished campaign's run, copied into tmp_path: snakemake's arguments for it there."""
    copy_run(finished.parent)
    return ("--configfile", str(finished), "--profile", LOCAL)


def test_a_deleted_record_is_redone_by_the_same_command(tmp_path: Path, ran: tuple[str, ...]) -> None:
    args = ran
    [results] = list((tmp_path / "results").iterdir())
    gone, kept = sorted((results / "job" / "steps").glob("*.json"))
    kept_mtime = kept.stat().st_mtime_ns
    gone.unlink()
    again = snakemake(*args, cwd=tmp_path, env=fake_env())
    assert again.returncode == 0, again.stderr[-2000:]
    assert gone.is_file() and kept.stat().st_mtime_ns == kept_mtime  # exactly that job
    assert {r["status"] for r in agg.read_csv(results / "aggregate" / "jobs.csv")} == {"ok"}


def test_a_dry_run_of_a_campaign_never_run_names_the_spec_each_job_will_read(
    tmp_path: Path, finished: Path
) -> None:
    """`snakemake -n -p` before the first run (here, where it never ran): each job's command names
    its spec (written by the run), the command a run executes (the files the run in `finished` wrote)."""
    dry = snakemake("-n", "-p", "--configfile", str(finished), "--profile", LOCAL, cwd=tmp_path)
    assert dry.returncode == 0, dry.stderr[-2000:]
    commands = re.findall(r"afkit campaign job (\S+) -o (\S+) --log", dry.stdout + dry.stderr)
    assert len(commands) == 3, dry.stdout[-3000:]  # two steps jobs, one read job
    assert not (tmp_path / "results").exists()
    for spec, record in commands:
        assert (finished.parent / spec).is_file() and (finished.parent / record).is_file(), (spec, record)
        assert Path(spec).name == Path(record).name, (spec, record)
        assert Path(spec).parts[-3:-1] == ("jobspec", Path(record).parent.name), (spec, record)


def test_a_dry_run_after_a_run_sees_what_the_next_run_does(tmp_path: Path, ran: tuple[str, ...]) -> None:
    """The specs the run wrote are the jobs' inputs in the dry run as in the run: nothing to do,
    then, a record deleted, exactly that job (and the tables after it)."""
    args = ran
    nothing = snakemake("-n", *args, cwd=tmp_path)
    assert "Nothing to be done" in nothing.stdout + nothing.stderr
    next(tmp_path.glob("results/*/job/steps/*.json")).unlink()
    dry = snakemake("-n", *args, cwd=tmp_path)
    assert dry.returncode == 0, dry.stderr[-2000:]
    rules = r"^(job|aggregate|report|image|dataset)\s+(\d+)$"
    counts = dict(re.findall(rules, dry.stdout + dry.stderr, re.M))
    assert counts == {"job": "1", "aggregate": "1", "report": "1"}, dry.stdout[-3000:]


def test_any_job_reruns_by_hand_from_its_spec(tmp_path: Path, ran: tuple[str, ...]) -> None:
    """Rule job is one command on the job's spec (written by planning): typed by hand, the same
    command runs the job again and writes a record of the same shape."""
    import json
    import shlex
    import shutil

    [spec] = tmp_path.glob("results/*/jobspec/steps/*.direct.*.json")
    shutil.copyfile(spec, tmp_path / "spec.json")
    env = {**fake_env(), "PATH": f"{Path(sys.executable).parent}{os.pathsep}{fake_env()['PATH']}"}
    again = subprocess.run(shlex.split("afkit campaign job spec.json -o record.json"), cwd=tmp_path, env=env,
                           capture_output=True, text=True, check=False, timeout=120)  # fmt: skip
    assert again.returncode == 0, again.stderr[-2000:]
    first = json.loads(next(tmp_path.glob(f"results/*/job/steps/{spec.name}")).read_text())
    rerun = json.loads((tmp_path / "record.json").read_text())
    assert (rerun["id"], rerun["status"], rerun["spec_sha256"]) == (
        first["id"],
        "ok",
        first["spec_sha256"],
    )
    assert set(rerun) == set(first)
    assert (tmp_path / "record.log").is_file()  # the log beside the record


def test_a_finished_campaign_started_by_another_path_of_the_same_python_has_nothing_to_do(
    tmp_path: Path, ran: tuple[str, ...]
) -> None:
    """The job rules' command names afkit's python by a variable: a `snakemake` on PATH and a
    `python -m snakemake` of the same venv see the same rule code (no rerun of every job). The
    campaign was run by `python` (the fixture `finished`); here `python3` starts snakemake."""
    first, second = (Path(sys.executable).parent / name for name in ("python", "python3"))
    assert first.resolve() == second.resolve()
    cmd = [str(second), "-m", "snakemake", "-s", str(SNAKEFILE), *ran]
    proc = subprocess.run(cmd, cwd=tmp_path, env=fake_env(), capture_output=True, text=True, check=False,
                          timeout=600)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Nothing to be done" in proc.stdout + proc.stderr


def test_snakemake_report_of_a_finished_campaign_has_the_tables_figures_and_captions(
    tmp_path: Path, ran: tuple[str, ...]
) -> None:
    proc = snakemake(*ran, "--report", "report.html", cwd=tmp_path, env=fake_env())
    assert proc.returncode == 0, proc.stderr[-2000:]
    html = (tmp_path / "report.html").read_text()
    for shown in ("jobs.csv", "intervals.csv", "rate_vs_time.png", "report.html"):  # tables, figure, afkit
        assert shown in html, shown
    assert "One row per planned job of the campaign" in html  # a caption (workflows/report/jobs.rst)
