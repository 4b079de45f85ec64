"""Content-addressed store of staged files (like cvmfs_shrinkwrap's ``.data``).

Blobs live at ``.data/<2 hex>/<sha256>`` (``<sha256>x`` for executables) and are hard-linked into
the staged tree. ``index.json`` remembers ``path, size, mtime -> blob`` so an unchanged source
file is linked without being read again. A blob appears only by an atomic link of a finished
temporary file, so an interrupted run leaves the store consistent.

On a CVMFS mount the client already knows every file's content hash and exposes it as the
extended attribute ``user.hash`` (cvmfs/cvmfs ``cvmfs/magic_xattr.cc``: ``HashMagicXattr``, the
catalog's ``dirent->checksum().ToString()``, absent when the checksum is null). Then the blob is
named ``cvmfs-<that hash>`` (directory ``.data/<its 2 first hex>/``): a file whose content is
already in the store is linked without reading a byte, and a new one is copied in the kernel
(``copy_file_range``) without being hashed. Elsewhere afkit hashes with sha256.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import mmap
import os
import re
import threading
from pathlib import Path
from typing import NotRequired, TypedDict

from afkit.atomic import write_atomic
from afkit.image.model import ElfFacts

StrPath = str | os.PathLike[str]

CHUNK = 4 << 20
XATTR = "user.hash"
CVMFS_PREFIX = "cvmfs-"
# A CVMFS content hash as ToString() prints it: hex digits, then -rmd160 / -shake128 (shash.cc).
_CVMFS_HASH = re.compile(r"[0-9a-f]{40,128}(-[a-z0-9]{1,16})?")


class IndexEntry(TypedDict):
    """One source file in ``index.json`` (its key: path, size, mtime): the blob holding its content."""

    sha256: str  # the blob id: a sha256, or cvmfs-<the CVMFS content hash>
    x: bool  # executable (the blob name ends in x)
    size: int
    head_elf: NotRequired[bool]  # the content starts with the ELF magic
    elf: NotRequired[ElfFacts | None]  # read once from the blob (stage); None: not a readable ELF


def sha256_file(path: StrPath) -> str:
    """The SHA-256 of PATH's content, hex (a SIF's digest: the builder's manifest, the campaign's
    image.json, the worker's check of a pulled image)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def cvmfs_hash(path: StrPath) -> str | None:
    """The content hash the CVMFS client knows for PATH (``user.hash``), or None."""
    try:
        value = os.getxattr(path, XATTR, follow_symlinks=False).decode("ascii", "replace").strip()
    except OSError:
        return None
    return value if _CVMFS_HASH.fullmatch(value) else None


class Store:
    def __init__(self, root: Path, *, index: bool = True) -> None:
        """The store at ROOT; INDEX False: blobs only (a staging worker process, whose index
        entries go back to the process that owns the index)."""
        self.root = root
        self._root = str(root)  # blob paths are made per file: plain strings, no Path objects
        self.tmp = root / "tmp"
        self.tmp.mkdir(parents=True, exist_ok=True)
        for i in range(256):  # every blob directory once, not a mkdir per copied file
            (root / f"{i:02x}").mkdir(exist_ok=True)
        self._names = itertools.count()
        self._lock = threading.Lock()
        self._index: dict[str, IndexEntry] = {}
        saved = root / "index.json"
        if index and saved.is_file():
            try:
                self._index = json.loads(saved.read_text())["files"]
            except (ValueError, KeyError, TypeError):
                self._index = {}  # a damaged index only costs re-hashing

    @staticmethod
    def key(rel: str, st: os.stat_result) -> str:
        return f"{rel}\0{st.st_size}\0{st.st_mtime_ns}"

    def blob_path(self, digest: str, executable: bool) -> Path:
        return Path(self.blob(digest, executable))

    def blob(self, digest: str, executable: bool) -> str:
        """``blob_path`` as a string."""
        sub = digest.removeprefix(CVMFS_PREFIX)[:2]
        return f"{self._root}/{sub}/{digest}{'x' if executable else ''}"

    def lookup(self, rel: str, st: os.stat_result) -> IndexEntry | None:
        """The index entry of an unchanged source file whose blob is present, else None."""
        entry = self.known(rel, st)
        return entry if entry and self.present(entry) else None

    def known(self, rel: str, st: os.stat_result) -> IndexEntry | None:
        """The index entry of an unchanged source file (its blob not checked)."""
        with self._lock:
            return self._index.get(self.key(rel, st))

    def present(self, entry: IndexEntry) -> bool:
        """ENTRY's blob is in the store with the entry's size."""
        return _same_size(self.blob(entry["sha256"], bool(entry["x"])), int(entry.get("size", -1)))

    def remember(self, rel: str, st: os.stat_result, entry: IndexEntry) -> None:
        """Record ENTRY for the source file (REL, ST), e.g. one a worker process added."""
        with self._lock:
            self._index[self.key(rel, st)] = entry

    def add(self, src: StrPath, rel: str, st: os.stat_result) -> IndexEntry:
        """Copy SRC into the store (hashing it unless CVMFS knows its hash); returns its index entry."""
        return self.add_placing(src, rel, st)[0]

    def add_placing(
        self, src: StrPath, rel: str, st: os.stat_result, place: StrPath | None = None
    ) -> tuple[IndexEntry, bool]:
        """``add``; with PLACE (a path that does not exist yet, e.g. the file's place in the staged
        tree), new content is copied straight to PLACE and the blob is a hard link of it: one file
        created instead of a temporary one, its link and its removal. (entry, True when PLACE was
        made); False: the content was in the store already, PLACE is untouched."""
        executable = bool(st.st_mode & 0o111)
        known = cvmfs_hash(src)
        digest = f"{CVMFS_PREFIX}{known}" if known else ""
        blob = self.blob(digest, executable) if known else None
        placed = False
        if blob is not None and _same_size(blob, st.st_size):
            fd = os.open(src, os.O_RDONLY | os.O_CLOEXEC)
            try:
                head = os.pread(fd, 4, 0)
            finally:
                os.close(fd)
        else:
            digest, head = self._copy_in(src, executable, digest, place)
            placed = place is not None
        entry: IndexEntry = {
            "sha256": digest,
            "x": executable,
            "size": st.st_size,
            "head_elf": head == b"\x7fELF",
        }
        self.remember(rel, st, entry)
        return entry, placed

    def _copy_in(
        self, src: StrPath, executable: bool, digest: str, place: StrPath | None
    ) -> tuple[str, bytes]:
        """Copy SRC to PLACE (or a temporary file) and link it in as its blob; (blob id, first 4
        bytes). DIGEST: the blob id when already known (CVMFS), else the sha256 computed here.
        The blob appears only when its copy is complete; a failed copy leaves neither file."""
        # A temporary name no other thread or process uses (pid, counter); O_EXCL refuses a leftover.
        out_path = place if place is not None else f"{self.tmp}/blob-{os.getpid()}-{next(self._names)}"
        out = _create(out_path)
        try:
            inp = os.open(src, os.O_RDONLY | os.O_CLOEXEC)
            try:
                if digest:
                    head = os.pread(inp, 4, 0)
                    _kernel_copy(inp, out)
                else:
                    digest, head = _copy(inp, out)
            finally:
                os.close(inp)
            os.fchmod(out, 0o755 if executable else 0o644)
        except BaseException:
            os.close(out)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(out_path)
            raise
        os.close(out)
        try:
            with contextlib.suppress(FileExistsError):
                os.link(out_path, self.blob(digest, executable))
        finally:
            if place is None:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(out_path)
        return digest, head

    def save(self) -> None:
        """Write the index atomically."""
        with self._lock:
            data = json.dumps({"format": 1, "files": self._index}, sort_keys=True)
        write_atomic(self.root / "index.json", data)


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
            _kernel_copy(src, dst, size)
            return digest, head
        except (OSError, ValueError):
            os.lseek(src, 0, os.SEEK_SET)
            os.lseek(dst, 0, os.SEEK_SET)
            os.ftruncate(dst, 0)
    return _copy_loop(src, dst)


def _create(path: StrPath) -> int:
    """A new file at PATH for writing (its directory made when missing); refuses an existing one."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
    try:
        return os.open(path, flags, 0o600)
    except FileNotFoundError:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        return os.open(path, flags, 0o600)


def _same_size(path: StrPath, size: int) -> bool:
    try:
        return os.stat(path).st_size == size
    except OSError:
        return False


def _kernel_copy(src: int, dst: int, size: int | None = None) -> None:
    """Copy SRC to DST with copy_file_range (no bytes through Python); a read/write loop where
    the kernel cannot (e.g. across some FUSE file systems)."""
    left = os.fstat(src).st_size if size is None else size
    try:
        while left > 0:
            n = os.copy_file_range(src, dst, left)
            if n == 0:
                raise OSError(f"source shrank while copying ({left} bytes short)")
            left -= n
    except OSError as err:
        if err.errno not in (18, 22, 38, 95):  # EXDEV, EINVAL, ENOSYS, EOPNOTSUPP
            raise
        os.lseek(src, 0, os.SEEK_SET)
        os.lseek(dst, 0, os.SEEK_SET)
        os.ftruncate(dst, 0)
        _copy_loop(src, dst)


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
