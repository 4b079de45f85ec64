"""Per-job overhead of each campaign executor against the payload's own runtime (in the testbed).

For each executor (local, htcondor, slurm) runs a campaign of N identical `steps` jobs on one small
file (direct access from the local mount), one at a time (--jobs 1), and reports per job: the wall
time of the jobs' snakemake run divided by N (scheduling, submission, status polling, the
worker-side snakemake start, the wrapper), the wrapper's own time (apptainer exec + payload) and the
payload's processing time, and the ratio wall-per-job / wrapper. JSON lines on stdout.

Run inside the testbed as root: scripts/testbed run -- python3 bench/campaign_overhead.py --sif SIF
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
USERS = {"local": "root", "htcondor": "afkit", "slurm": "afkit"}


def campaign(executor: str, sif: str, data: str, n: int, work: Path) -> dict:
    return {
        "name": f"overhead-{executor}",
        "image": {"sif": sif},
        "sites": {"wn": {"executor": executor, "storage": "origin", "scratch": str(work / "scratch"),
                         "resources": {"mem_mb": 1},  # the testbed's SLURM node has RealMemory=1
                         "apptainer_args": ["--userns"] if USERS[executor] == "root" else []}},
        "storage": {"origin": {"url": os.environ["AFKIT_XROOTD_URL"], "export": "/",
                               "path": os.environ["AFKIT_XROOTD_DATA"]}},
        "datasets": {"one": {"storage": "origin", "files": [f"{data}/small.dat"]}},
        "benchmarks": [{"name": "steps", "type": "steps", "sites": ["wn"], "datasets": ["one"],
                        "sweep": {"repetitions": n}}],
    }  # fmt: skip


def run(executor: str, sif: str, data: str, n: int) -> dict:
    user = USERS[executor]
    work = Path(tempfile.mkdtemp(prefix=f"afkit-bench-{executor}-", dir="/tmp"))
    try:
        shutil.chown(work, user, user)
        cfile = work / "c.yaml"
        cfile.write_text(yaml.safe_dump(campaign(executor, sif, data, n, work)))
        profile = REPO / "workflows" / "profiles" / executor
        cmd = [sys.executable, "-m", "snakemake", "-s", str(REPO / "workflows" / "Snakefile"),
               "--configfile", str(cfile), "--profile", str(profile), "--jobs", "1"]  # fmt: skip
        env = dict(os.environ)
        if user != "root":
            env.update(HOME=f"/home/{user}", USER=user, LOGNAME=user)
            cmd = ["setpriv", f"--reuid={user}", f"--regid={user}", "--init-groups", *cmd]
        # plan + image + dataset first, so the timed run is the jobs (+ aggregate/report)
        prep = subprocess.run([*cmd, "--until", "image", "dataset"], cwd=work, env=env, capture_output=True,
                              text=True, check=False)  # fmt: skip
        if prep.returncode != 0:
            sys.exit(f"campaign_overhead: {executor}: preparation failed:\n{prep.stderr[-2000:]}")
        t0 = time.perf_counter()
        proc = subprocess.run([*cmd, "--until", "job"], cwd=work, env=env, capture_output=True, text=True,
                              check=False)  # fmt: skip
        wall = time.perf_counter() - t0
        if proc.returncode == 0:  # the tables (not timed)
            proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            sys.exit(f"campaign_overhead: {executor}: snakemake failed:\n{proc.stderr[-2000:]}")
        [results] = list((work / "results").iterdir())
        with (results / "aggregate" / "jobs.csv").open() as fh:
            rows = list(csv.DictReader(fh))
        proc_s = statistics.median(float(r["processing_s"]) for r in rows)
        wrap_s = statistics.median(float(r["wall_s"]) for r in rows)
        return {"bench": "campaign-executor-overhead", "executor": executor, "jobs": n,
                "wall_per_job_s": round(wall / n, 3), "wrapper_s": round(wrap_s, 3),
                "payload_processing_s": round(proc_s, 4),
                "ratio_wall_per_job_to_wrapper": round(wall / n / wrap_s, 2)}  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)  # the directory this run created


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sif", required=True, help="the bench image")
    ap.add_argument("--jobs", type=int, default=5)
    ap.add_argument("--executor", action="append", choices=sorted(USERS))
    args = ap.parse_args()
    root = Path(os.environ["AFKIT_XROOTD_DATA"])
    data = f"afkit-bench-overhead-{uuid.uuid4().hex[:8]}"
    (root / data).mkdir()
    try:
        (root / data / "small.dat").write_bytes(os.urandom(1 << 20))
        os.chmod(root / data / "small.dat", 0o644)
        for executor in args.executor or ["local", "htcondor", "slurm"]:
            print(json.dumps(run(executor, args.sif, data, args.jobs)), flush=True)
    finally:
        shutil.rmtree(root / data)  # the directory this run created
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
