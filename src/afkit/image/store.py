"""Content-addressed store of staged files (like cvmfs_shrinkwrap's ``.data``).

Blobs live at ``.data/<2 hex>/<sha256>`` (``<sha256>x`` for executables) and are hard-linked into
the staged tree. ``index.json`` remembers ``path, size, mtime -> blob`` so an unchanged source
file is linked without being read again. A blob appears only by an atomic link of a finished
temporary file, so an interrupted run leaves the store consistent.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import mmap
import os
import threading
from pathlib import Path
from typing import Any

from afkit.atomic import write_atomic

CHUNK = 4 << 20


class Store:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.tmp = root / "tmp"
        self.tmp.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._index: dict[str, dict[str, Any]] = {}
        index = root / "index.json"
        if index.is_file():
            try:
                self._index = json.loads(index.read_text())["files"]
            except (ValueError, KeyError, TypeError):
                self._index = {}  # a damaged index only costs re-hashing

    @staticmethod
    def key(rel: str, st: os.stat_result) -> str:
        return f"{rel}\0{st.st_size}\0{st.st_mtime_ns}"

    def blob_path(self, digest: str, executable: bool) -> Path:
        return self.root / digest[:2] / (digest + ("x" if executable else ""))

    def lookup(self, rel: str, st: os.stat_result) -> dict[str, Any] | None:
        """The index entry of an unchanged source file whose blob is present, else None."""
        with self._lock:
            entry = self._index.get(self.key(rel, st))
        if not entry:
            return None
        blob = self.blob_path(entry["sha256"], bool(entry["x"]))
        try:
            if blob.stat().st_size != st.st_size:
                return None
        except OSError:
            return None
        return entry

    def add(self, src: Path, rel: str, st: os.stat_result, meta: dict[str, Any]) -> dict[str, Any]:
        """Copy SRC into the store (hashing it); returns its index entry."""
        executable = bool(st.st_mode & 0o111)
        fd, tmpname = _mkstemp(self.tmp)
        tmp = Path(tmpname)
        try:
            with os.fdopen(fd, "wb", buffering=0) as out, src.open("rb", buffering=0) as inp:
                digest, head = _copy(inp.fileno(), out.fileno())
            os.chmod(tmp, 0o755 if executable else 0o644)
            blob = self.blob_path(digest, executable)
            blob.parent.mkdir(exist_ok=True)
            with contextlib.suppress(FileExistsError):
                os.link(tmp, blob)
        finally:
            tmp.unlink(missing_ok=True)
        entry = {"sha256": digest, "x": executable, "size": st.st_size, **meta}
        entry["head_elf"] = head == b"\x7fELF"
        with self._lock:
            self._index[self.key(rel, st)] = entry
        return entry

    def save(self) -> None:
        """Write the index atomically."""
        with self._lock:
            data = json.dumps({"format": 1, "files": self._index}, sort_keys=True)
        write_atomic(self.root / "index.json", data)

    def update_meta(self, rel: str, st: os.stat_result, meta: dict[str, Any]) -> None:
        with self._lock:
            entry = self._index.get(self.key(rel, st))
            if entry is not None:
                entry.update(meta)


def _copy(src: int, dst: int) -> tuple[str, bytes]:
    """Copy file descriptor SRC to DST; (sha256, first 4 bytes).

    Hash from a read-only mapping (no copy into Python) and copy in the kernel
    (copy_file_range); fall back to a read/hash/write loop where either is not possible.
    """
    size = os.fstat(src).st_size
    if size:
        try:
            with mmap.mmap(src, 0, access=mmap.ACCESS_READ) as mapped:
                digest = hashlib.sha256(mapped).hexdigest()
                head = mapped[:4]
            left = size
            while left > 0:
                n = os.copy_file_range(src, dst, left)
                if n == 0:
                    raise OSError(f"source shrank while copying ({left} bytes short)")
                left -= n
            return digest, head
        except (OSError, ValueError):
            os.lseek(src, 0, os.SEEK_SET)
            os.lseek(dst, 0, os.SEEK_SET)
            os.ftruncate(dst, 0)
    return _copy_loop(src, dst)


def _copy_loop(src: int, dst: int) -> tuple[str, bytes]:
    digest = hashlib.sha256()
    buf = bytearray(CHUNK)
    view = memoryview(buf)
    head = b""
    while n := os.readv(src, [buf]):
        if not head:
            head = bytes(view[: min(n, 4)])
        digest.update(view[:n])
        done = 0
        while done < n:  # a write may be partial
            done += os.write(dst, view[done:n])
    return digest.hexdigest(), head[:4]


def _mkstemp(directory: Path) -> tuple[int, str]:
    import tempfile

    return tempfile.mkstemp(dir=directory, prefix="blob-")
