"""What the kernel does for a directory's block device: read-ahead, I/O scheduler, mount options.

Recorded with every disk-server result (the Prague tuning paper's knobs) so a before/after
comparison shows what was changed.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TypedDict

SYS_DEV_BLOCK = Path("/sys/dev/block")
QUEUE_KEYS = ("read_ahead_kb", "scheduler", "rotational", "nr_requests", "max_sectors_kb")


class MountInfo(TypedDict, total=False):
    """The mount holding a path (empty when /proc/self/mountinfo names none)."""

    mount_point: str
    fstype: str
    source: str
    mount_options: str
    super_options: str


class QueueInfo(TypedDict, total=False):
    """The block queue settings (QUEUE_KEYS, as sysfs prints them; None: unreadable), or only
    ``device: None`` and a ``note`` for a file system without a block device."""

    device: str | None
    note: str
    read_ahead_kb: str | None
    scheduler: str | None
    rotational: str | None
    nr_requests: str | None
    max_sectors_kb: str | None


class DeviceInfo(QueueInfo, MountInfo, total=False):
    """``device`` of a disk summary: the queue settings and the mount."""


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def scheduler_name(text: str | None) -> str | None:
    """``"mq-deadline kyber [none]"`` → ``"none"``."""
    if not text:
        return text
    for word in text.split():
        if word.startswith("[") and word.endswith("]"):
            return word[1:-1]
    return text


def mount_of(path: Path, mountinfo: str | None = None) -> MountInfo:
    """The mount holding ``path``: mount point, filesystem type, source and options."""
    text = mountinfo if mountinfo is not None else Path("/proc/self/mountinfo").read_text()
    target = str(path.resolve())
    best: MountInfo = {}
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


def queue_path(path: Path, sys_block: Path = SYS_DEV_BLOCK) -> Path | None:
    """The sysfs queue directory of the device holding ``path`` (its parent disk's for a
    partition); None on a filesystem without a block device."""
    st = os.stat(path)
    dev = sys_block / f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    if not dev.exists():
        return None
    real = dev.resolve()
    queue = real / "queue"
    if not queue.is_dir() and (real.parent / "queue").is_dir():
        queue = real.parent / "queue"  # a partition: the disk's queue
    return queue


def queue_of(path: Path, sys_block: Path = SYS_DEV_BLOCK) -> QueueInfo:
    """Block queue settings of the device holding ``path`` (its parent disk for a partition)."""
    queue = queue_path(path, sys_block)
    if queue is None:
        return {"device": None, "note": "no block device (virtual or network filesystem)"}
    st = os.stat(path)
    real = (sys_block / f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}").resolve()
    return {  # QUEUE_KEYS in order
        "device": real.name,
        "read_ahead_kb": _read(queue / "read_ahead_kb"),
        "scheduler": scheduler_name(_read(queue / "scheduler")),
        "rotational": _read(queue / "rotational"),
        "nr_requests": _read(queue / "nr_requests"),
        "max_sectors_kb": _read(queue / "max_sectors_kb"),
    }


def describe(path: Path) -> DeviceInfo:
    return DeviceInfo(**queue_of(path), **mount_of(path))
