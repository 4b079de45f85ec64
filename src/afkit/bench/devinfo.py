"""What the kernel does for a directory's block device: read-ahead, I/O scheduler, mount options.

Recorded with every disk-server result (the Prague tuning paper's knobs) so a before/after
comparison shows what was changed.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

SYS_DEV_BLOCK = Path("/sys/dev/block")
QUEUE_KEYS = ("read_ahead_kb", "scheduler", "rotational", "nr_requests", "max_sectors_kb")


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _scheduler(text: str | None) -> str | None:
    """``"mq-deadline kyber [none]"`` → ``"none"``."""
    if not text:
        return text
    for word in text.split():
        if word.startswith("[") and word.endswith("]"):
            return word[1:-1]
    return text


def mount_of(path: Path, mountinfo: str | None = None) -> dict[str, Any]:
    """The mount holding ``path``: mount point, filesystem type, source and options."""
    text = mountinfo if mountinfo is not None else Path("/proc/self/mountinfo").read_text()
    target = str(path.resolve())
    best: dict[str, Any] = {}
    for line in text.splitlines():
        pre, _, post = line.partition(" - ")
        fields = pre.split()
        if len(fields) < 6 or not post:
            continue
        point = fields[4].replace("\\040", " ")
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best.get("mount_point", "")):
            fstype, source, *rest = post.split()
            best = {
                "mount_point": point,
                "fstype": fstype,
                "source": source,
                "mount_options": fields[5],
                "super_options": rest[0] if rest else "",
            }
    return best


def queue_of(path: Path, sys_block: Path = SYS_DEV_BLOCK) -> dict[str, Any]:
    """Block queue settings of the device holding ``path`` (its parent disk for a partition)."""
    st = os.stat(path)
    dev = sys_block / f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    if not dev.exists():
        return {"device": None, "note": "no block device (virtual or network filesystem)"}
    real = dev.resolve()
    queue = real / "queue"
    if not queue.is_dir() and (real.parent / "queue").is_dir():
        queue = real.parent / "queue"  # a partition: the disk's queue
    info: dict[str, Any] = {"device": real.name}
    for key in QUEUE_KEYS:
        value = _read(queue / key)
        info[key] = _scheduler(value) if key == "scheduler" else value
    return info


def describe(path: Path) -> dict[str, Any]:
    return {**queue_of(path), **mount_of(path)}
