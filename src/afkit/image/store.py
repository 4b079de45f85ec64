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
import os
import threading
from pathlib import Path
from typing import Any

CHUNK = 1 << 20


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
        """Copy SRC into the store (hashing on the way); returns its index entry."""
        executable = bool(st.st_mode & 0o111)
        digest = hashlib.sha256()
        fd, tmpname = _mkstemp(self.tmp)
        tmp = Path(tmpname)
        try:
            with os.fdopen(fd, "wb") as out, src.open("rb") as inp:
                head = b""
                while chunk := inp.read(CHUNK):
                    if not head:
                        head = chunk[:4096]
                    digest.update(chunk)
                    out.write(chunk)
            os.chmod(tmp, 0o755 if executable else 0o644)
            blob = self.blob_path(digest.hexdigest(), executable)
            blob.parent.mkdir(exist_ok=True)
            with contextlib.suppress(FileExistsError):
                os.link(tmp, blob)
        finally:
            tmp.unlink(missing_ok=True)
        entry = {"sha256": digest.hexdigest(), "x": executable, "size": st.st_size, **meta}
        entry["head_elf"] = head[:4] == b"\x7fELF"
        with self._lock:
            self._index[self.key(rel, st)] = entry
        return entry

    def save(self) -> None:
        """Write the index atomically."""
        with self._lock:
            data = json.dumps({"format": 1, "files": self._index}, sort_keys=True)
        tmp = self.root / f".index.json.{os.getpid()}"
        tmp.write_text(data)
        tmp.replace(self.root / "index.json")

    def update_meta(self, rel: str, st: os.stat_result, meta: dict[str, Any]) -> None:
        with self._lock:
            entry = self._index.get(self.key(rel, st))
            if entry is not None:
                entry.update(meta)


def _mkstemp(directory: Path) -> tuple[int, str]:
    import tempfile

    return tempfile.mkstemp(dir=directory, prefix="blob-")
