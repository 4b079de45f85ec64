"""The Snakemake workflow on the host: lint, dry-runs of the example campaigns, a tiny real run.

The tiny run uses the local executor and the apptainer test double (fixtures/apptainer): it checks
the rules, the results layout (a log beside each output), the report with a failed cell, and that a
restarted campaign does not rerun finished jobs. The real container and batch systems run in
tests/integration.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from auditcount import audit_env, events
from waitsupport import wait_until

from afkit.campaign import aggregate as agg
from afkit.campaign.runplan import RunPlan

REPO = Path(__file__).resolve().parents[3]
SNAKEFILE = REPO / "workflows" / "Snakefile"
FIXTURES = Path(__file__).parent / "fixtures"
# every example campaign once: config.yaml (the default campaign) is a link to demo.yaml
EXAMPLES = sorted({p.resolve() for p in (REPO / "workflows" / "config").glob("*.yaml")})


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
    assert proc.returncode == 6  # as docs/campaigns.md says
    assert "sites.here.executor" in proc.stderr
    assert '"local", "htcondor", "slurm"' in proc.stderr


def test_without_a_configfile_the_default_campaign_is_planned_from_the_workflow_directory() -> None:
    # as docs/campaigns.md says: no -s, no --configfile (the workflow catalog's standardized usage)
    cmd = [sys.executable, "-m", "snakemake", "--profile", "profiles/local", "-n"]
    proc = subprocess.run(cmd, cwd=REPO / "workflows", capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "results/demo-" in proc.stdout + proc.stderr  # config/config.yaml is the demo campaign


def test_a_configfile_campaign_is_not_merged_with_the_default(
    tmp_path: Path, raw: dict[str, Any], write: Any
) -> None:
    proc = snakemake("-n", "--configfile", str(write(raw)), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout + proc.stderr
    assert "results/unit-" in out and "demo" not in out and "blobs" not in out


def test_tiny_campaign_runs_reports_and_resumes(tmp_path: Path, raw: dict[str, Any], write: Any) -> None:
    (tmp_path / "fake.sif").write_bytes(b"#!/usr/bin/env run-singularity\n\0SIF_MAGIC\0fake")
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


def fake_env() -> dict[str, str]:
    return {**os.environ, "PATH": f"{FIXTURES}{os.pathsep}{os.environ['PATH']}",
            "FAKE_APPTAINER_PYTHON": sys.executable, "XRD_CONNECTIONRETRY": "1"}  # fmt: skip


def two_jobs(raw: dict[str, Any], tmp_path: Path) -> dict[str, Any]:
    """Two steps jobs on the local site, the apptainer test double."""
    (tmp_path / "fake.sif").write_bytes(b"#!/usr/bin/env run-singularity\n\0SIF_MAGIC\0fake")
    raw["sites"]["here"]["resources"] = {"cores": 1}
    raw["benchmarks"] = [{"name": "steps", "type": "steps", "sites": ["here"], "datasets": ["hzz"],
                          "sweep": {"access": ["direct", "copy"]}}]  # fmt: skip
    return raw


LOCAL = str(REPO / "workflows" / "profiles" / "local")


def test_local_profile_refuses_a_site_of_another_executor(
    tmp_path: Path, raw: dict[str, Any], write: Any
) -> None:
    raw = two_jobs(raw, tmp_path)
    raw["benchmarks"][0]["sites"] = ["here", "far"]  # far: slurm
    proc = snakemake("--configfile", str(write(raw)), "--profile", LOCAL, cwd=tmp_path, env=fake_env())
    assert proc.returncode == 4, proc.stderr[-2000:]
    assert "far (slurm)" in proc.stderr and "afkit campaign run" in proc.stderr
    assert not list(tmp_path.glob("results/*/job"))  # no job ran here


def test_a_missing_dataset_file_stops_before_anything_runs(
    tmp_path: Path, raw: dict[str, Any], write: Any
) -> None:
    raw = two_jobs(raw, tmp_path)
    raw["datasets"]["hzz"]["files"].append("hzz/gone.root")
    proc = snakemake("--configfile", str(write(raw)), "--profile", LOCAL, cwd=tmp_path, env=fake_env())
    assert proc.returncode == 5, proc.stderr[-2000:]
    assert "hzz/gone.root" in proc.stderr and "on disk" in proc.stderr
    # nothing made: only the plan (the jobs' specs, what the image and manifests are made from:
    # written by planning), no image, dataset or record
    assert sorted(p.name for p in tmp_path.glob("results/*/*")) == ["jobspec", "plan"]


def test_afkit_campaign_run_prints_the_report_path_alone(
    tmp_path: Path, raw: dict[str, Any], write: Any
) -> None:
    """The steps' commands print what they made, the rules send it to stderr: the stdout of
    `afkit campaign run` is the report's path alone, as docs/campaigns.md shows it."""
    campaign = write(two_jobs(raw, tmp_path))
    cmd = [sys.executable, "-m", "afkit", "campaign", "run", str(campaign)]
    proc = subprocess.run(cmd, cwd=tmp_path, env=fake_env(), capture_output=True, text=True, check=False,
                          timeout=600)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert re.fullmatch(r"results/unit-v1/report/report\.html\n", proc.stdout), proc.stdout


def test_a_campaign_run_validates_and_expands_its_campaign_once(
    tmp_path: Path, raw: dict[str, Any], write: Any
) -> None:
    """`afkit campaign run` plans once: snakemake and every step command read the plan file
    (audit events of every Python process of the run: afkit's, snakemake's, the rules' commands)."""
    campaign = write(two_jobs(raw, tmp_path))
    env, log = audit_env(tmp_path, fake_env())
    cmd = [sys.executable, "-m", "afkit", "campaign", "run", str(campaign)]
    proc = subprocess.run(
        cmd, cwd=tmp_path, env=env, capture_output=True, text=True, check=False, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    seen = events(log)
    assert seen.count("afkit.campaign.validate") == 1, seen
    assert seen.count("afkit.campaign.expand") == 1, seen
    # snakemake and the image and dataset steps read the plan instead (two sites: afkit makes the
    # tables and the report itself, from the plan it made)
    assert seen.count("afkit.campaign.plan_read") == 3, seen
    assert {r["status"] for r in agg.read_csv(next(tmp_path.glob("results/*/aggregate/jobs.csv")))} == {"ok"}


def test_a_dry_run_writes_nothing(tmp_path: Path, raw: dict[str, Any], write: Any) -> None:
    """Neither `afkit campaign run --dry-run` nor `snakemake -n` writes the jobs' specs (a run does)."""
    campaign = write(two_jobs(raw, tmp_path))
    cmd = [sys.executable, "-m", "afkit", "campaign", "run", str(campaign), "--dry-run"]
    afkit = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, check=False, timeout=300)
    assert afkit.returncode == 0, afkit.stderr[-2000:]
    direct = snakemake("-n", "--configfile", str(campaign), "--profile", LOCAL, cwd=tmp_path)
    assert direct.returncode == 0, direct.stderr[-2000:]
    for proc in (afkit, direct):
        assert re.search(r"^job\s+2$", proc.stdout + proc.stderr, re.M), proc.stdout[-2000:]
    assert not (tmp_path / "results").exists()


def test_a_dry_run_of_a_local_wave_never_run_names_its_jobs_specs_in_order(
    tmp_path: Path, raw: dict[str, Any], write: Any
) -> None:
    raw["sites"]["here"]["resources"] = {"cores": 1}
    raw["benchmarks"] = [{"name": "t", "type": "train", "sites": ["here"], "datasets": ["hzz"],
                          "sweep": {"jobs": [3]}}]  # fmt: skip
    proc = snakemake("-n", "-p", "-c", "4", "--configfile", str(write(raw)), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    [(specs, records)] = re.findall(r"afkit campaign job (.+?) -o (.+?) --log", proc.stdout + proc.stderr)
    names = [Path(p).name for p in specs.split()]
    assert names == [Path(p).name for p in records.split()] and len(names) == 3, (specs, records)
    assert [n.rsplit(".", 2)[1] for n in names] == ["i0", "i1", "i2"]


def test_a_read_benchmarks_nodes_sweep_runs_each_wave_at_a_local_site_as_one_job_after_the_last(
    tmp_path: Path, raw: dict[str, Any], write: Any
) -> None:
    """sweep.nodes of a read benchmark: waves of 1 and 3 jobs (rule wave_local_3 for the three, each
    of its specs in index order), the second waiting for the first (docs/campaigns.md, "Client nodes")."""
    raw["sites"]["here"].update(resources={"cores": 1}, node_netns=["fra-n1", "fra-n2", "fra-n3"])
    raw["benchmarks"] = [{"name": "r", "type": "read", "sites": ["here"], "datasets": ["hzz"],
                          "sweep": {"clients": [2], "nodes": [1, 3]}}]  # fmt: skip
    proc = snakemake("-n", "-p", "-c", "4", "--configfile", str(write(raw)), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout + proc.stderr
    [(specs, _records)] = re.findall(r"afkit campaign job (\S+ \S+ \S+) -o (.+?) --log", out)
    assert [Path(p).name.rsplit(".", 2)[1] for p in specs.split()] == ["i0", "i1", "i2"], specs
    assert ".c2.b8M.s0.w3.r0." in specs
    assert re.search(r"wave/r/here\.hzz\.origin\.direct\.c2\.b8M\.s0\.w1\.r0\.done", out), out[-3000:]


def test_local_waves_of_two_sizes_run_each_job_on_its_own_spec(
    tmp_path: Path, raw: dict[str, Any], write: Any
) -> None:
    """Rules wave_local_2 and wave_local_3 (made in a loop): each wave's command runs its own jobs'
    specs, one record each (a command made with the loop's last size would name other jobs)."""
    raw = two_jobs(raw, tmp_path)
    raw["benchmarks"] = [{"name": "t", "type": "train", "sites": ["here"], "datasets": ["hzz"],
                          "sweep": {"jobs": [2, 3]}}]  # fmt: skip
    proc = snakemake("-c", "3", "--configfile", str(write(raw)), "--profile", LOCAL, cwd=tmp_path,
                     env=fake_env())  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    [results] = (tmp_path / "results").iterdir()
    rows = agg.read_csv(results / "aggregate" / "jobs.csv")
    assert sorted((r["wave_size"], r["status"]) for r in rows) == [("2", "ok")] * 2 + [("3", "ok")] * 3


def test_a_campaign_changed_by_config_keys_runs_with_its_relative_paths(
    tmp_path: Path, raw: dict[str, Any], write: Any
) -> None:
    """`--config KEY=VALUE` changes the campaign as snakemake users expect: planning writes the
    merged campaign (the plan file) for the rules' commands, whose relative paths (fake.sif) stay
    beside the file."""
    campaign = write(two_jobs(raw, tmp_path))
    (tmp_path / "elsewhere").mkdir()
    args = ("--configfile", str(campaign), "--config", "name=renamed", "--profile", LOCAL)
    proc = snakemake(*args, cwd=tmp_path / "elsewhere", env=fake_env())
    assert proc.returncode == 0, proc.stderr[-3000:]
    [results] = (tmp_path / "elsewhere" / "results").iterdir()
    assert results.name.startswith("renamed-")
    planned = RunPlan.read(results / "plan" / "campaign.plan.json")
    assert planned.campaign.name == "renamed" and planned.campaign.base_dir == tmp_path
    assert {r["status"] for r in agg.read_csv(results / "aggregate" / "jobs.csv")} == {"ok"}


def test_a_dry_run_of_a_changed_campaign_writes_nothing(
    tmp_path: Path, raw: dict[str, Any], write: Any
) -> None:
    campaign = write(two_jobs(raw, tmp_path))
    args = ("-n", "-p", "--configfile", str(campaign), "--config", "name=renamed", "--profile", LOCAL)
    proc = snakemake(*args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "results/renamed-v1/plan/campaign.plan.json -o" in proc.stdout + proc.stderr
    assert not (tmp_path / "results").exists()


def payload_reading(scratch: Path) -> bool:
    """Has a job's payload (its scratch directory in SCRATCH) written an interval record, i.e. is
    it reading? (afkit.bench.records.JsonlWriter writes, flushed, to .NAME.PID.part until it ends.)"""
    for part in scratch.glob("afkit-job-*/**/.*.jsonl.*.part"):
        try:
            if '"interval"' in part.read_text(encoding="utf-8"):
                return True
        except OSError:  # renamed into place meanwhile
            continue
    return False


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_an_interrupt_cuts_the_local_job_off_without_a_record_and_exits_130(
    sig: signal.Signals, tmp_path: Path, raw: dict[str, Any], write: Any
) -> None:
    raw = two_jobs(raw, tmp_path)
    raw["benchmarks"] = [{"name": "long", "type": "read", "sites": ["here"], "datasets": ["hzz"],
                          "duration": 60, "interval": 1}]  # fmt: skip
    env = {**fake_env(), "FAKE_APPTAINER_LOG": str(tmp_path / "apptainer.calls")}
    cmd = [sys.executable, "-m", "snakemake", "-s", str(SNAKEFILE), "--configfile", str(write(raw)),
           "--profile", LOCAL]  # fmt: skip
    sm = subprocess.Popen(
        cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    scratch = tmp_path / "scratch"  # the site's (tests/unit/campaign/conftest.py)
    try:
        wait_until(lambda: payload_reading(scratch), 60, what="the payload's first interval record", proc=sm)
        sm.send_signal(sig)  # to snakemake only, as `kill PID` would
        out, _ = sm.communicate(timeout=60)
    finally:
        if sm.poll() is None:
            sm.kill()
    assert sm.returncode == 130, out[-3000:]
    assert not list(tmp_path.glob("results/*/job/*/*.json"))  # neither failed nor ok
    payloads = subprocess.run(["pgrep", "-f", str(tmp_path)], capture_output=True, text=True, check=False)
    assert payloads.stdout == ""  # the payload is gone too


def test_a_wave_at_a_local_site_is_one_snakemake_job_with_the_threads_of_all_its_jobs(
    tmp_path: Path, raw: dict[str, Any], write: Any
) -> None:
    """docs/federation.md, "Wave start skew": the local executor gives such a job all its slots at
    once; a batch site's waves stay one snakemake job per job (the batch system releases them)."""
    raw["sites"]["here"]["resources"] = {"cores": 1}
    raw["benchmarks"] = [
        {
            "name": "t",
            "type": "train",
            "sites": ["here", "far"],
            "datasets": ["hzz"],
            "sweep": {"jobs": [1, 3]},
        }
    ]
    proc = snakemake("-n", "-c", "4", "--configfile", str(write(raw)), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout + proc.stderr
    field = r"(?:\s+\w+: .*\n)*?"  # the dry run's lines of a job (input, output, reason, ...)
    waves = re.findall(
        rf"rule wave_local_3:\n{field}\s+wildcards: bench=t, wave=(\S+)\n\s+threads: (\d+)", out
    )
    assert [(w.split(".")[0], t) for w, t in waves] == [("here", "3")], out[-3000:]
    jobs = re.findall(rf"rule job:\n{field}\s+wildcards: bench=t, job=(\S+)", out)
    assert sorted(j.split(".")[0] + j[j.index(".w") :] for j in jobs) == sorted(
        ["here.w1.r0.i0", "far.w1.r0.i0", "far.w3.r0.i0", "far.w3.r0.i1", "far.w3.r0.i2"]
    )
