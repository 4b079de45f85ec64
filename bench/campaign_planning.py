"""Dry-run planning time of a large afkit campaign vs a bare Snakemake workflow with as many jobs.

Writes a campaign with N jobs (a read sweep over repetitions) and a minimal Snakefile with N jobs of
one rule (expand over N ids), times ``snakemake -n`` on each (best of R, interleaved) and prints a
JSON line with the ratio afkit / bare of the wall times and of the CPU times (user + system of the
snakemake process: less swayed by other work on a shared machine than the wall time). Goal: afkit
plans 10,000 jobs in < 30 s and at most 1.2x bare Snakemake. A dry run writes nothing (no job
spec, no results folder): checked after each afkit run.
"""

from __future__ import annotations

import argparse
import json
import resource
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
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    if args.jobs % 20:
        ap.error("--jobs must be a multiple of 20 (2 scenarios x 5 client counts x 2 block sizes)")
    with tempfile.TemporaryDirectory(prefix="afkit-bench-plan-") as tmp:
        work = Path(tmp)
        (work / "c.yaml").write_text(yaml.safe_dump(campaign(args.jobs)))
        (work / "Snakefile").write_text(BARE)
        sm = [sys.executable, "-m", "snakemake", "-n", "-q", "rules", "--cores", "1"]
        afkit_cmd = [*sm, "-s", str(REPO / "workflows" / "Snakefile"), "--configfile", "c.yaml"]
        bare_cmd = [*sm, "-s", "Snakefile", "--config", f"njobs={args.jobs}"]
        # interleaved (afkit, bare, afkit, bare, ...): the load of a shared machine hits both alike
        runs = [(dry(afkit_cmd, work), timed(bare_cmd, work)) for _ in range(args.repeat)]
    afkit_t, bare_t = min(a[0] for a, _ in runs), min(b[0] for _, b in runs)
    afkit_cpu, bare_cpu = min(a[1] for a, _ in runs), min(b[1] for _, b in runs)
    ratio = afkit_t / bare_t
    print(json.dumps({"bench": "campaign-planning", "jobs": args.jobs, "afkit_s": round(afkit_t, 2),
                      "bare_snakemake_s": round(bare_t, 2), "ratio": round(ratio, 2),
                      "afkit_cpu_s": round(afkit_cpu, 2), "bare_snakemake_cpu_s": round(bare_cpu, 2),
                      "cpu_ratio": round(afkit_cpu / bare_cpu, 2), "goal_s": 30, "goal_ratio": 1.2,
                      "goal_met": afkit_t < 30 and ratio <= 1.2}))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
