"""Dry-run planning time of a large afkit campaign vs a bare Snakemake workflow with as many jobs.

Writes a campaign with N jobs (a read sweep over repetitions), a minimal Snakefile with N jobs of
one rule (expand over N ids) and a Snakefile of the same jobs written by hand (BARE_SAME_JOBS: their
inputs, logs, resources, a table and a report rule), times ``snakemake -n`` on each (the median
of R rounds, interleaved: afkit, one-rule, same jobs, afkit, ...) and prints a JSON line with the
ratios afkit / bare of the wall times and of the CPU times (user + system of the snakemake process:
less swayed by other work on a shared machine than the wall time). Goals (issue #30): afkit plans
10,000 jobs at most 1.1x the same jobs written by hand and at most 1.4x the one-rule Snakefile.
A dry run writes nothing (no job spec, no results folder): checked after each afkit run.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]

BARE = """\
IDS = [f"j{i:06d}" for i in range(int(config["njobs"]))]


rule all:
    input:
        expand("results/job/{id}.json", id=IDS),


rule job:
    output:
        "results/job/{id}.json",
    shell:
        "echo {wildcards.id} > {output}"
"""

# The same jobs as the afkit campaign's, written by hand as a Snakemake user would: each job reads
# the image's and the dataset's description (made by a rule each) and writes its record and a log,
# with threads and resources; one rule tables the records and one reports, the report the target
# (as afkit's workflow, whose records are targets only when deleted after the tables were made).
# No afkit in it: the ratio against it is afkit's own planning cost (validation, expansion, specs,
# input functions).
BARE_SAME_JOBS = """\
IDS = [f"j{i:06d}" for i in range(int(config["njobs"]))]


rule all:
    input:
        "results/report/report.html",


rule image:
    output:
        "results/image/image.json",
    shell:
        "echo {{}} > {output}"


rule dataset:
    output:
        "results/dataset/ds.json",
    shell:
        "echo {{}} > {output}"


rule job:
    input:
        image="results/image/image.json",
        dataset="results/dataset/ds.json",
    output:
        "results/job/{id}.json",
    log:
        "results/job/{id}.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=60,
    shell:
        "echo {wildcards.id} > {output} 2> {log}"


rule aggregate:
    input:
        expand("results/job/{id}.json", id=IDS),
    output:
        "results/aggregate/jobs.csv",
    shell:
        "cat {input} > {output}"


rule report:
    input:
        "results/aggregate/jobs.csv",
    output:
        "results/report/report.html",
    shell:
        "cp {input} {output}"
"""


def campaign(n: int) -> dict:
    return {
        "name": "plan10k",
        "image": {"sif": "/nonexistent/bench.sif"},
        "sites": {"wn": {"executor": "local", "storage": "se"}},
        "storage": {"se": {"url": "root://se.example:1094", "export": "/data",
                           "caches": {"xcache": "root://xc.example:1094"}}},
        "datasets": {"ds": {"storage": "se", "files": ["f0.root", "f1.root"]}},
        "benchmarks": [{"name": "read", "type": "read", "sites": ["wn"], "datasets": ["ds"],
                        "sweep": {"scenario": ["origin", "xcache"], "clients": [1, 2, 4, 8, 16],
                                  "block_size": ["1M", "8M"], "repetitions": n // 20}}],
    }  # fmt: skip


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(cmd: list[str], cwd: Path) -> tuple[float, float]:
    """(wall, CPU) seconds of CMD."""
    cpu0, t0 = _children_cpu(), time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    dt, cpu = time.perf_counter() - t0, _children_cpu() - cpu0
    if proc.returncode != 0:
        sys.exit(f"campaign_planning: {' '.join(cmd[:4])} failed:\n{proc.stderr[-2000:]}")
    return dt, cpu


def dry(cmd: list[str], cwd: Path) -> tuple[float, float]:
    """timed(CMD), then check that the dry run wrote no results."""
    out = timed(cmd, cwd)
    if (cwd / "results").exists():
        sys.exit(f"campaign_planning: the dry run wrote {cwd / 'results'}; a dry run writes nothing")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--jobs", type=int, default=10000)
    ap.add_argument("--repeat", type=int, default=5, help="rounds (the median is reported; default 5)")
    args = ap.parse_args()
    if args.jobs % 20:
        ap.error("--jobs must be a multiple of 20 (2 scenarios x 5 client counts x 2 block sizes)")
    with tempfile.TemporaryDirectory(prefix="afkit-bench-plan-") as tmp:
        work = Path(tmp)
        (work / "c.yaml").write_text(yaml.safe_dump(campaign(args.jobs)))
        (work / "Snakefile").write_text(BARE)
        (work / "Snakefile.same").write_text(BARE_SAME_JOBS)
        sm = [sys.executable, "-m", "snakemake", "-n", "-q", "rules", "--cores", "1"]
        afkit_cmd = [*sm, "-s", str(REPO / "workflows" / "Snakefile"), "--configfile", "c.yaml"]
        bare_cmd = [*sm, "-s", "Snakefile", "--config", f"njobs={args.jobs}"]
        same_cmd = [*sm, "-s", "Snakefile.same", "--config", f"njobs={args.jobs}"]
        # interleaved (afkit, bare, same, afkit, ...): the load of a shared machine hits all alike
        runs = [(dry(afkit_cmd, work), timed(bare_cmd, work), timed(same_cmd, work))
                for _ in range(args.repeat)]  # fmt: skip
    afkit_t, bare_t, same_t = (statistics.median(r[k][0] for r in runs) for k in range(3))
    afkit_cpu, bare_cpu, same_cpu = (statistics.median(r[k][1] for r in runs) for k in range(3))
    ratio, ratio_same = afkit_t / bare_t, afkit_t / same_t
    print(json.dumps({"bench": "campaign-planning", "jobs": args.jobs, "rounds": args.repeat,
                      "statistic": "median", "afkit_s": round(afkit_t, 2),
                      "bare_snakemake_s": round(bare_t, 2), "ratio": round(ratio, 2),
                      "afkit_cpu_s": round(afkit_cpu, 2), "bare_snakemake_cpu_s": round(bare_cpu, 2),
                      "cpu_ratio": round(afkit_cpu / bare_cpu, 2),
                      "bare_same_jobs_s": round(same_t, 2), "bare_same_jobs_cpu_s": round(same_cpu, 2),
                      "ratio_same_jobs": round(ratio_same, 2),
                      "cpu_ratio_same_jobs": round(afkit_cpu / same_cpu, 2),
                      "goal_ratio": 1.4, "goal_ratio_same_jobs": 1.1,
                      "goal_met": ratio <= 1.4 and ratio_same <= 1.1}))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
