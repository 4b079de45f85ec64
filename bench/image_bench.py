"""Helper of bench/image.sh: staging of the image builder, timed against cp -a (see --help)."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from afkit.image import plan, profile, resolve, stage, tags
from afkit.image.model import Resolution
from afkit.image.store import Store

TAG_A = "AliPhysics/vAN-20250401_ROOT6-1"
TAG_B = "AliPhysics/vAN-20250402_ROOT6-1"


def _resolve(text: str) -> Resolution:
    prof = profile.load("alice")
    return resolve.resolve(prof, tags.parse(text, prof), profile.repo_root(prof))


def _stage(res: Resolution, src: Path, dest: Path, store_dir: Path) -> stage.Stats:
    st_plan = stage.walk(src, res.units, "/cvmfs/alice.cern.ch")
    return stage.execute(st_plan, dest / "cvmfs" / "alice.cern.ch", Store(store_dir), quiet=True)


def _cp_a(res: Resolution, src: Path, dest: Path) -> None:
    """The reference: cp -a of every closure unit to the same relative place."""
    for unit in res.units:
        target = dest / unit.rel
        target.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["cp", "-a", str(src / unit.rel), str(target)], check=True)


def _time_once(setup: Callable[[Path], object], body: Callable[[Path], object]) -> float:
    with tempfile.TemporaryDirectory(dir=os.environ.get("AFKIT_BENCH_TMP")) as tmp:
        scratch = Path(tmp)
        setup(scratch)
        start = time.perf_counter()
        body(scratch)
        return time.perf_counter() - start


def _interleaved(
    runs: int, cases: dict[str, tuple[Callable[[Path], object], Callable[[Path], object]]]
) -> dict[str, float]:
    """Median time of each case; the cases alternate within every round (load drift hits all)."""
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(runs):
        for name, (setup, body) in cases.items():
            times[name].append(_time_once(setup, body))
    return {name: statistics.median(values) for name, values in times.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    src = profile.repo_root(profile.load("alice"))
    res_a, res_b = _resolve(TAG_A), _resolve(TAG_B)
    closure = sum(plan.unit_bytes(src / u.rel) for u in res_a.units)
    packages = plan.unit_bytes(src / res_a.arch / "Packages")

    def nothing(_s: Path) -> None:
        return None

    med = _interleaved(
        args.runs,
        {
            "cp": (nothing, lambda s: _cp_a(res_a, src, s / "cp")),
            "cold": (nothing, lambda s: _stage(res_a, src, s / "r", s / ".data")),
            "cold_b": (nothing, lambda s: _stage(res_b, src, s / "r", s / ".data")),
            "inc_b": (
                lambda s: _stage(res_a, src, s / "a", s / ".data"),
                lambda s: _stage(res_b, src, s / "b", s / ".data"),
            ),
        },
    )
    t_cp, t_cold, t_cold_b, t_inc_b = med["cp"], med["cold"], med["cold_b"], med["inc_b"]
    with tempfile.TemporaryDirectory(dir=os.environ.get("AFKIT_BENCH_TMP")) as tmp:
        _stage(res_a, src, Path(tmp) / "a", Path(tmp) / ".data")
        inc = _stage(res_b, src, Path(tmp) / "b", Path(tmp) / ".data")
    mib = closure / (1 << 20)
    results = {
        "closure_bytes": closure,
        "packages_bytes": packages,
        "closure_over_packages": closure / packages,
        "cp_a_seconds": t_cp,
        "stage_cold_seconds": t_cold,
        "stage_cold_b_seconds": t_cold_b,
        "stage_incremental_b_seconds": t_inc_b,
        "incremental_copied_bytes": inc.copied_bytes,
        "incremental_reused_bytes": inc.reused_bytes,
        "runs": args.runs,
    }
    print(f"closure of {TAG_A}: {mib:.1f} MiB = {closure / packages:.3f} x the {res_a.arch}/Packages tree")
    print(
        f"staging cold vs cp -a of the same closure: {t_cold / t_cp:.2f} x the time of cp -a "
        f"({mib / t_cold:.0f} vs {mib / t_cp:.0f} MiB/s; afkit also hashes into the store)"
    )
    print(
        f"adjacent tag {TAG_B}: incremental / cold staging time = {t_inc_b / t_cold_b:.3f}; "
        f"copied {inc.copied_bytes / (1 << 20):.1f} MiB, reused {inc.reused_bytes / (1 << 20):.1f} MiB"
    )
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
