"""The machine a study ran on, for its page: cores, memory, kernel, the block device's read-ahead and
I/O scheduler where the records lie, and the load during the run.

A study's numbers depend on the machine (a 2-core VM's load decides what a "server" can send), so
its page says which it was. ``watch(PATH)`` writes ``PATH`` (``machine.json``) as the run starts
and again as it ends, with the one-minute load average sampled every ``every`` seconds between
(psutil.getloadavg); an interrupted run keeps what was sampled until then. At a user's sites the
machine is the one ``afkit study run`` ran on (the submit host), not the worker nodes.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import statistics
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from afkit.atomic import write_atomic
from afkit.bench import devinfo

NAME = "machine.json"


def describe(where: Path) -> dict[str, object]:
    """What the machine is: host, cores, memory, kernel, and WHERE's block device settings."""
    dev = devinfo.describe(where) if where.exists() else {}
    return {
        "host": platform.node(),
        "cores": os.cpu_count() or 0,
        "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "kernel": platform.release(),
        "device": {k: dev.get(k) for k in ("device", "read_ahead_kb", "scheduler") if k in dev},
    }


def load_summary(samples: list[float]) -> dict[str, object]:
    """The load samples' count, median and maximum (empty: none taken)."""
    if not samples:
        return {"samples": 0}
    return {
        "samples": len(samples),
        "median": round(statistics.median(samples), 2),
        "max": round(max(samples), 2),
    }


def _write(path: Path, facts: dict[str, object], samples: list[float], ended: str) -> None:
    body = {**facts, "load1": load_summary(samples), "run": ended}
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(body, indent=2, default=str) + "\n", mode=0o644)


@dataclass
class Watch:
    """A run being watched: its load samples so far, and how it ended (set ``ended`` to
    "interrupted" when the run's own child reported the interrupt, as a study's campaign does)."""

    samples: list[float] = field(default_factory=list)
    ended: str = "ended"


@contextlib.contextmanager
def watch(path: Path, where: Path, every: float = 5.0) -> Iterator[Watch]:
    """Write PATH as the run starts ("running") and ends ("ended", or "interrupted" for an
    interrupt raised here or set on the yielded Watch), sampling the load every EVERY seconds in
    between."""
    facts = describe(where)
    run = Watch([psutil.getloadavg()[0]])
    samples = run.samples
    _write(path, facts, samples, "running")
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(every):
            samples.append(psutil.getloadavg()[0])

    thread = threading.Thread(target=sample, name="afkit-load", daemon=True)
    thread.start()
    ended = "interrupted"
    try:
        yield run
        ended = run.ended
    finally:
        stop.set()
        thread.join(timeout=every + 1)
        samples.append(psutil.getloadavg()[0])
        with contextlib.suppress(OSError):
            _write(path, facts, samples, ended)


def read(path: Path) -> dict[str, object]:
    """PATH's facts, or {} when the run wrote none (a run before afkit recorded its machine)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def shown(facts: dict[str, object]) -> str:
    """One line for the page: "host: 2 cores, 23.4 GiB, kernel 6.18; loop0: read-ahead 128 KiB,
    mq-deadline; load during the run: median 3.1, max 8.9 (12 samples)"."""
    if not facts:
        return "not recorded"
    text = (
        f"{facts.get('host')}: {facts.get('cores')} cores, {facts.get('memory_gib')} GiB, "
        f"kernel {facts.get('kernel')}"
    )
    dev = facts.get("device")
    if isinstance(dev, dict) and dev:
        text += (
            f"; {dev.get('device') or 'its disk'} (results): read-ahead {dev.get('read_ahead_kb')} KiB, "
            f"scheduler {dev.get('scheduler')}"
        )
    load = facts.get("load1")
    if isinstance(load, dict) and load.get("samples"):
        text += (
            f"; load during the run: median {load.get('median')}, max {load.get('max')} "
            f"({load.get('samples')} samples)"
        )
    if facts.get("run") not in (None, "ended"):
        text += f" (the run {facts.get('run')})"
    return text
