"""Open a file by POSIX path or ``root://`` URL and read byte ranges from it, cheaply.

The XRootD Python bindings are imported only when a ``root://`` URL is opened, so the host
(which lacks them) can run everything else. Client time-outs are set (unless the caller set
them already) so that an unreachable server fails within seconds instead of minutes: these are
afkit's only XRootD client settings (``afkit bench``, the campaign job, the preflight check).
Standard library only: the campaign job imports this module inside images that have nothing but
Python (and the bindings).
"""

from __future__ import annotations

import contextlib
import mmap
import os
import shutil
import stat
from typing import Any, Protocol

from afkit.bench.offsets import Chunk
from afkit.errors import AfkitError, ExitCode, InvalidError, NotFoundError, PrereqError

# XrdCl environment defaults (env names are XrdCl's own; an explicit setting wins). XrdCl's own
# (xrootd src/XrdCl/XrdClConstants.hh: 5 connection attempts in windows of 120 s, requests time
# out after 1800 s) let a dead endpoint hang a client for minutes; why these: docs/benchmarks.md.
XRD_DEFAULTS: dict[str, str] = {
    "XRD_CONNECTIONRETRY": "1",
    "XRD_CONNECTIONWINDOW": "30",  # login and authentication count in it (docs/benchmarks.md)
    "XRD_REQUESTTIMEOUT": "60",
    "XRD_STREAMTIMEOUT": "30",
    "XRD_STREAMERRORWINDOW": "0",
}
OPEN_TIMEOUT = 15  # seconds, per call
READ_TIMEOUT = 60
XRD_NOT_FOUND_ERRNO = 3011  # kXR_NotFound: the server says the file does not exist (XProtocol.hh)
XRD_CONNECT_CODES = range(101, 111)  # errInvalidAddr .. errTlsError: the server is not reachable
XRD_MAX_VECTOR = 1024  # chunks per kXR_readv
# a private anonymous mapping whose pages the kernel faults in at once (not one fault per page
# inside the first timed read)
_ANON_PREFAULTED = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | getattr(mmap, "MAP_POPULATE", 0)


class ReadError(AfkitError):
    """A read failed in the middle of a run (server gone, connection dropped)."""

    code = ExitCode.FAILURE


class Source(Protocol):
    url: str
    size: int
    supports_vector: bool

    def read(self, offset: int, length: int) -> int: ...

    def vector_read(self, chunks: list[Chunk]) -> int: ...

    def close(self) -> None: ...


def is_xrootd_url(url: str) -> bool:
    return url.startswith(("root://", "roots://", "xroot://", "xroots://"))


def for_root(url: str) -> str:
    """URL as ROOT must be given it: ``roots://`` (``xroots://``) as ``root://`` (``xroot://``).

    ROOT's plugin table sends only ``^[x]?root:`` to its XRootD client, TNetXNGFile
    (root-project/root etc/plugins/TFile/P100_TXNetFile.C); ``roots:`` goes to the removed rootd
    client, ROOT::Deprecated::TNetFile (P120_TNetFile.C: "method ... not found", the file not
    opened). A guarded server requires TLS (``xrootd.tls all``, afkit's templates/xrootd
    common.cfg.j2) and says so in its kXR_protocol reply (kXR_gotoTLS, xrootd
    src/XProtocol/XProtocol.hh), on which XRootD's client turns the root:// connection into TLS
    before it logs in (src/XrdCl/XrdClXRootDTransport.cc): the reads stay encrypted and ztn, which
    needs TLS, still authenticates them. Other URLs and paths unchanged."""
    for tls, plain in (("roots://", "root://"), ("xroots://", "xroot://")):
        if url.startswith(tls):
            return plain + url[len(tls) :]
    return url


def open_source(url: str) -> Source:
    if is_xrootd_url(url):
        return XRootDSource(url)
    if "://" in url and not url.startswith("file://"):
        raise InvalidError(f"unsupported URL scheme in '{url}'", hint="use a POSIX path or a root:// URL")
    return PosixSource(url.removeprefix("file://"))


class PosixSource:
    """``pread`` into one reused, page-aligned buffer: no allocation per read, like fio's psync engine.

    The buffer is an anonymous ``mmap`` (page-aligned) rather than a ``bytearray`` (``malloc``'s
    blocks start 16 bytes past a page): the kernel's copy from the page cache to a destination
    16 bytes off a page was measured ~4x slower (AMD EPYC with FSRM, docs/benchmarks.md).
    """

    supports_vector = False

    def __init__(self, path: str) -> None:
        self.url = path
        try:
            self._fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError as err:
            raise NotFoundError(f"file '{path}' does not exist") from err
        except IsADirectoryError as err:
            raise InvalidError(f"'{path}' is a directory, not a file") from err
        except PermissionError as err:
            raise PrereqError(f"cannot read '{path}': permission denied") from err
        st = os.fstat(self._fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(self._fd)
            raise InvalidError(f"'{path}' is not a regular file", hint="give a file (or a root:// URL)")
        self.size = st.st_size
        self._buf: mmap.mmap | None = None
        self._iovs: dict[int, list[memoryview]] = {}

    def _iov(self, length: int) -> list[memoryview]:
        """One reused buffer; the iovec list of each read length is made once."""
        buf = self._buf
        have = 0 if buf is None else len(buf)
        if buf is None or have < length or len(self._iovs) > 4096:
            self._iovs = {}
            buf = self._buf = mmap.mmap(-1, max(length, have, 1), flags=_ANON_PREFAULTED)
        iov = self._iovs[length] = [memoryview(buf)[:length]]
        return iov

    def read(self, offset: int, length: int) -> int:
        iov = self._iovs.get(length) or self._iov(length)
        try:
            return os.preadv(self._fd, iov, offset)
        except OSError as err:
            raise ReadError(f"read of {length} bytes at {offset} in '{self.url}' failed: {err}") from err

    def vector_read(self, chunks: list[Chunk]) -> int:
        return sum(self.read(offset, length) for offset, length in chunks)

    def close(self) -> None:
        self._iovs = {}
        self._buf = None
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def import_xrootd_client() -> Any:
    for key, value in XRD_DEFAULTS.items():
        os.environ.setdefault(key, value)
    try:
        from XRootD import client
    except ImportError as err:
        raise PrereqError(
            "the XRootD Python bindings are not installed",
            hint="on Debian: apt install python3-xrootd (the testbed and the afkit images have them)",
        ) from err
    return client


def _status_error(status: Any, url: str, action: str) -> AfkitError:
    message = str(getattr(status, "message", status)).strip()
    if getattr(status, "errno", 0) == XRD_NOT_FOUND_ERRNO:
        return NotFoundError(f"{url}: no such file on the server ({message})")
    if getattr(status, "code", 0) in XRD_CONNECT_CODES:
        return PrereqError(
            f"cannot reach the XRootD server for {url}: {message}",
            hint="check that the server runs ('afkit storage status') and the URL's host:port",
        )
    if getattr(status, "errno", 0) in (3010,):  # kXR_NotAuthorized
        return PrereqError(f"{url}: not authorised: {message}")
    return ReadError(f"{action} {url} failed: {message}")


class XRootDSource:
    """``XRootD.client.File``: ``read`` and, for vectors, ``vector_read`` (kXR_readv)."""

    supports_vector = True

    def __init__(self, url: str) -> None:
        client = import_xrootd_client()
        from XRootD.client.flags import OpenFlags

        self.url = url
        self._last: object = None
        self._file = client.File()
        status, _ = self._file.open(url, OpenFlags.READ, timeout=OPEN_TIMEOUT)
        if not status.ok:
            raise _status_error(status, url, "opening")
        status, info = self._file.stat(timeout=OPEN_TIMEOUT)
        if not status.ok:
            raise _status_error(status, url, "stat of")
        self.size = int(info.size)

    def read(self, offset: int, length: int) -> int:
        """LENGTH bytes at OFFSET (fewer only at the end of the file). A short answer before the end
        is read on from where it stopped, as xrdcp does; an empty one is a ReadError (the reader
        reconnects and retries), never bytes silently left out of the measurement."""
        status, data = self._file.read(offset, length, timeout=READ_TIMEOUT)
        if not status.ok:
            raise ReadError(f"read of {length} bytes at {offset} from {self.url} failed: {status.message}")
        # Keep this buffer until the next read has returned, as a plain loop does: freeing it
        # first lets glibc hand the pages back and fault fresh ones in on every read
        # (measured: half the throughput with 8 MiB blocks on loopback).
        self._last = data
        got = len(data)
        if got < length and offset + got < self.size:
            got += self._read_rest(offset + got, length - got, offset, length)
        return got

    def _read_rest(self, offset: int, length: int, asked_at: int, asked: int) -> int:
        """The rest of a short read: LENGTH bytes at OFFSET, up to the end of the file."""
        got = 0
        want = min(length, self.size - offset)
        while got < want:
            status, data = self._file.read(offset + got, want - got, timeout=READ_TIMEOUT)
            if not status.ok:
                raise ReadError(f"read of {want - got} bytes at {offset + got} from {self.url} failed: "
                                f"{status.message}")  # fmt: skip
            if not data:
                raise ReadError(f"read of {asked} bytes at {asked_at} from {self.url} ended at "
                                f"{offset + got} of {self.size} bytes: the server sent no more")  # fmt: skip
            self._last = data
            got += len(data)
        return got

    def vector_read(self, chunks: list[Chunk]) -> int:
        total = 0
        for i in range(0, len(chunks), XRD_MAX_VECTOR):
            status, info = self._file.vector_read(chunks=chunks[i : i + XRD_MAX_VECTOR], timeout=READ_TIMEOUT)
            if not status.ok:
                raise ReadError(
                    f"vector read of {len(chunks)} chunks from {self.url} failed: {status.message}"
                )
            total += int(info.size)
            self._last = info  # see read()
        return total

    def close(self) -> None:
        # closing after a dropped connection must not mask the real error
        with contextlib.suppress(Exception):
            self._file.close(timeout=5)


def fetch(url: str, dest: str) -> int:
    """Copy URL (``root://`` by XrdCl's copy engine, else a local path) to DEST; its size in bytes."""
    if is_xrootd_url(url):
        client = import_xrootd_client()
        process = client.CopyProcess()
        process.add_job(url, dest, force=True)
        status = process.prepare()
        if status.ok:
            status, results = process.run()
            if status.ok and results and not results[0]["status"].ok:
                status = results[0]["status"]
        if not status.ok:
            raise _status_error(status, url, "copying")
    else:
        shutil.copyfile(url.removeprefix("file://"), dest)
    return os.path.getsize(dest)
