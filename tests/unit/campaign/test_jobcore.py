"""afkit's job core: the package as a zip and a job spec run by a Python without site-packages.

A site without the submit host's files gets the core and the spec by HTCondor transfer and runs
``python3 -m afkit.campaign.jobcore SPEC`` with the worker's own python3
(workflows/scripts/htcondor-sandbox-job). Here: the same with ``python -S`` (no site-packages:
standard library only) and the test double of apptainer (tests/unit/campaign/fixtures).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

from test_job import steps_campaign

from afkit.campaign import jobcore, plan


def test_the_core_zip_holds_modules_and_data_and_is_the_same_for_the_same_sources(tmp_path: Path) -> None:
    jobcore.pack(tmp_path / "a.zip")
    jobcore.pack(tmp_path / "b.zip")
    names = zipfile.ZipFile(tmp_path / "a.zip").namelist()
    assert "afkit/campaign/jobcore.py" in names and "afkit/campaign/steps.py" in names
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    assert "afkit/image/proof/read_tree.C" in names  # package data next to the modules (a ROOT macro)
    assert "afkit/bench/rootread/afkit_read.C" in names  # the root payload's reader
    assert not [n for n in names if n.startswith("afkit/data/")]  # the workflow stays on the submit host
    assert (tmp_path / "a.zip").read_bytes() == (tmp_path / "b.zip").read_bytes()


def test_a_spec_runs_without_site_packages_and_writes_the_record(
    raw: dict[str, Any], make: Any, fake_apptainer: Path, tmp_path: Path
) -> None:
    c = make(steps_campaign(raw, ["direct"]))
    j = next(x for x in plan.expand(c) if x.bench == "s")
    sandbox = tmp_path / "sandbox"
    image = sandbox / "results" / "image" / "image.json"
    image.parent.mkdir(parents=True)
    image.write_text(json.dumps({"path": str(fake_apptainer), "sha256": "0" * 64, "tag": "T"}))
    spec = sandbox / "results" / "jobspec" / "s" / f"{j.id}.json"
    (sandbox / "results" / "jobspec" / "s").mkdir(parents=True)
    spec.write_text(plan.specs(c, [j], results="results")[0].to_json())
    jobcore.pack(sandbox / "afkit.zip")
    subprocess.run([sys.executable, "-m", "zipfile", "-e", "afkit.zip", "core"], cwd=sandbox, check=True)
    env = {**os.environ, "PYTHONPATH": str(sandbox / "core")}
    cmd = [sys.executable, "-S", "-m", "afkit.campaign.jobcore", str(spec.relative_to(sandbox))]
    proc = subprocess.run(cmd, cwd=sandbox, env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    rec = json.loads((sandbox / "results" / "job" / "s" / f"{j.id}.json").read_text())
    assert rec["status"] == "ok", rec.get("error")
    assert rec["id"] == j.id and rec["bottleneck"]  # the host monitor ran (standard library only)


def test_the_modules_a_batch_job_may_import_load_without_site_packages(tmp_path: Path) -> None:
    """A worker without the submit host's files pulls the image itself (afkit.campaign.job
    .pull_on_worker imports afkit.campaign.image) into the node's image cache
    (afkit.campaign.imagecache): nothing the job core reaches needs more than the standard library
    (a campaign's config module needs jsonschema and yaml)."""
    jobcore.pack(tmp_path / "afkit.zip")
    subprocess.run([sys.executable, "-m", "zipfile", "-e", "afkit.zip", "core"], cwd=tmp_path, check=True)
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "core")}
    modules = "afkit.campaign.jobcore, afkit.campaign.job, afkit.campaign.image, afkit.campaign.held"
    modules += ", afkit.campaign.imagecache"
    proc = subprocess.run([sys.executable, "-S", "-c", f"import {modules}"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_a_spec_that_is_not_there_is_one_line_and_exit_5(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "afkit.campaign.jobcore", "nope.json"], cwd=tmp_path,
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert proc.returncode == 5
    assert proc.stderr.startswith("afkit: error: job spec nope.json:")


class _Input(list[str]):
    spec = "results/jobspec/s/j1.json"


class _Job:
    """The parts of a snakemake job (JobExecutorInterface) batch_command reads."""

    def __init__(self, name: str = "job", group: bool = False, spec: bool = True) -> None:
        self.name, self._group = name, group
        self.input = _Input() if spec else []
        self.output, self.log = ["results/job/s/j1.json"], ["results/job/s/j1.log"]

    def is_group(self) -> bool:
        return self._group


def test_a_batch_job_of_rule_job_runs_the_job_core_on_its_spec() -> None:
    assert jobcore.batch_command(_Job(), "/v/bin/python") == (
        "/v/bin/python -m afkit.campaign.jobcore results/jobspec/s/j1.json -o results/job/s/j1.json"
        " --log results/job/s/j1.log"
    )


def test_other_rules_groups_and_jobs_without_a_spec_keep_snakemake() -> None:
    for job in (_Job(name="image"), _Job(group=True), _Job(spec=False)):
        assert jobcore.batch_command(job, "python") is None


def test_both_executors_submit_the_job_core_for_rule_job() -> None:
    import snakemake_executor_plugin_afkit_htcondor as htc
    import snakemake_executor_plugin_afkit_slurm as slurm

    for executor in (htc.Executor, slurm.Executor):
        ex = executor.__new__(executor)  # format_job_exec reads only the python executable here
        ex.get_python_executable = lambda: "/v/bin/python"
        assert ex.format_job_exec(_Job()).endswith(
            "-m afkit.campaign.jobcore results/jobspec/s/j1.json -o results/job/s/j1.json"
            " --log results/job/s/j1.log"
        )
