"""The Snakemake workflow on the host: lint, dry-runs of the example campaigns, a tiny real run.

The tiny run uses the local executor and the apptainer test double (fixtures/apptainer): it checks
the rules, the results layout (a log beside each output), the report with a failed cell, and that a
restarted campaign does not rerun finished jobs. The real container and batch systems run in
tests/integration.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from afkit.campaign import aggregate as agg

REPO = Path(__file__).resolve().parents[3]
SNAKEFILE = REPO / "workflows" / "Snakefile"
FIXTURES = Path(__file__).parent / "fixtures"
EXAMPLES = sorted((REPO / "workflows" / "config").glob("*.yaml"))


def snakemake(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "snakemake", "-s", str(SNAKEFILE), *args]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env, check=False, timeout=600)


def test_lint_is_clean(tmp_path: Path) -> None:
    proc = snakemake("--lint", "--configfile", str(REPO / "workflows/config/demo.yaml"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Congratulations, your workflow is in a good condition!" in proc.stdout + proc.stderr


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_dry_run(example: Path, tmp_path: Path) -> None:
    proc = snakemake("-n", "-q", "rules", "--configfile", str(example), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "job" in proc.stdout + proc.stderr


def test_invalid_campaign_stops_with_the_key(tmp_path: Path, raw: dict[str, Any], write: Any) -> None:
    raw["sites"]["here"]["executor"] = "pbs"
    proc = snakemake("-n", "--configfile", str(write(raw)), cwd=tmp_path)
    assert proc.returncode != 0
    assert "sites.here.executor" in proc.stderr
    assert '"local", "htcondor", "slurm"' in proc.stderr


def test_no_campaign_given(tmp_path: Path) -> None:
    proc = snakemake("-n", cwd=tmp_path)
    assert proc.returncode != 0
    assert "no campaign given" in proc.stderr


def test_tiny_campaign_runs_reports_and_resumes(tmp_path: Path, raw: dict[str, Any], write: Any) -> None:
    (tmp_path / "fake.sif").write_bytes(b"#!/usr/bin/env run-singularity\n\0SIF_MAGIC fake")
    raw["datasets"]["gone"] = {"storage": "disk", "files": ["hzz/uproot-HZZ.root"]}
    raw["storage"]["disk"].pop("caches")
    raw["sites"]["here"]["resources"] = {"cores": 1}
    raw["benchmarks"] = [
        {
            "name": "steps",
            "type": "steps",
            "sites": ["here"],
            "datasets": ["hzz"],
            "sweep": {"access": ["direct", "copy"]},
        },
        {"name": "train", "type": "train", "sites": ["here"], "datasets": ["hzz"], "sweep": {"jobs": [1, 2]}},
        # a storage endpoint that cannot be reached: its job fails, the rest continues
        {"name": "down", "type": "steps", "sites": ["here"], "datasets": ["gone"]},
    ]
    raw["locations"] = {"pairs": {"here/gone": "remote"}}
    raw["storage"]["disk"]["url"] = "root://127.0.0.1:9"
    campaign = write(raw)
    env = {
        **os.environ,
        "PATH": f"{FIXTURES}{os.pathsep}{os.environ['PATH']}",
        "FAKE_APPTAINER_PYTHON": sys.executable,
        "XRD_CONNECTIONRETRY": "1",
    }
    profile = str(REPO / "workflows" / "profiles" / "local")
    proc = snakemake("--configfile", str(campaign), "--profile", profile, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    [results] = list((tmp_path / "results").iterdir())
    assert results.name.startswith("unit-")
    rows = agg.read_csv(results / "aggregate" / "jobs.csv")
    assert len(rows) == 2 + 3 + 1
    status = {r["bench"]: r["status"] for r in rows if r["bench"] != "train"} | {
        "train": {r["status"] for r in rows if r["bench"] == "train"}
    }
    assert status["steps"] == "ok" and status["train"] == {"ok"}
    down = next(r for r in rows if r["bench"] == "down")
    assert down["status"] == "failed"
    assert "root://127.0.0.1:9//data/hzz/uproot-HZZ.root" in down["error"] or "XRootD" in down["error"]
    html = (results / "report" / "report.html").read_text()
    assert '<td class="failed">' in html
    # a log beside each output
    for out in ("image/image.json", "aggregate/jobs.csv", "report/report.html"):
        assert any((results / out).parent.glob("*.log")), out
    assert all(p.with_suffix(".log").is_file() for p in (results / "job").glob("*/*.json"))
    # restart: nothing is rerun
    again = snakemake("--configfile", str(campaign), "--profile", profile, cwd=tmp_path, env=env)
    assert again.returncode == 0
    assert "Nothing to be done" in again.stdout + again.stderr
