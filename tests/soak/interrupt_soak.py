"""Soak: Ctrl-C at random moments of SLURM and HTCondor campaigns; after each, nothing is left.

Not part of ``make test`` (about a minute per interrupt; ``make test`` interrupts one campaign per
executor: tests/integration/test_campaign_mixed.py). Run inside the testbed as root; the campaigns
are submitted as the testbed's user afkit:

    scripts/testbed run -- python3 tests/soak/interrupt_soak.py --sif "$(scripts/mkbase bench)"

Each round is a new campaign of 4 read jobs on one executor (they alternate), more jobs than the
node's 2 cores, so some jobs are pending while others run. On SLURM rounds, at random, the
testbed's PrologSlurmctld waits a few seconds (scripts/testbed.d/prolog-slurmctld), so jobs are
CONFIGURING (CF) too. ``afkit campaign run`` gets SIGINT at a random moment between 0.3 s and
``--window`` s after it started; the states of the campaign's batch jobs just before the signal
are kept. When afkit has exited, the round checks, at once:

- exit 130 (a campaign that finished before the signal is counted apart, not as an interrupt);
- no job of the campaign known to the batch system as pending, configuring, running or
  completing (squeue -t all, jobs that ended are kept for MinJobAge and do not count; condor_q);
- no process of user afkit left (the jobs run as afkit and nothing else does in the testbed:
  a payload reparented out of the batch system's tracking shows here);
- the SLURM node not drained;

and, ``--quiet`` seconds (default 60) after afkit's exit, that no record appeared or changed; then
the same command again must finish the campaign (exit 0, every record ok). The check of a round's
quiet time overlaps the next rounds (it only watches its own directory); a rerun never runs beside
an interrupted campaign. One JSON line per round, then a summary; exit 1 when any check failed.
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "integration"))
sys.path.insert(0, str(REPO / "tests" / "soak"))
from campaign_soak import ENV, SETPRIV  # noqa: E402
from itsupport import origin_dataset, require_env  # noqa: E402

PROLOG_DELAY = Path("/run/afkit-prolog-delay")  # read by scripts/testbed.d/prolog-slurmctld
SLURM_ENDED = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL",
               "PREEMPTED", "BOOT_FAIL", "DEADLINE"}  # fmt: skip
SITE = {"slurm": "slurm", "htcondor": "condor"}


def write_campaign(work: Path, name: str, executor: str, sif: str, data: str, duration: int) -> Path:
    site = {"executor": executor, "storage": "origin", "scratch": "/tmp",
            "resources": {"cores": 1, "mem_mb": 1, "runtime": 10}}  # fmt: skip
    raw = {
        "name": name,
        "image": {"sif": sif},
        "sites": {SITE[executor]: site},
        "storage": {"origin": {"url": require_env("AFKIT_XROOTD_URL"), "export": "/"}},
        "datasets": {"hzz": {"storage": "origin", "tree": "events", "files": [f"{data}/uproot-HZZ.root"]}},
        "benchmarks": [{"name": "read", "type": "read", "sites": [SITE[executor]], "datasets": ["hzz"],
                        "duration": duration, "sweep": {"block_size": ["256k", "512k", "1m", "2m"]}}],
    }  # fmt: skip
    path = work / "c.yaml"
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    return path


def out(cmd: list[str]) -> str:
    return subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=60).stdout


def batch_jobs(executor: str, work: Path) -> list[str]:
    """The campaign's jobs (by their working directory) the batch system still has: 'ID STATE'."""
    if executor == "slurm":
        lines = out(["squeue", "-h", "-u", "afkit", "-t", "all", "-o", "%i|%T|%Z"]).splitlines()
        rows = [r for r in (ln.split("|") for ln in lines) if len(r) == 3 and r[2] == str(work)]
        return [f"{r[0]} {r[1]}" for r in rows if r[1] not in SLURM_ENDED]
    lines = out(["condor_q", "-allusers", "-constraint", f'Iwd == "{work}"', "-af", "ClusterId", "JobStatus"])
    letters = {"1": "I", "2": "R", "3": "X", "4": "C", "5": "H", "6": ">", "7": "S"}
    rows = [ln.split() for ln in lines.splitlines() if len(ln.split()) == 2]
    return [f"{r[0]} {letters.get(r[1], r[1])}" for r in rows]


def afkit_processes() -> list[str]:
    """User afkit's processes but zombies (ended, not yet reaped by slurmstepd or the starter)."""
    rows = [ln.split(None, 2) for ln in out(["ps", "-u", "afkit", "-o", "pid=,stat=,args="]).splitlines()]
    return [" ".join(r) for r in rows if len(r) >= 2 and not r[1].startswith("Z")]


def drained() -> list[str]:
    return [ln for ln in out(["sinfo", "-h", "-N", "-o", "%N %T %E"]).splitlines() if "drain" in ln.lower()]


def records(work: Path) -> dict[str, float]:
    return {str(p): p.stat().st_mtime for p in work.glob("results/*/job/*/*.json")}


@dataclass
class Round:
    i: int
    executor: str
    work: Path
    prolog_delay: int
    after_s: float
    exit_code: int | None = None
    stop_s: float = 0.0
    states_before: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    at_exit: dict[str, float] = field(default_factory=dict)
    exited_at: float = 0.0
    rerun: dict[str, object] = field(default_factory=dict)

    def line(self) -> dict[str, object]:
        return {"round": self.i, "executor": self.executor, "prolog_delay_s": self.prolog_delay,
                "sigint_after_s": round(self.after_s, 1), "exit": self.exit_code,
                "states_before": self.states_before, "stop_s": round(self.stop_s, 1),
                "records_at_exit": len(self.at_exit), "rerun": self.rerun,
                "problems": self.problems}  # fmt: skip


def afkit_cmd(work: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([*SETPRIV, sys.executable, "-m", "afkit", "campaign", "run", "c.yaml"], cwd=work,
                            env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip


def interrupt(r: Round, bound: float) -> None:
    """Start the campaign, SIGINT after r.after_s, check what is left at afkit's exit."""
    PROLOG_DELAY.write_text(f"{r.prolog_delay}\n")
    proc = afkit_cmd(r.work)
    try:
        proc.wait(timeout=r.after_s)
    except subprocess.TimeoutExpired:
        r.states_before = batch_jobs(r.executor, r.work)
        proc.send_signal(signal.SIGINT)
    t0 = time.monotonic()
    try:
        _, err = proc.communicate(timeout=bound)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        r.problems.append(f"afkit did not exit within {bound:.0f} s of the SIGINT")
    r.stop_s, r.exited_at, r.exit_code = time.monotonic() - t0, time.monotonic(), proc.returncode
    r.at_exit = records(r.work)
    if proc.returncode not in (0, 130):
        r.problems.append(f"exit {proc.returncode}: {err.strip().splitlines()[-1:]}")
    if left := batch_jobs(r.executor, r.work):
        r.problems.append(f"batch jobs left: {left}")
    if procs := afkit_processes():
        r.problems.append(f"processes of afkit left: {procs}")
    if nodes := drained():
        r.problems.append(f"drained: {nodes}")
    PROLOG_DELAY.write_text("0\n")


def finish(r: Round, quiet: float, bound: float, planned: int) -> None:
    """After the quiet time: no record appeared or changed since the exit; the rerun completes."""
    time.sleep(max(0.0, r.exited_at + quiet - time.monotonic()))  # about time itself: the window
    if (now := records(r.work)) != r.at_exit:
        r.problems.append(f"records changed within {quiet:.0f} s of the exit: "
                          f"{sorted(set(now.items()) ^ set(r.at_exit.items()))[:3]}")  # fmt: skip
    t0 = time.monotonic()
    proc = afkit_cmd(r.work)
    try:
        _, err = proc.communicate(timeout=bound)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    recs = [json.loads(Path(p).read_text()) for p in records(r.work)]
    r.rerun = {"exit": proc.returncode, "s": round(time.monotonic() - t0, 1),
               "ok": sum(1 for x in recs if x.get("status") == "ok")}  # fmt: skip
    if proc.returncode != 0 or r.rerun["ok"] != planned:
        r.problems.append(f"rerun: exit {proc.returncode}, {r.rerun['ok']} of {planned} ok: "
                          f"{err.strip().splitlines()[-1:]}")  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sif", required=True, type=lambda v: str(Path(v).resolve()),
                    help="the bench image (scripts/mkbase bench)")  # fmt: skip
    ap.add_argument("--rounds", type=int, default=30, help="interrupts (default 30)")
    ap.add_argument("--seed", type=int, default=31)
    ap.add_argument("--window", type=float, default=25.0,
                    help="the SIGINT comes 0.3 s to WINDOW s after the start (default 25)")  # fmt: skip
    ap.add_argument("--quiet", type=float, default=60.0,
                    help="seconds after afkit's exit in which no record may appear (default 60)")  # fmt: skip
    ap.add_argument("--bound", type=float, default=300.0, help="seconds a command may take (default 300)")
    ap.add_argument("--output", type=Path, help="also write the JSON lines here")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    base = Path(tempfile.mkdtemp(prefix="afkit-isoak-", dir="/tmp"))
    subprocess.run(["chown", "afkit:afkit", str(base)], check=True)
    planned, pending, done, lines = 4, [], [], []
    t0 = time.monotonic()
    with origin_dataset("afkit-isoak", ("uproot-HZZ.root",), owner="afkit") as data:
        for i in range(1, args.rounds + 1):
            executor = ("slurm", "htcondor")[i % 2]
            work = base / f"r{i:02d}"
            work.mkdir()
            subprocess.run(["chown", "afkit:afkit", str(work)], check=True)
            (work / "workflows").symlink_to(REPO / "workflows")
            write_campaign(work, f"isoak-{i}", executor, args.sif, data, rng.randint(6, 12))
            r = Round(i, executor, work, rng.choice([0, 0, 6]) if executor == "slurm" else 0,
                      rng.uniform(0.3, args.window))  # fmt: skip
            interrupt(r, args.bound)
            pending.append(r)
            while len(pending) > 2 or (pending and i == args.rounds):  # reruns two rounds behind
                f = pending.pop(0)
                finish(f, args.quiet, args.bound, planned)
                done.append(f)
                lines.append(f.line())
                print(json.dumps(lines[-1]), flush=True)
    cut = [r for r in done if r.exit_code == 130]
    summary = {
        "rounds": len(done), "interrupted": len(cut),
        "finished_first": sum(1 for r in done if r.exit_code == 0),
        "failed_rounds": sum(1 for r in done if r.problems),
        "states_seen": sorted({s.split()[1] for r in cut for s in r.states_before}),
        "stop_s_median": sorted(r.stop_s for r in cut)[len(cut) // 2] if cut else None,
        "stop_s_max": round(max((r.stop_s for r in cut), default=0.0), 1),
        "per_executor": {e: sum(1 for r in cut if r.executor == e) for e in ("slurm", "htcondor")},
        "total_s": round(time.monotonic() - t0), "work": str(base),
    }  # fmt: skip
    print(json.dumps({"summary": summary}), flush=True)
    if args.output:
        args.output.write_text("".join(json.dumps(x) + "\n" for x in [*lines, {"summary": summary}]))
    return 1 if summary["failed_rounds"] else 0


if __name__ == "__main__":
    sys.exit(main())
