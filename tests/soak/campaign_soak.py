"""Soak: consecutive HTCondor campaigns with interrupts and retries; none may hang (issue 21).

Not part of ``make test`` (about a minute per campaign). Run inside the testbed as root; the
campaigns are submitted as the testbed's user afkit (root cannot submit):

    scripts/testbed run -- python3 tests/soak/campaign_soak.py --sif "$(scripts/mkbase bench)"

Every campaign reuses one working directory (so each snakemake finds the earlier runs' HTCondor job
event log, the condition of the executor's start-up race) and is, at random:

- ``interrupt``: some records deleted, ``afkit campaign run`` with SIGINT at a random moment
  while it runs (0.5 s up to 90 % of the first run's duration, so that the signal lands while
  jobs are submitted or running however fast the pool is), then the same command again to finish it;
- ``retry``: one record turned into a failed one, then ``afkit campaign retry --failed``;
- ``fresh``: every record deleted, then ``afkit campaign run``.

Each command must end within ``--bound`` seconds with exit 0, or 130 after the interrupt (a hang
is a failure: the command is killed and counted); afterwards every job has its record, jobs.csv
lists exactly those records, and none of the campaign's jobs is left in the queue. One JSON line
per campaign on stdout, then a summary line; exit 1 when any campaign failed.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "integration"))
from itsupport import origin_dataset, require_env  # noqa: E402

SETPRIV = ["setpriv", "--reuid=afkit", "--regid=afkit", "--init-groups"]
ENV = {**os.environ, "HOME": "/home/afkit", "USER": "afkit", "LOGNAME": "afkit",
       "XRD_CONNECTIONRETRY": "1", "XRD_REQUESTTIMEOUT": "20"}  # fmt: skip


def write_campaign(work: Path, sif: str, data: str) -> None:
    raw = {
        "name": "soak",
        "image": {"sif": sif},
        "sites": {"wn": {"executor": "htcondor", "storage": "origin", "scratch": str(work / "scratch"),
                         "resources": {"cores": 1, "mem_mb": 1, "runtime": 10}}},
        "storage": {"origin": {"url": require_env("AFKIT_XROOTD_URL"), "export": "/"}},
        "datasets": {"hzz": {"storage": "origin", "files": [f"{data}/uproot-HZZ.root"]}},
        "benchmarks": [{"name": "steps", "type": "steps", "sites": ["wn"], "datasets": ["hzz"],
                        "sweep": {"access": ["direct", "copy"], "repetitions": 2}}],
    }  # fmt: skip
    (work / "c.yaml").write_text(yaml.safe_dump(raw), encoding="utf-8")


def afkit(args: str, work: Path, bound: float, sigint_after: float | None = None) -> dict[str, object]:
    """Run ``afkit ARGS`` as afkit in WORK; SIGINT after SIGINT_AFTER s; killed after BOUND s."""
    t0 = time.monotonic()
    proc = subprocess.Popen([*SETPRIV, sys.executable, "-m", "afkit", *args.split()], cwd=work, env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    hung = False
    try:
        if sigint_after is not None:
            try:
                proc.wait(timeout=sigint_after)
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=max(1.0, bound - (time.monotonic() - t0)))
    except subprocess.TimeoutExpired:
        hung = True
        proc.kill()
        _, err = proc.communicate()
    return {
        "cmd": args,
        "code": proc.returncode,
        "s": round(time.monotonic() - t0, 1),
        "hung": hung,
        "watchdog": "afkit: watchdog:" in err,
        "critical": "CRITICAL ERROR" in err,
        "tail": err.strip().splitlines()[-1:] if hung or proc.returncode not in (0, 130) else [],
    }


def records(work: Path) -> list[Path]:
    return sorted(work.glob("results/*/job/*/*.json"))


def state_problems(work: Path, planned: int) -> list[str]:
    """What is wrong after a campaign: missing records, a stale jobs.csv, jobs left in the queue."""
    out = []
    recs = records(work)
    if len(recs) != planned:
        out.append(f"{len(recs)} of {planned} records")
    tables = list(work.glob("results/*/aggregate/jobs.csv"))
    if tables:
        with tables[0].open(encoding="utf-8") as fh:
            rows = {(r["bench"], r["id"]): r["status"] for r in csv.DictReader(fh)}
        on_disk = {(p.parent.name, p.stem): json.loads(p.read_text())["status"] for p in recs}
        if rows != on_disk:
            out.append("jobs.csv differs from the records")
    else:
        out.append("no jobs.csv")
    q = subprocess.run(["condor_q", "-allusers", "-constraint", f'Iwd == "{work}"', "-af", "ClusterId"],
                       capture_output=True, text=True, check=False).stdout.split()  # fmt: skip
    if q:
        out.append(f"jobs left in the queue: {' '.join(q)}")
    return out


def one_campaign(
    i: int, mode: str, work: Path, rng: random.Random, bound: float, planned: int, window: float
) -> dict[str, object]:
    steps = []
    if mode == "interrupt":
        for p in rng.sample(records(work), rng.randint(1, planned)):  # work to cut off
            p.unlink()
        steps.append(afkit("campaign run c.yaml", work, bound, sigint_after=rng.uniform(0.5, window)))
        steps.append(afkit("campaign run c.yaml", work, bound))
    elif mode == "retry":
        victim = rng.choice(records(work))
        rec = json.loads(victim.read_text())
        victim.write_text(json.dumps({**rec, "status": "failed", "error": "soak: marked failed"}))
        steps.append(afkit("campaign retry --failed c.yaml", work, bound))
    else:
        for p in records(work):
            p.unlink()
        steps.append(afkit("campaign run c.yaml", work, bound))
    allowed = [(0, 130)] + [(0,)] * (len(steps) - 1) if mode == "interrupt" else [(0,)] * len(steps)
    problems = [f"{s['cmd']}: hung (killed after {bound:.0f} s)" for s in steps if s["hung"]]
    problems += [f"{s['cmd']}: exit {s['code']}" for s, ok in zip(steps, allowed, strict=True)
                 if not s["hung"] and s["code"] not in ok]  # fmt: skip
    problems += state_problems(work, planned)
    return {"campaign": i, "mode": mode, "steps": steps, "ok": not problems, "problems": problems,
            "s": round(sum(float(str(s["s"])) for s in steps), 1)}  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sif", required=True, type=lambda v: str(Path(v).resolve()),
                    help="the bench image (scripts/mkbase bench)")  # fmt: skip
    ap.add_argument("--campaigns", type=int, default=20)
    ap.add_argument("--seed", type=int, default=21)
    ap.add_argument("--bound", type=float, default=300, help="seconds a command may take (default 300)")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="afkit-soak-", dir="/tmp"))
    shutil.chown(work, "afkit", "afkit")
    results = []
    t0 = time.monotonic()
    with origin_dataset("afkit-soak", ("uproot-HZZ.root",), owner="afkit") as data:
        write_campaign(work, args.sif, data)
        (work / "workflows").symlink_to(REPO / "workflows")
        first = afkit("campaign run c.yaml", work, args.bound)
        planned = len(records(work))
        window = max(1.0, 0.9 * float(str(first["s"])))  # SIGINT while a run is under way
        print(json.dumps({"campaign": 0, "mode": "first", "steps": [first], "records": planned}), flush=True)
        if first["code"] != 0 or not planned:
            print(f"campaign_soak: the first run failed (exit {first['code']}, {planned} records): "
                  f"nothing to soak; see {work}", file=sys.stderr)  # fmt: skip
            return 1
        for i in range(1, args.campaigns + 1):
            mode = rng.choice(["interrupt", "interrupt", "retry", "fresh"])
            res = one_campaign(i, mode, work, rng, args.bound, planned, window)
            results.append(res)
            print(json.dumps(res), flush=True)
    steps = [s for r in results for s in r["steps"]]  # type: ignore[attr-defined]
    summary = {
        "campaigns": len(results), "ok": sum(1 for r in results if r["ok"]),
        "hung": sum(1 for s in steps if s["hung"]), "commands": len(steps),
        "exit_130": sum(1 for s in steps if s["code"] == 130),
        "watchdog": sum(1 for s in steps if s["watchdog"]),
        "critical": sum(1 for s in steps if s["critical"]),
        "modes": {m: sum(1 for r in results if r["mode"] == m) for m in ("interrupt", "retry", "fresh")},
        "longest_command_s": max(float(str(s["s"])) for s in steps), "total_s": round(time.monotonic() - t0),
        "work": str(work),
    }  # fmt: skip
    print(json.dumps({"summary": summary}), flush=True)
    if summary["ok"] != summary["campaigns"]:
        return 1  # the working directory stays for a look
    shutil.rmtree(work)  # the directory this script created
    return 0


if __name__ == "__main__":
    sys.exit(main())
