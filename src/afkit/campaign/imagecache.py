"""The node-local image cache of a site without the shared filesystem: one pull per node and image.

A job at a ``shared_fs: false`` site (docs/federation.md, "Per-site batch workers") cannot see the
submit host's SIF: it pulls the campaign's ``oras://`` image on its worker node. Without a cache
every job pulls the whole SIF again (a 560 MB image: 43-55 s a job). With one, the site's
``image_cache`` directory on each worker node (default :data:`DEFAULT_DIR`, under ``/var/tmp``:
not the worker's home, which may be a tmpfs) holds each image once, as ``SHA256.sif``, named by
the SHA-256 of the SIF file: the campaign's ``image.json`` digest (the submit host's pull), which is
also the digest of the SIF layer in the registry's manifest (Apptainer's ORAS client,
internal/pkg/client/oras/oras.go ``RefHash`` and ``ImageHash``).

Concurrent jobs on one node: the first one to need an image takes an exclusive ``flock`` on
``SHA256.lock`` beside the entry and pulls; the others wait on that lock, then find the entry (a
``hit``). The pull writes a fresh temporary file beside the entry (afkit.atomic.atomic_path) that
is renamed to ``SHA256.sif`` only once its SHA-256 is the expected one: an entry is always whole
and right, a failed or killed pull leaves no entry (its temporary file is removed, or, after a
crash, by the next pull of that image under the lock). The kernel releases a ``flock`` when its
holder dies, so a crashed job never blocks the others. ``flock`` locks belong to the open file,
so threads of one process (a local wave) exclude each other too.

Apptainer's own cache (internal/pkg/cache/cache.go, ``APPTAINER_CACHEDIR``, default
``~/.apptainer/cache``) is keyed by the same digest and also finalizes an entry by a rename
(internal/pkg/cache/entry.go ``Finalize``), but it takes no lock (concurrent pulls all download)
and ``apptainer pull DEST`` copies the cached SIF out to DEST (internal/pkg/client/oras/pull.go
``PullToFile``): a second full copy per job, and the cache's first copy in the home directory. So
afkit keeps its own cache and pulls with Apptainer's cache off (``APPTAINER_DISABLE_CACHE=1``);
Apptainer still checks the download's size and layer digest against the manifest (``pull``).

Trust: an entry the job's user owns, in a cache directory only that user can write (the default:
``/var/tmp/afkit-USER`` made ``0700``, as Apptainer makes its cache directory), is used as it is,
since it was checked before its rename (as Apptainer trusts a finalized entry). Any other entry
(a directory shared by several accounts, e.g. mode ``1777``) is hashed before every use; one that
does not match is replaced by a new pull. Standard library only (the job core runs it on the
worker, afkit.campaign.jobcore).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pwd
import re
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

from afkit.atomic import atomic_path
from afkit.errors import AfkitError, InvalidError
from afkit.image.store import sha256_file

# the default cache directory on each worker node; {user}: the job's account
DEFAULT_DIR = "/var/tmp/afkit-{user}/images"
OFF = "off"  # the site key's value that turns the cache off: each job pulls into its own sandbox

# the record's image_cache (afkit.campaign.contract.JobRecord)
HIT, MISS, UNUSABLE = "hit", "miss", "unusable"
STATES = (HIT, MISS, OFF, UNUSABLE)
_DIGEST = re.compile(r"[0-9a-f]{64}")


class CacheUnusable(AfkitError):
    """The cache directory cannot be used (not creatable, not writable, not the job user's own)."""


class DigestMismatch(AfkitError):
    """The pulled image is not the campaign's (its SHA-256 differs)."""


def _user() -> str:
    uid = os.geteuid()
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def directory(setting: str) -> Path:
    """The cache directory of the site key's SETTING (empty: the default)."""
    return Path(setting or DEFAULT_DIR.format(user=_user()))


def prepare(path: Path, *, default: bool) -> None:
    """Make PATH (mode 0700 for what is made here) and check this process can use it; the default
    directory's per-user parent must be this user's own (not another account's squatted name)."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        if default:
            parent = path.parent.lstat()
            if not stat.S_ISDIR(parent.st_mode) or parent.st_uid != os.geteuid():
                raise CacheUnusable(f"{path.parent} is not a directory of this user (uid {os.geteuid()})")
        if not path.is_dir() or not os.access(path, os.W_OK | os.X_OK):
            raise CacheUnusable(f"{path} is not a directory this user (uid {os.geteuid()}) can write")
    except OSError as err:
        raise CacheUnusable(f"cannot make {path}: {err.strerror or err}") from err


def _private(path: Path) -> bool:
    """PATH is this user's own, and no other account can write it."""
    st = path.lstat()
    return st.st_uid == os.geteuid() and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _trusted(entry: Path) -> bool:
    """ENTRY is a regular file that only this user can have written (no hashing needed)."""
    try:
        st = entry.lstat()
        return stat.S_ISREG(st.st_mode) and _private(entry) and _private(entry.parent)
    except OSError:
        return False


def _valid(entry: Path, sha256: str) -> bool:
    """ENTRY is there and is the image SHA256 (trusted, else hashed)."""
    try:
        if not stat.S_ISREG(entry.lstat().st_mode):
            return False
        return _trusted(entry) or sha256_file(entry) == sha256
    except OSError:
        return False


@contextlib.contextmanager
def _locked(lock: Path) -> Iterator[None]:
    """An exclusive flock on LOCK (made if missing; never removed: removing a lock file races
    with its next user). Blocks while another process or thread holds it; released on exit, or
    by the kernel when the holder dies."""
    fd = os.open(lock, os.O_RDONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the last descriptor of the open file releases the lock


def _remove_leftovers(path: Path, sha256: str) -> None:
    """Temporary files of SHA256's pulls that died with their job (called under the lock, so no
    live pull of it is writing one; atomic_path names them ``.STEM.RANDOM.tmpSUFFIX``)."""
    for tmp in path.glob(f".{sha256}.*.tmp.sif"):
        with contextlib.suppress(OSError):
            tmp.unlink()


def fetch(path: Path, sha256: str, pull: Callable[[Path], None]) -> tuple[Path, str]:
    """The cache entry of image SHA256 in directory PATH (prepared), and ``hit`` or ``miss``.

    PULL(TMP) writes the image to the existing temporary file TMP or raises; called at most once,
    holding the image's lock, when the entry is missing or wrong. The pulled file becomes the entry
    only when its SHA-256 is SHA256 (else :class:`DigestMismatch`, and nothing is cached)."""
    if not _DIGEST.fullmatch(sha256):
        raise InvalidError(f"image digest {sha256!r} is not a SHA-256 (64 hex digits)",
                           hint="make the image description again (afkit campaign run)")  # fmt: skip
    entry = path / f"{sha256}.sif"
    if _trusted(entry):  # entries appear whole (a rename): no lock needed to use one
        return entry, HIT
    try:
        with _locked(path / f"{sha256}.lock"):
            if _valid(entry, sha256):  # there already, or pulled by the job this one waited for
                return entry, HIT
            with contextlib.suppress(FileNotFoundError):
                entry.unlink()  # a damaged or foreign file under the entry's name
            _remove_leftovers(path, sha256)
            with atomic_path(entry, mode=0o644) as tmp:
                pull(tmp)
                if sha256_file(tmp) != sha256:
                    raise DigestMismatch(f"the pulled image's sha256 is not {sha256}")
                _sync(tmp)  # whole on disk before its name says so (/var/tmp survives reboots)
    except OSError as err:  # the lock, the entry or the temporary file: not this user's to write
        raise CacheUnusable(f"{err.filename or path}: {err.strerror or err}") from err
    return entry, MISS


def _sync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
