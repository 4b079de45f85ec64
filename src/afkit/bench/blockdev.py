"""A disk server's block device as the disk-server study tunes it: its queue's read-ahead and I/O
scheduler set (and set back), how much of a file the page cache holds, and, where no spare device
exists (the box), a loop device over a file with a filesystem on it.

The settings are the kernel's sysfs files ``/sys/block/DEV/queue/read_ahead_kb`` and
``.../scheduler`` (Documentation/ABI/stable/sysfs-block: writing a scheduler's name selects it;
reading lists those offered with the selected one in brackets), read back after each write, so a
setting the kernel did not take is recorded as what it is. The loop device reads its backing file
with direct I/O (``losetup --direct-io=on``), so the host's page cache and read-ahead for that file
do not stand between the device's settings and the disk.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import mmap
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from afkit.bench import devinfo
from afkit.errors import AfkitError, PrereqError, UsageError


@dataclass(frozen=True)
class QueueSettings:
    read_ahead_kb: int
    scheduler: str  # the selected one ("none" on a queue without a scheduler)


def queue_dir(path: Path) -> Path:
    """The sysfs queue directory of the block device holding PATH (its disk's, for a partition)."""
    queue = devinfo.queue_path(path)
    if queue is None or not queue.is_dir():
        raise PrereqError(
            f"{path} is on no block device (a virtual or network filesystem)",
            hint="give a directory on the disk server's own filesystem",
        )
    return queue


def schedulers(queue: Path) -> list[str]:
    """The I/O schedulers the kernel offers for QUEUE ("[none] mq-deadline bfq" → all three)."""
    return [w.strip("[]") for w in (queue / "scheduler").read_text().split()]


def read(queue: Path) -> QueueSettings:
    text = (queue / "scheduler").read_text()
    return QueueSettings(int((queue / "read_ahead_kb").read_text()), devinfo.scheduler_name(text) or "none")


def apply(queue: Path, want: QueueSettings) -> QueueSettings:
    """Set QUEUE's read-ahead and scheduler to WANT; return what the kernel reports afterwards
    (PrereqError when the scheduler is not offered here or the kernel refuses)."""
    offered = schedulers(queue)
    if want.scheduler not in offered:
        raise PrereqError(
            f"I/O scheduler {want.scheduler!r} is not offered for {queue.parent.name}",
            hint=f"this kernel offers: {', '.join(offered)}",
        )
    try:
        (queue / "scheduler").write_text(want.scheduler)
        (queue / "read_ahead_kb").write_text(str(want.read_ahead_kb))
    except OSError as err:
        raise PrereqError(
            f"cannot set {queue.parent.name}'s queue: {err.strerror or err}",
            hint="run as root, on a host whose /sys is writable",
        ) from err
    return read(queue)


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    c_int = ctypes.c_int
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, c_int, c_int, c_int, ctypes.c_long]
    libc.mmap.restype = ctypes.c_void_p
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    return libc


def resident_bytes(path: Path) -> int:
    """How many bytes of PATH the page cache holds now: mincore(2) over a read-only mapping of the
    file (mapping it reads nothing)."""
    size = path.stat().st_size
    if size == 0:
        return 0
    libc, page = _libc(), mmap.PAGESIZE
    pages = (size + page - 1) // page
    vec = (ctypes.c_ubyte * pages)()
    fd = os.open(path, os.O_RDONLY)
    try:
        addr = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if addr in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), f"mmap of {path} failed")
        try:
            if libc.mincore(addr, size, vec) != 0:
                raise OSError(ctypes.get_errno(), f"mincore of {path} failed")
        finally:
            libc.munmap(addr, size)
    finally:
        os.close(fd)
    return min(size, sum(v & 1 for v in vec) * page)


def _need(tool: str, package: str) -> str:
    found = shutil.which(tool) or next(
        (str(p) for p in (Path("/usr/sbin") / tool, Path("/sbin") / tool) if p.exists()), None
    )
    if found is None:
        raise PrereqError(f"{tool} not found", hint=f"install it: apt-get install {package}")
    return found


def _run(cmd: list[str], what: str) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise AfkitError(f"{what} failed: {(proc.stderr or proc.stdout).strip()[-300:]}", hint=" ".join(cmd))
    return proc.stdout.strip()


@contextlib.contextmanager
def loop_filesystem(backing: Path, size: int, mount: Path) -> Iterator[str]:
    """An ext4 filesystem on a new loop device over BACKING (a new SIZE-byte file), mounted at MOUNT
    (a new directory); yields the loop device's name (loop3). Afterwards everything it made is
    taken away again: the mount, the loop device, the directory and the file."""
    mkfs, losetup = _need("mkfs.ext4", "e2fsprogs"), _need("losetup", "mount")
    mount_cmd, umount = _need("mount", "mount"), _need("umount", "mount")
    if os.geteuid() != 0:
        raise PrereqError("a loop device needs root", hint="run the study as root (sudo)")
    mark = backing.with_name(backing.name + ".afkit")
    if mark.exists():  # what a killed run left: it is afkit's, take it away first
        _take_away(backing, mount, losetup, umount)
    for made in (backing, mount):
        if made.exists():
            raise UsageError(
                f"{made} exists and afkit did not make it", hint="move it away or choose another --workdir"
            )
    made_parent = not backing.parent.exists()
    backing.parent.mkdir(parents=True, exist_ok=True)
    mark.write_text("made by afkit's disk-server study: the loop device's backing file beside it\n")
    with backing.open("wb") as fh:
        fh.truncate(size)
    device = ""
    try:
        _run([mkfs, "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", str(backing)], "mkfs.ext4")
        device = _run([losetup, "--find", "--show", "--direct-io=on", str(backing)], "losetup")
        mount.mkdir()
        _run([mount_cmd, "-o", "noatime", device, str(mount)], "mount")
        try:
            yield Path(device).name
        finally:
            _run([umount, str(mount)], "umount")
    finally:
        if device:
            subprocess.run([losetup, "-d", device], capture_output=True, check=False)
        _take_away(backing, mount, losetup, umount)
        if made_parent:
            with contextlib.suppress(OSError):
                backing.parent.rmdir()  # only when empty


def _take_away(backing: Path, mount: Path, losetup: str, umount: str) -> None:
    """Unmount MOUNT, detach every loop device over BACKING, remove both and the mark."""
    if os.path.ismount(mount):
        subprocess.run([umount, str(mount)], capture_output=True, check=False)
    if backing.exists():
        attached = subprocess.run(
            [losetup, "--associated", str(backing), "--noheadings", "--output", "NAME"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.split()
        for dev in attached:
            subprocess.run([losetup, "-d", dev], capture_output=True, check=False)
    with contextlib.suppress(OSError):
        mount.rmdir()
    backing.unlink(missing_ok=True)
    backing.with_name(backing.name + ".afkit").unlink(missing_ok=True)
