"""Helper of bench/image.sh --scale, run inside the testbed with the scale fixture at /cvmfs:
the image build at real scale against the physical limit, measured in the same run.

Per round (the cases interleaved, medians over --runs):
  cp -a      of the closure of TAG_A (every unit, as the reference copy)
  mksquashfs of that copy with the options Apptainer's SIF assembler uses (-noappend -comp gzip)
  staging    afkit's staging of the same closure into a fresh store
  cold       afkit image build --layers of TAG_A in a fresh directory (staging + image)
  daily      afkit image build --layers of TAG_B in that directory afterwards (the adjacent daily)
Each round works in its own directory; the cases creating files run first, then the trees of
the round before are removed and the reference compressed; on ext4 without a journal the next
round waits until those inodes settle (class Trees).
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


def journal_less_ext4(path: Path) -> bool:
    """PATH is on ext4 without a journal (its device has no /proc/fs/jbd2 entry)."""
    best = ("", "", "")
    where = str(path.resolve())
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        point, rest = fields[4], fields[fields.index("-") + 1 :]
        inside = where.startswith(point.rstrip("/") + "/") or point == "/"
        if inside and len(point) >= len(best[0]):
            best = (point, rest[0], rest[1])
    _point, fstype, source = best
    return fstype == "ext4" and not Path(f"/proc/fs/jbd2/{Path(source).name}-8").exists()


class Trees:
    """Removal of the trees of tens of thousands of files the cases leave, timed so that no case
    creates files within SETTLE_S of a removal. On ext4 without a journal (this development
    machine's disk) the inode allocator skips every inode deleted in the last 60 s (360 s while
    its inode-table block is dirty) and scans past each one (linux fs/ext4/ialloc.c:
    find_inode_bit, recently_deleted; checked only when s_journal is NULL): creating the
    closure's files after deleting a closure took 18 s instead of 2 s (`cp -a`), which made the
    reference swing 9-34 s. Journaled ext4 and XFS, what build hosts run, have no such wait."""

    SETTLE_S = 370.0

    def __init__(self, work: Path) -> None:
        self.needed = journal_less_ext4(work)
        self.removed_at: float | None = None

    def remove(self, *trees: Path) -> None:
        for tree in trees:
            if tree.exists():
                shutil.rmtree(tree)
                self.removed()
        os.sync()

    def removed(self) -> None:
        """Something removed a tree just now."""
        self.removed_at = time.monotonic()

    def settle(self) -> None:
        """Wait until inodes removed last are allocated again without a scan."""
        if not self.needed or self.removed_at is None:
            return
        wait = self.removed_at + self.SETTLE_S - time.monotonic()
        if wait > 0:
            print(f"waiting {wait:.0f} s after removing trees (ext4 without a journal)", flush=True)
            time.sleep(wait)


def one_round(
    res: Resolution, src: Path, work: Path, base: Path, trees: Trees, earlier: Path | None
) -> dict[str, float]:
    """One round in WORK. Every case that creates the closure's files runs first; then the
    round before's trees (EARLIER) are removed and the reference compressed, which creates no
    files; the next round waits for what is left of the settling time. The daily build removes
    the cold build's tree itself (an earlier build in its directory): that removal settles there too."""
    times: dict[str, float] = {}
    work.mkdir(parents=True)
    trees.settle()
    times["cp_a"] = _timed(cp_a, res, src, work / "cp")
    times["staging"] = _timed(staging, res, src, work / "stage")
    times["cold"] = _timed(build, TAG_A, work / "build", base)
    times["daily"] = _timed(build, TAG_B, work / "build", base)
    trees.removed()
    for big in (work / "build").glob("*.sif"):
        big.unlink()  # one file each: no inodes to wait for, and the disk space back
    if earlier is not None:
        trees.remove(earlier)
    times["mksquashfs"] = _timed(squash, work / "cp", work / "ref.sqfs")
    (work / "ref.sqfs").unlink()
    return times


def round_args(doc: str | None) -> argparse.Namespace:
    """The options of a benchmark in rounds (this one, image_realroot.py): --work, --runs, --json."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, required=True, help="scratch directory (emptied)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", type=Path)
    return parser.parse_args()


def main() -> int:
    args = round_args(__doc__)
    src = profile.repo_root(profile.load("alice"))
    res = _resolve(TAG_A)
    st_plan = stage.walk(src, res.units, f"/cvmfs/{src.name}")
    size, files = st_plan.total_bytes, len(st_plan.files)
    links = len(st_plan.links)
    print(f"scale: closure of {TAG_A}: {size / GIB:.2f} GiB in {files} files, {links} symlinks", flush=True)
    base = make_base(args.work / "base")
    trees = Trees(args.work)
    trees.remove(*args.work.glob("round*"))  # an earlier invocation's
    rounds = []
    earlier = None
    for i in range(args.runs):
        work = args.work / f"round{i + 1}"
        rounds.append(one_round(res, src, work, base, trees, earlier))
        print(f"round {i + 1}: " + ", ".join(f"{k} {v:.1f} s" for k, v in rounds[-1].items()), flush=True)
        earlier = work
    if earlier is not None:
        trees.remove(earlier)
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
