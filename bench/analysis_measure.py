"""Helper of bench/analysis.sh (run inside the testbed, ROOT's environment set): the analysis payloads
side by side on the same files and branches, one thread, from the page cache and over root://.

Per location and round (the tools alternate, so drifts of the shared machine hit all of them):
  rootreadspeed   ROOT's own tool, --threads 1 (the anchor): events/s = entries / its real time
  afkit root      afkit bench analysis --engine root (TTree + TTreeCache in root.exe), if present
  afkit uproot    afkit bench analysis (uproot)
  bare uproot     a bare uproot.iterate loop over the same branches (the uproot payload's reference)
Medians over the rounds (and the best round; the CPU seconds of each tool's processes, start-up
included, which the shared host's load hardly changes); goals: afkit root >= 0.95 x rootreadspeed,
afkit uproot >= 0.97 x bare uproot (events/s). JSON lines on stdout (one per run, one per
comparison), a table on stderr.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from afkit.bench import readspeed
from afkit.campaign import bottleneck

GOALS = {"afkit-root": ("rootreadspeed", 0.95), "afkit-uproot": ("bare-uproot", 0.97)}
TOOLS = ("rootreadspeed", "afkit-root", "afkit-uproot", "bare-uproot")


def tree_paths(path: str, pattern: str) -> list[str]:
    """The trees of the file at PATH whose key path matches PATTERN (wildcards do not cross '/';
    natural order), as afkit's tree patterns name them (DF_*/O2track)."""
    import re

    import uproot

    rx = re.compile(fnmatch.translate(pattern).replace(".*", "[^/]*"))
    opts = {"handler": uproot.source.xrootd.XRootDSource} if path.startswith("root://") else {}
    names = {k.rsplit(";", 1)[0] for k, c in uproot.open(path, **opts).classnames().items() if c == "TTree"}
    key = lambda n: [int(x) if x.isdigit() else x for x in re.split(r"(\d+)", n)]  # noqa: E731
    return sorted((n for n in names if rx.fullmatch(n)), key=key)


def bare_uproot(targets: list[str], tree: str, branches: list[str], step: str) -> dict[str, Any]:
    """Open every file first (as afkit opens its inputs), then iterate: events/s over the loop."""
    import uproot

    def source(t: str) -> dict[str, Any]:  # uproot's own XRootD source (the bindings), as afkit uses
        return {"handler": uproot.source.xrootd.XRootDSource} if t.startswith("root://") else {}

    trees = []
    for t in targets:
        f = uproot.open(t, **source(t))
        trees += [f[name] for name in (tree_paths(t, tree) if any(c in tree for c in "*?[") else [tree])]
    nbytes = sum(int(t[b].compressed_bytes) for t in trees for b in branches)
    t0 = time.perf_counter()
    n = 0
    for t in trees:
        for arrays in t.iterate(branches, step_size=step):
            n += len(arrays)
    dt = time.perf_counter() - t0
    return {"events": n, "seconds": dt, "events_per_s": n / dt, "mbps": nbytes * 8 / 1e6 / dt}


def bare_process(targets: list[str], tree: str, branches: list[str]) -> dict[str, Any]:
    """bare_uproot in a fresh process (as the payloads run); RuntimeError when it fails."""
    job = json.dumps({"targets": targets, "tree": tree, "branches": branches, "step": "100 MB"})
    proc = subprocess.run([sys.executable, __file__, "--bare-uproot", job],
                          capture_output=True, text=True, check=False, timeout=1800)  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError(f"bare uproot.iterate failed: {proc.stderr.strip()[-500:]}")
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def _epoch(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def afkit_payload(targets: list[str], tree: str, branches: list[str], engine: str | None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="afkit-bench-analysis-") as work:
        out, mon = Path(work, "run.jsonl"), Path(work, "monitor.jsonl")
        cmd = [sys.executable, "-m", "afkit", "bench", "analysis", "-t", tree, "-o", str(out),
               "--monitor", str(mon), *[a for b in branches for a in ("-b", b)], *targets]  # fmt: skip
        if engine:
            cmd[5:5] = ["--engine", engine]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd[2:6])} ... failed: {proc.stderr.strip()[-500:]}")
        recs = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
        [summary] = [r for r in recs if r.get("type") == "summary"]
        samples = bottleneck.read_samples(mon)
    start, end = _epoch(summary["start"]), _epoch(summary["end"])
    counters = bottleneck.JobCounters(
        str(summary.get("status", "ok")), int(summary["bytes"]), float(summary["seconds"])
    )
    verdict, reason = bottleneck.verdict(bottleneck.in_window(samples, start, end), counters, None)
    keep = ("events", "seconds", "events_per_s", "mbps")
    return {**{k: summary[k] for k in keep}, "verdict": verdict, "reason": reason}


def reference(
    pairs: list[tuple[str, str]], branches: list[str], entries: int, threads: int
) -> dict[str, Any]:
    """rootreadspeed over (file, tree) PAIRS: a tree pattern becomes one --files/--trees entry per tree."""
    files, trees = [f for f, _ in pairs], [t for _, t in pairs]
    if len(set(trees)) == 1:
        result, _ = readspeed.run(files, trees[0], branches, threads=threads)
    else:  # rootreadspeed reads the i-th tree from the i-th file
        result, _ = readspeed.run(files, trees[0], branches, threads=threads, extra_trees=trees[1:])
    return {**result.record(entries), "seconds": result.real_s}


def has_root_engine() -> bool:
    proc = subprocess.run([sys.executable, "-m", "afkit", "bench", "analysis", "--help"],
                          capture_output=True, text=True, check=False)  # fmt: skip
    return "--engine" in proc.stdout


def warm(paths: list[str]) -> None:
    for p in paths:
        with open(p, "rb") as fh:
            while fh.read(8 << 20):
                pass


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--bare-uproot":  # a fresh process per bare run
        args = json.loads(sys.argv[2])
        result = bare_uproot(args["targets"], args["tree"], args["branches"], args["step"])
        print(json.dumps(result), flush=True)
        # uproot's XRootDSource joins its reader threads when a file is garbage-collected at interpreter
        # exit, and that join can hang (uproot/source/futures.py shutdown): the result is out, leave now.
        os._exit(0)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", nargs="+", required=True, help="local paths inside the origin's data dir")
    ap.add_argument("--data", required=True, help="the origin's data directory (AFKIT_XROOTD_DATA)")
    ap.add_argument("--url", required=True, help="the origin's URL (AFKIT_XROOTD_URL)")
    ap.add_argument("--tree", required=True)
    ap.add_argument("--branch", action="append", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1, help="rootreadspeed --threads (0: its sequential path)")
    args = ap.parse_args()

    import uproot

    paths = {f: tree_paths(f, args.tree) for f in args.files}
    missing = [f for f, ts in paths.items() if not ts]
    if missing:
        sys.exit(f"analysis_measure: no tree matching '{args.tree}' in {', '.join(missing)}")
    entries = sum(int(uproot.open(f)[t].num_entries) for f, ts in paths.items() for t in ts)
    data = Path(args.data).resolve()
    urls = [f"{args.url}//{Path(f).resolve().relative_to(data)}" for f in args.files]
    root_engine = has_root_engine()
    tools: dict[str, Callable[[list[str]], dict[str, Any]]] = {
        "rootreadspeed": lambda t: reference(
            [(u, tr) for u, f in zip(t, args.files, strict=True) for tr in paths[f]],
            args.branch, entries, args.threads),
        "afkit-uproot": lambda t: afkit_payload(t, args.tree, args.branch, None),
        "bare-uproot": lambda t: bare_process(t, args.tree, args.branch),
    }  # fmt: skip
    if root_engine:
        tools["afkit-root"] = lambda t: afkit_payload(t, args.tree, args.branch, "root")
    else:
        print("analysis_measure: 'afkit bench analysis --engine root' not available: no root payload column",
              file=sys.stderr)  # fmt: skip
    rows: list[dict[str, Any]] = []
    for location, targets in (("page-cache", list(args.files)), ("root://", urls)):
        warm(args.files)  # both: the origin reads the same files from the page cache
        runs: dict[str, list[dict[str, Any]]] = {name: [] for name in tools}
        for rnd in range(args.rounds):
            for name, fn in list(tools.items()):
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                try:
                    rec = fn(targets)
                except RuntimeError as err:  # e.g. an afkit whose uproot engine takes no tree pattern
                    print(f"analysis_measure: {name} left out: {err}", file=sys.stderr)
                    del tools[name], runs[name]
                    continue
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                # CPU seconds of the tool's processes (start-up included), the load-robust figure
                rec["process_cpu_s"] = round(
                    after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, 3
                )
                runs[name].append(rec)
                print(json.dumps({"run": name, "location": location, "round": rnd, **rec}), flush=True)
        for name in TOOLS:
            if not runs.get(name):
                continue
            eps = statistics.median(r["events_per_s"] for r in runs[name])
            best = max(r["events_per_s"] for r in runs[name])  # the least disturbed run
            mbps = statistics.median(r["mbps"] for r in runs[name])
            cpu = statistics.median(r["process_cpu_s"] for r in runs[name])
            verdicts = sorted({r.get("verdict", "-") for r in runs[name]})
            rows.append({"location": location, "tool": name, "events_per_s": round(eps, 2),
                         "best_events_per_s": round(best, 2), "mbps": round(mbps, 2),
                         "process_cpu_s": round(cpu, 3),
                         "verdict": "/".join(verdicts),
                         "runs_events_per_s": [round(r["events_per_s"], 2) for r in runs[name]]})  # fmt: skip
    for row in rows:
        if row["tool"] in GOALS:
            ref_name, goal = GOALS[row["tool"]]
            refs = [r for r in rows if r["location"] == row["location"] and r["tool"] == ref_name]
            if not refs:
                continue
            ref = refs[0]
            row["reference"], row["goal"] = ref_name, goal
            row["ratio"] = round(row["events_per_s"] / ref["events_per_s"], 4)
            row["met"] = row["ratio"] >= goal
            row["best_ratio"] = round(row["best_events_per_s"] / ref["best_events_per_s"], 4)
        print(json.dumps({"comparison": "analysis", **row}), flush=True)
    load = os.getloadavg()
    print(json.dumps({"host_load_average": load, "cpus": os.cpu_count(), "entries": entries,
                      "files": {f: os.path.getsize(f) for f in args.files}}))  # fmt: skip
    print(f"\n{len(args.files)} file(s), {entries} entries, branches {', '.join(args.branch)}; "
          f"medians of {args.rounds} rounds; load average {load[0]:.1f} on {os.cpu_count()} CPUs",
          file=sys.stderr)  # fmt: skip
    head = f"{'location':11s} {'tool':14s} {'events/s':>10s} {'best':>8s} {'Mbit/s':>9s} {'CPU s':>6s}"
    head += f"  {'verdict':22s}"
    print(f"{head} events/s ratio: median (best) vs reference (goal)", file=sys.stderr)
    for row in rows:
        goal = ""
        if "goal" in row:
            met = "ok" if row["met"] else "MISSED"
            ratios = f"{row['ratio']:.3f} ({row['best_ratio']:.3f})"
            goal = f"{ratios} vs {row['reference']} (>= {row['goal']} {met})"
        nums = f"{row['events_per_s']:10.1f} {row['best_events_per_s']:8.1f} {row['mbps']:9.1f}"
        nums += f" {row['process_cpu_s']:6.2f}"
        print(f"{row['location']:11s} {row['tool']:14s} {nums}  {row['verdict']:22s} {goal}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
