#!/usr/bin/env python3
"""Measurements behind bench/bench_clients.sh: afkit's clients against reference tools.

Each comparison runs afkit and the reference on the same file, block size and pattern,
alternating, ``--repeat`` times. Two ratios: of the best runs (the least disturbed on a shared
machine) and of the medians; a goal is met when the median ratio reaches it. Prints one JSON line
per comparison and a table.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

PY = sys.executable
PASSES = 5  # the analysis comparison reads its file this many times: long enough to time


def afkit_json(*args: str) -> dict[str, Any]:
    proc = subprocess.run([PY, "-m", "afkit", "bench", *args, "--no-monitor"], capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"afkit bench {' '.join(args)} failed (exit {proc.returncode}):\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def warm(path: Path) -> None:
    with path.open("rb") as fh:
        while fh.read(1 << 24):
            pass


def fio_gbps(path: Path, rw: str, bs: str, invalidate: bool, io_size: int | None = None) -> float:
    cmd = ["fio", "--name=ref", f"--filename={path}", f"--rw={rw}", f"--bs={bs}", "--ioengine=psync"]
    if io_size is not None:  # with a skip fio wraps around to the start unless told when to stop
        cmd.append(f"--io_size={io_size}")
    # fadvise_hint=0: no POSIX_FADV_SEQUENTIAL/RANDOM, which would change the kernel's read-ahead;
    # afkit (like XrdCl and ROOT) gives no such hint, so fio must not either.
    cmd += [f"--invalidate={int(invalidate)}", "--fadvise_hint=0", "--output-format=json", "--randrepeat=0"]
    # iomem_align: a page-aligned buffer, as afkit's. fio aligns its buffers only for O_DIRECT or
    # with this option (fio backend.c, init_io_u_buffers); its default malloc'd buffer starts 16
    # bytes past a page, where the kernel's copy out of the page cache was measured ~4x slower
    # (AMD EPYC, FSRM). The aligned fio is the faster reference (docs/benchmarks.md).
    cmd.append("--iomem_align=4096")
    out = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
    return out["jobs"][0]["read"]["bw_bytes"] * 8 / 1e9


def fresh(kind: str, *args: str) -> float:
    """Run a bare reference loop in a fresh process, like afkit's own run (no warm connection)."""
    proc = subprocess.run([PY, __file__, "--bare", kind, *args], capture_output=True, text=True, check=True)
    return float(proc.stdout.strip())


def bare_xrootd_gbps(url: str, block: int) -> float:
    from XRootD import client
    from XRootD.client.flags import OpenFlags

    f = client.File()
    status, _ = f.open(url, OpenFlags.READ)
    assert status.ok, status.message
    size = f.stat()[1].size
    t0 = time.time()
    done = 0
    for offset in range(0, size, block):
        status, data = f.read(offset, block)
        assert status.ok, status.message
        done += len(data)
    seconds = time.time() - t0
    f.close()
    return done * 8 / 1e9 / seconds


def xrdcp_gbps(url: str, size: int) -> float:
    t0 = time.time()
    subprocess.run(["xrdcp", "-f", "-s", url, "/dev/null"], check=True)
    return size * 8 / 1e9 / (time.time() - t0)


def bare_uproot_eps(path: Path, tree: str, branch: str, step: str, passes: int) -> float:
    """Open the file ``passes`` times first (as afkit opens all its inputs), then iterate each."""
    import uproot

    trees = [uproot.open(path)[tree] for _ in range(passes)]
    t0 = time.time()
    n = 0
    for t in trees:
        for arrays in t.iterate([branch], step_size=step):
            n += len(arrays)
    return n / (time.time() - t0)


def best(fn: Callable[[], float], repeat: int) -> float:
    return max(fn() for _ in range(repeat))


def compare(
    name: str, goal: float | None, ours: Callable[[], float], ref: Callable[[], float], repeat: int, unit: str
) -> dict[str, Any]:
    a, b = [], []
    for _ in range(repeat):  # alternate, so drifts hit both
        a.append(ours())
        b.append(ref())
    rec = {"comparison": name, "afkit": round(max(a), 4), "reference": round(max(b), 4), "unit": unit}
    rec["ratio"] = round(rec["afkit"] / rec["reference"], 4)
    rec["median_ratio"] = round(statistics.median(a) / statistics.median(b), 4)
    rec["goal"] = goal
    rec["met"] = None if goal is None else rec["median_ratio"] >= goal
    rec["runs"] = {"afkit": [round(x, 4) for x in a], "reference": [round(x, 4) for x in b]}
    print(json.dumps(rec), flush=True)
    return rec


def bare_main(kind: str, args: list[str]) -> int:
    if kind == "xrootd":
        print(bare_xrootd_gbps(args[0], int(args[1])))
    else:
        print(bare_uproot_eps(Path(args[0]), args[1], args[2], args[3], int(args[4])))
    return 0


def main() -> int:
    if len(sys.argv) > 2 and sys.argv[1] == "--bare":
        return bare_main(sys.argv[2], sys.argv[3:])
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--file", required=True, type=Path, help="random-content file, local path")
    ap.add_argument("--url", required=True, help="the same file as root:// URL")
    ap.add_argument("--root-file", required=True, type=Path, help="ROOT file for the analysis comparison")
    ap.add_argument("--tree", default="Events")
    ap.add_argument("--branch", default="Track_pt")
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    size = args.file.stat().st_size
    f, r = str(args.file), args.repeat
    results = []

    def ours_read(*extra: str, target: str = f) -> Callable[[], float]:
        return lambda: afkit_json("read", *extra, target)["gbps"]

    warm(args.file)
    results.append(
        compare(
            "read 8MiB seq, page cache vs fio",
            0.98,
            ours_read("--block", "8MiB"),
            lambda: fio_gbps(args.file, "read", "8m", False),
            r,
            "Gbit/s",
        )
    )
    results.append(
        compare(
            "read 1MiB random, page cache vs fio",
            0.98,
            ours_read("--block", "1MiB", "--stride", "random"),
            lambda: fio_gbps(args.file, "randread", "1m", False),
            r,
            "Gbit/s",
        )
    )
    results.append(
        compare(
            "read 1MiB stride 1MiB, page cache vs fio",
            0.98,
            ours_read("--block", "1MiB", "--stride", "1MiB"),
            lambda: fio_gbps(args.file, "read:1m", "1m", False, io_size=-(-size // (2 << 20)) * (1 << 20)),
            r,
            "Gbit/s",
        )
    )
    results.append(
        compare(
            "read 8MiB seq, cache dropped vs fio (invalidate)",
            0.98,
            ours_read("--block", "8MiB", "--drop-cache"),
            lambda: fio_gbps(args.file, "read", "8m", True),
            r,
            "Gbit/s",
        )
    )
    results.append(
        compare(
            "read 1MiB random, cache dropped vs fio (invalidate)",
            0.98,
            ours_read("--block", "1MiB", "--stride", "random", "--drop-cache"),
            lambda: fio_gbps(args.file, "randread", "1m", True),
            r,
            "Gbit/s",
        )
    )
    warm(args.file)
    results.append(
        compare(
            "read 8MiB root:// loopback vs bare XRootD bindings loop",
            0.98,
            ours_read("--block", "8MiB", target=args.url),
            lambda: fresh("xrootd", args.url, str(8 << 20)),
            r,
            "Gbit/s",
        )
    )
    results.append(
        compare(
            "read 8MiB root:// loopback vs xrdcp to /dev/null",
            None,
            ours_read("--block", "8MiB", target=args.url),
            lambda: xrdcp_gbps(args.url, size),
            r,
            "Gbit/s",
        )
    )
    results.append(
        compare(
            "analysis vs bare uproot.iterate (events/s)",
            0.97,
            lambda: afkit_json(
                "analysis", "-b", args.branch, "-t", args.tree, *[str(args.root_file)] * PASSES
            )["events_per_s"],
            lambda: fresh("uproot", str(args.root_file), args.tree, args.branch, "100 MB", str(PASSES)),
            r,
            "events/s",
        )
    )
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(json.dumps({"host_load_average": os.getloadavg(), "cpus": os.cpu_count()}))
    print(f"\nload average at the end: {load} on {os.cpu_count()} CPUs", file=sys.stderr)
    head = f"{'afkit':>10s} {'reference':>10s} {'ratio':>7s} {'median':>7s} goal"
    print(f"{'comparison (best of runs; median ratio, judged)':58s} {head}", file=sys.stderr)
    for rec in results:
        goal = "-" if rec["goal"] is None else f">={rec['goal']} {'ok' if rec['met'] else 'MISSED'}"
        nums = f"{rec['afkit']:10.3f} {rec['reference']:10.3f} {rec['ratio']:7.3f} {rec['median_ratio']:7.3f}"
        print(f"{rec['comparison']:58s} {nums} {goal}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
