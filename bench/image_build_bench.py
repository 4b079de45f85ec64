"""Helper of bench/image.sh --build, run inside the testbed: whole apptainer builds of the adjacent
daily, cold (fresh working directory) vs incremental (the store of the previous tag)."""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

TAG_A = "AliPhysics/vAN-20250401_ROOT6-1"
TAG_B = "AliPhysics/vAN-20250402_ROOT6-1"
TOOLS = ("bash", "sh", "env", "printenv", "cat", "ls", "true", "dirname", "pwd", "test")


def make_base(dest: Path) -> Path:
    """A minimal sandbox base: TOOLS and the libraries they need (no registry needed)."""
    for sub in ("usr/bin", "etc", "tmp", "proc", "sys", "dev", "root", "cvmfs"):
        (dest / sub).mkdir(parents=True, exist_ok=True)
    (dest / "bin").symlink_to("usr/bin")
    libs: set[str] = set()
    for tool in TOOLS:
        found = shutil.which(tool)
        if found:
            shutil.copy2(os.path.realpath(found), dest / "usr/bin" / tool)
            out = subprocess.run(["ldd", found], capture_output=True, text=True, check=False).stdout
            libs.update(re.findall(r"(/\S+) \(0x", out))
    for lib in libs:
        target = dest / lib.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(os.path.realpath(lib), target)
    return dest


def build(tag: str, work: Path, base: Path) -> tuple[float, dict[str, object]]:
    cmd = [sys.executable, "-m", "afkit", "image", "build", "--profile", "alice", "-t", tag, "-o", str(work)]
    cmd += ["-y", "--no-validate", "--base", f"localimage:{base}"]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"build of {tag} failed:\n{proc.stderr[-2000:]}")
    sif = Path(proc.stdout.strip().splitlines()[-1])
    stage: dict[str, object] = json.loads(sif.with_suffix(".json").read_text())["stage"]
    return seconds, stage


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--work", type=Path, required=True, help="scratch directory (created)")
    args = parser.parse_args()
    base = make_base(args.work / "base")
    t_cold_b, _ = build(TAG_B, args.work / "cold", base)
    build(TAG_A, args.work / "inc", base)
    t_inc_b, stage = build(TAG_B, args.work / "inc", base)
    print(
        f"whole build of {TAG_B} (apptainer, --no-validate): incremental / cold = {t_inc_b / t_cold_b:.3f} "
        f"({t_inc_b:.1f} s vs {t_cold_b:.1f} s; copied {stage['copied_bytes'] / (1 << 20):.1f} MiB, "
        f"reused {stage['reused_bytes'] / (1 << 20):.1f} MiB)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
