"""Disk-server tests (after the Prague tuning paper): sequential write and read, random read and
the ROOT-like small-read pattern on a target directory, with the device settings recorded.

The test file is created by afkit under a unique name and removed afterwards. Before each read
test the file's pages are dropped from the page cache with ``posix_fadvise(DONTNEED)`` (works
without privileges for clean pages), so reads come from the device.
"""

from __future__ import annotations

import os
import random
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import NotRequired, TypedDict

from afkit.bench.devinfo import DeviceInfo, describe
from afkit.bench.intervals import IntervalCounter
from afkit.bench.offsets import BlockPlan, ReplayPlan, RootLikePlan
from afkit.bench.readbench import Plan, ReadConfig, run_read
from afkit.bench.records import JsonlWriter, JsonObject
from afkit.bench.trace import load_trace
from afkit.bench.units import gbit_per_s
from afkit.errors import NotFoundError, PrereqError, UsageError

TESTS = ("seqwrite", "seqread", "randread", "replay")


@dataclass
class DiskConfig:
    target: Path
    size: int
    block: int = 1 << 20
    rand_block: int = 64 << 10
    tests: tuple[str, ...] = TESTS
    duration: float | None = None
    trace: Path | None = None
    label: str = ""
    keep: bool = False


class DiskResult(TypedDict):
    """One test of a disk summary's ``results``."""

    test: str
    bytes: int
    ops: NotRequired[int]  # the read tests' keys up to status
    seconds: float
    gbps: float
    iops: NotRequired[float]
    cache_dropped: NotRequired[bool]
    status: NotRequired[str]
    block: NotRequired[int]  # seqwrite


class DiskSummary(TypedDict):
    """The summary record of ``afkit bench disk`` (``"kind": "disk"``)."""

    type: str
    kind: str
    status: str
    label: str
    target: str
    size: int
    results: list[DiskResult]
    device: DeviceInfo


class DiskRatio(TypedDict):
    test: str
    before_gbps: float
    after_gbps: float
    ratio: float | None


class Comparison(TypedDict):
    """``afkit bench disk-compare``'s JSON line."""

    type: str
    before: str  # the labels
    after: str
    tests: list[DiskRatio]
    changed_settings: dict[str, list[object]]  # device setting -> [before, after]


def drop_cache(path: Path) -> bool:
    """Evict ``path``'s pages from the page cache; False when the kernel cannot."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def _seq_write(path: Path, cfg: DiskConfig, writer: JsonlWriter) -> DiskResult:
    buf = random.Random(1).randbytes(cfg.block)  # incompressible, the same every run (no numpy to import)
    counter = IntervalCounter(lambda rec: writer.write({**rec, "test": "seqwrite"}))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        counter.begin(time.time())
        left = cfg.size
        while left > 0:
            n = os.write(fd, buf[: min(cfg.block, left)])
            left -= n
            counter.add(time.time(), n)
        os.fsync(fd)  # the data is on the device before the clock stops
        counter.add(time.time(), 0, 0)
    finally:
        os.close(fd)
    counter.finish(time.time())
    return {
        "test": "seqwrite",
        "bytes": counter.total_bytes,
        "seconds": round(counter.seconds, 6),
        "gbps": round(gbit_per_s(counter.total_bytes, counter.seconds), 6),
        "block": cfg.block,
    }


def _read_test(name: str, path: Path, plan: Plan, cfg: DiskConfig, writer: JsonlWriter) -> DiskResult:
    dropped = drop_cache(path)
    tagged = _Tagged(writer, name)
    rc = ReadConfig([str(path)], plan, duration=cfg.duration)
    summary = run_read(rc, tagged)  # type: ignore[arg-type]
    return {
        "test": name,
        "bytes": summary["bytes"],
        "ops": summary["ops"],
        "seconds": summary["seconds"],
        "gbps": summary["gbps"],
        "iops": round(summary["ops"] / summary["seconds"], 1) if summary["seconds"] else 0.0,
        "cache_dropped": dropped,
        "status": summary["status"],
    }


class _Tagged:
    """A writer that adds ``test`` to every record."""

    def __init__(self, writer: JsonlWriter, test: str) -> None:
        self._writer, self._test = writer, test

    def write(self, record: Mapping[str, object]) -> None:
        self._writer.write({**record, "test": self._test})


def run_disk(cfg: DiskConfig, writer: JsonlWriter) -> DiskSummary:
    if not cfg.target.is_dir():
        raise NotFoundError(f"target directory '{cfg.target}' does not exist")
    if not os.access(cfg.target, os.W_OK):
        raise PrereqError(f"cannot write in '{cfg.target}'", hint="run as a user who may write there")
    unknown = [t for t in cfg.tests if t not in TESTS]
    if unknown:
        raise UsageError(f"unknown disk test(s) {', '.join(unknown)}", hint=f"tests: {', '.join(TESTS)}")
    free = os.statvfs(cfg.target)
    if free.f_bavail * free.f_frsize < cfg.size * 1.1:
        raise PrereqError(f"not enough free space in '{cfg.target}' for a {cfg.size}-byte test file")
    trace_plan = None
    if "replay" in cfg.tests and cfg.trace is not None:
        trace_plan = ReplayPlan(tuple((e.offset, e.length) for e in load_trace(cfg.trace)))
    path = cfg.target / f".afkit-disk-{os.getpid()}-{int(time.time())}.bin"
    results: list[DiskResult] = []
    try:
        results.append(_seq_write(path, cfg, writer))
        if "seqread" in cfg.tests:
            results.append(_read_test("seqread", path, BlockPlan(block=cfg.block), cfg, writer))
        if "randread" in cfg.tests:
            plan = BlockPlan(block=cfg.rand_block, stride=None, seed=1)
            results.append(_read_test("randread", path, plan, cfg, writer))
        if "replay" in cfg.tests:
            plan_r: Plan = trace_plan if trace_plan is not None else RootLikePlan()
            results.append(_read_test("replay", path, plan_r, cfg, writer))
    finally:
        if not cfg.keep:
            path.unlink(missing_ok=True)
    if "seqwrite" not in cfg.tests:
        results = [r for r in results if r["test"] != "seqwrite"]
    for rec in results:
        print(f"afkit bench disk: {rec['test']:9s} {rec['gbps']:8.3f} Gbit/s", file=sys.stderr)
    return {
        "type": "summary",
        "kind": "disk",
        "status": "ok" if all(r.get("status", "ok") == "ok" for r in results) else "failed",
        "label": cfg.label,
        "target": str(cfg.target),
        "size": cfg.size,
        "results": results,
        "device": describe(cfg.target),
    }


def compare(before: JsonObject, after: JsonObject) -> Comparison:
    """Per-test ratio after/before and the device settings that differ."""
    b = {r["test"]: r for r in before.get("results", [])}
    a = {r["test"]: r for r in after.get("results", [])}
    tests: list[DiskRatio] = []
    for name in [t for t in TESTS if t in a and t in b]:
        gb, ga = float(b[name]["gbps"]), float(a[name]["gbps"])
        tests.append(
            {"test": name, "before_gbps": gb, "after_gbps": ga, "ratio": round(ga / gb, 4) if gb else None}
        )
    dev_b, dev_a = before.get("device", {}), after.get("device", {})
    changed = {
        k: [dev_b.get(k), dev_a.get(k)]
        for k in sorted(set(dev_a) | set(dev_b))
        if dev_b.get(k) != dev_a.get(k)
    }
    return {
        "type": "comparison",
        "before": before.get("label", ""),
        "after": after.get("label", ""),
        "tests": tests,
        "changed_settings": changed,
    }


def summary_of(records: list[JsonObject], path: Path) -> JsonObject:
    from afkit.errors import InvalidError

    for rec in reversed(records):
        if rec.get("type") == "summary" and rec.get("kind") == "disk":
            return rec
    raise InvalidError(f"'{path}' holds no 'afkit bench disk' summary")
