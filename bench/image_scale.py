"""Helper of bench/image.sh --scale, run inside the testbed with the scale fixture at /cvmfs:
the image build at real scale against the physical limit, measured in the same run.

Per round (the cases interleaved, medians over --runs):
  cp -a      of the closure of TAG_A (every unit, as the reference copy)
  mksquashfs of that copy with the options Apptainer's SIF assembler uses (-noappend -comp gzip)
  staging    afkit's staging of the same closure into a fresh store
  cold       afkit image build --layers of TAG_A in a fresh directory (staging + image)
  daily      afkit image build --layers of TAG_B in that directory afterwards (the adjacent daily)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from image_build_bench import make_base

from afkit.image import profile, resolve, stage, tags
from afkit.image.model import Resolution
from afkit.image.store import Store

TAG_A = "AliPhysics/vAN-20250402_ROOT6-1"
TAG_B = "AliPhysics/vAN-20250403_ROOT6-1"
SQUASH = ["-noappend", "-comp", "gzip", "-no-progress", "-quiet"]
GIB = 1 << 30


def _resolve(text: str) -> Resolution:
    prof = profile.load("alice")
    return resolve.resolve(prof, tags.parse(text, prof), profile.repo_root(prof))


def _timed(fn: object, *args: object) -> float:
    """Seconds FN(*ARGS) takes, after flushing dirty pages (no case pays an earlier one's writeback)."""
    os.sync()
    start = time.perf_counter()
    fn(*args)  # type: ignore[operator]
    return time.perf_counter() - start


def cp_a(res: Resolution, src: Path, dest: Path) -> None:
    for unit in res.units:
        target = dest / unit.rel
        target.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["cp", "-a", str(src / unit.rel), str(target)], check=True)


def squash(tree: Path, out: Path) -> None:
    subprocess.run(["mksquashfs", str(tree), str(out), *SQUASH], check=True, stdout=subprocess.DEVNULL)


def staging(res: Resolution, src: Path, work: Path) -> None:
    st_plan = stage.walk(src, res.units, f"/cvmfs/{src.name}")
    stage.execute(st_plan, work / "rootfs" / "cvmfs" / src.name, Store(work / ".data"), quiet=True)


def build(tag: str, work: Path, base: Path) -> dict[str, object]:
    cmd = [sys.executable, "-m", "afkit", "image", "build", "--profile", "alice", "-t", tag, "-o", str(work)]
    cmd += ["-y", "--no-validate", "--layers", "--base", f"localimage:{base}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        sys.exit(f"build of {tag} failed:\n{proc.stderr[-3000:]}")
    sif = Path(proc.stdout.strip().splitlines()[-1])
    manifest: dict[str, object] = json.loads(sif.with_suffix(".json").read_text())
    return manifest


def one_round(res: Resolution, src: Path, work: Path, base: Path) -> dict[str, float]:
    times: dict[str, float] = {}
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    times["cp_a"] = _timed(cp_a, res, src, work / "cp")
    times["staging"] = _timed(staging, res, src, work / "stage")
    shutil.rmtree(work / "stage")
    times["mksquashfs"] = _timed(squash, work / "cp", work / "ref.sqfs")
    shutil.rmtree(work / "cp")
    (work / "ref.sqfs").unlink()
    times["cold"] = _timed(build, TAG_A, work / "build", base)
    times["daily"] = _timed(build, TAG_B, work / "build", base)
    shutil.rmtree(work / "build")
    return times


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--work", type=Path, required=True, help="scratch directory (emptied)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    src = profile.repo_root(profile.load("alice"))
    res = _resolve(TAG_A)
    st_plan = stage.walk(src, res.units, f"/cvmfs/{src.name}")
    size, files = st_plan.total_bytes, len(st_plan.files)
    links = len(st_plan.links)
    print(f"scale: closure of {TAG_A}: {size / GIB:.2f} GiB in {files} files, {links} symlinks", flush=True)
    base = make_base(args.work / "base")
    rounds = []
    for i in range(args.runs):
        rounds.append(one_round(res, src, args.work / "round", base))
        print(f"round {i + 1}: " + ", ".join(f"{k} {v:.1f} s" for k, v in rounds[-1].items()), flush=True)
    med = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
    ratios = {
        "staging / cp -a": med["staging"] / med["cp_a"],
        "whole build / (cp -a + mksquashfs)": med["cold"] / (med["cp_a"] + med["mksquashfs"]),
        "adjacent daily incremental / cold": med["daily"] / med["cold"],
    }
    goals = {"staging / cp -a": 1.0, "whole build / (cp -a + mksquashfs)": 1.3}
    goals["adjacent daily incremental / cold"] = 0.3
    print(f"medians of {args.runs} rounds: " + ", ".join(f"{k} {v:.1f} s" for k, v in med.items()))
    for name, value in ratios.items():
        print(f"{name}: {value:.2f} (goal <= {goals[name]})")
    if args.json:
        data = {"bytes": size, "files": files, "rounds": rounds, "medians": med, "ratios": ratios}
        args.json.write_text(json.dumps(data, indent=1) + "\n")
    shutil.rmtree(args.work / "base", ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
