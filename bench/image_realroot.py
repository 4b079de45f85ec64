"""Helper of bench/image.sh --real-root, run inside the testbed with the CVMFS fixture at /cvmfs:
the image of a tag with the real ROOT (6.40.00, ~750 MiB of closure, docs/cvmfs-fixture.md) against
the physical limit, measured in the same run.

Per round (medians over --runs):
  cp -a      of the closure of TAG (every unit, as the reference copy)
  mksquashfs of that copy with Apptainer's options (-noappend -comp gzip)
  build      afkit image build of TAG in a fresh directory (resolve, staging, apptainer build with
             its own mksquashfs; no validation: the proofs are the validation's cost, not the build's)
Goal: build / (cp -a + mksquashfs) <= 2.
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

from image_build_bench import make_base
from image_scale import _resolve, _timed, cp_a, round_args, squash

TAG = "AliPhysics/vAN-20251126_ROOT6-1"
GOAL = 2.0


def build(work: Path, base: Path) -> None:
    cmd = [sys.executable, "-m", "afkit", "image", "build", "--profile", "alice", "-t", TAG, "-o", str(work)]
    proc = subprocess.run([*cmd, "-y", "--no-validate", "--base", f"localimage:{base}"],
                          capture_output=True, text=True, check=False)  # fmt: skip
    if proc.returncode != 0:
        sys.exit(f"build of {TAG} failed:\n{proc.stderr[-3000:]}")


def main() -> int:
    args = round_args(__doc__)
    res = _resolve(TAG)
    src = Path("/cvmfs/alice.cern.ch")
    base = make_base(args.work / "base")
    rounds = []
    for i in range(args.runs):
        work = args.work / f"round{i + 1}"
        work.mkdir(parents=True)
        times = {"cp_a": _timed(cp_a, res, src, work / "cp")}
        times["build"] = _timed(build, work / "build", base)
        times["mksquashfs"] = _timed(squash, work / "cp", work / "ref.sqfs")
        shutil.rmtree(work)
        rounds.append(times)
        print(f"round {i + 1}: " + ", ".join(f"{k} {v:.1f} s" for k, v in times.items()), flush=True)
    med = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
    ratio = med["build"] / (med["cp_a"] + med["mksquashfs"])
    print(f"medians of {args.runs} rounds: " + ", ".join(f"{k} {v:.1f} s" for k, v in med.items()))
    print(f"real ROOT image build / (cp -a + mksquashfs): {ratio:.2f} (goal <= {GOAL})")
    if args.json:
        data = {"tag": TAG, "rounds": rounds, "medians": med, "ratio": ratio}
        args.json.write_text(json.dumps(data, indent=1) + "\n")
    shutil.rmtree(args.work / "base", ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
