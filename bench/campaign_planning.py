"""Dry-run planning time of a large afkit campaign vs a bare Snakemake workflow with as many jobs.

Writes a campaign with N jobs (a read sweep over repetitions) and a minimal Snakefile with N jobs of
one rule (expand over N ids), times ``snakemake -n`` on each (best of R) and prints JSON lines and
the ratio afkit / bare. Goal: afkit plans 10,000 jobs in < 30 s and at most 1.2x bare Snakemake.
The first afkit run writes the jobs' specs (afkit.campaign.plan.write_specs); the others find them
(the digest of the plan): both are printed, the best run is the ratio's.
"""

from __future__ import annotations

import argparse
import json
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


def timed(cmd: list[str], cwd: Path) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    dt = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"campaign_planning: {' '.join(cmd[:4])} failed:\n{proc.stderr[-2000:]}")
    return dt


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
        runs = [(timed(afkit_cmd, work), timed(bare_cmd, work)) for _ in range(args.repeat)]
        afkit_t, bare_t = min(a for a, _ in runs), min(b for _, b in runs)
        first_t = runs[0][0]
    ratio = afkit_t / bare_t
    print(json.dumps({"bench": "campaign-planning", "jobs": args.jobs, "afkit_s": round(afkit_t, 2),
                      "afkit_first_run_s": round(first_t, 2), "bare_snakemake_s": round(bare_t, 2),
                      "ratio": round(ratio, 2), "goal_s": 30, "goal_ratio": 1.2,
                      "goal_met": afkit_t < 30 and ratio <= 1.2}))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
