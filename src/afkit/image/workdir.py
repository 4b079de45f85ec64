"""The working directory: refuse unsafe ones, adopt empty ones, clean only what afkit made.

A directory is afkit's when it holds the marker file ``.afkit-workdir``; only then is its
content ever removed (everything but the marker and the ``.data`` store, which is a cache).
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import shutil
import stat
import sys
import time
from collections.abc import Callable
from pathlib import Path

from afkit import __version__
from afkit.atomic import write_atomic
from afkit.errors import UnsafeError

MARKER = ".afkit-workdir"
STORE = ".data"
KEEP = frozenset({MARKER, STORE})

# Never a working directory, nor anything inside these.
_SYSTEM_TREES = (
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/proc",
    "/sbin",
    "/sys",
    "/usr",
    "/cvmfs",
    "/run",
    "/var/lib",
    "/var/log",
    "/var/cache",
)
# Never a working directory themselves (subdirectories are fine).
_SYSTEM_DIRS = (
    "/",
    "/home",
    "/root",
    "/tmp",
    "/var",
    "/opt",
    "/srv",
    "/mnt",
    "/media",
    "/var/tmp",
    "/scratch",
)


def homes() -> set[Path]:
    """$HOME and, under sudo, the invoking user's home."""
    out = {Path(os.path.expanduser("~")).resolve()}
    if os.environ.get("HOME"):
        out.add(Path(os.environ["HOME"]).resolve())
    sudo_user = os.environ.get("SUDO_USER")
    if sudo_user:
        with contextlib.suppress(KeyError):
            out.add(Path(pwd.getpwnam(sudo_user).pw_dir).resolve())
    return out


def all_homes() -> set[Path]:
    """Every account's home directory (``-o ~otheruser`` is refused too), plus :func:`homes`."""
    out = homes()
    with contextlib.suppress(OSError):
        out.update(Path(os.path.realpath(entry.pw_dir)) for entry in pwd.getpwall() if entry.pw_dir)
    return out


def trusted_uids() -> set[int]:
    """Who may own a working directory and its marker: root, us and, under sudo, the sudo user."""
    uids = {0, os.geteuid()}
    sudo_uid = os.environ.get("SUDO_UID", "")
    if os.geteuid() == 0 and sudo_uid.isdigit():
        uids.add(int(sudo_uid))
    return uids


def _check_owner(path: Path) -> None:
    """UnsafeError unless PATH (a directory) is ours and no one else can write into it.

    Another user who owns the directory (or anyone, when it is world-writable, like ``/tmp/x``)
    could plant a marker or swap entries for symlinks between our checks and our writes.
    """
    st = path.lstat()
    if st.st_uid not in trusted_uids():
        raise UnsafeError(
            f"refusing to use {path} as the working directory: it belongs to uid {st.st_uid}, not to you",
            hint="give a directory you own (it is created if missing)",
        )
    if st.st_mode & stat.S_IWOTH:
        raise UnsafeError(
            f"refusing to use {path} as the working directory: it is writable by every user",
            hint="give a directory only you can write to (it is created if missing)",
        )


def _check_ancestors(path: Path) -> None:
    """UnsafeError when someone else could rename a directory on the way to PATH (and put a
    symlink in its place between our checks and our cleaning): a parent owned by another user,
    or writable by every user without the sticky bit."""
    trusted = trusted_uids()
    for parent in path.parents:
        try:
            st = parent.lstat()
        except FileNotFoundError:
            continue  # created by us
        if st.st_uid not in trusted:
            raise UnsafeError(
                f"refusing to use {path} as the working directory: {parent} belongs to uid {st.st_uid}, "
                "who could swap its content under us",
                hint="give a directory in a tree that only you (or root) can change",
            )
        if st.st_mode & stat.S_IWOTH and not st.st_mode & stat.S_ISVTX:
            raise UnsafeError(
                f"refusing to use {path} as the working directory: {parent} is writable by every user",
                hint="give a directory in a tree that only you (or root) can change",
            )


def check_safe(path: Path) -> Path:
    """The resolved PATH, or UnsafeError (exit 4) when it must never be a working directory."""
    resolved = Path(os.path.realpath(path))
    text = str(resolved)
    if text in _SYSTEM_DIRS or resolved in all_homes():
        raise UnsafeError(
            f"refusing to use {resolved} as the working directory: it is a system or home directory",
            hint="give a dedicated directory, e.g. -o /scratch/afkit-images (it is created if missing)",
        )
    for home in homes():
        if home.is_relative_to(resolved):
            raise UnsafeError(
                f"refusing to use {resolved} as the working directory: it contains the home directory {home}",
                hint="give a dedicated directory, e.g. -o /scratch/afkit-images (it is created if missing)",
            )
    for tree in _SYSTEM_TREES:
        if text == tree or text.startswith(tree + "/"):
            raise UnsafeError(
                f"refusing to use {resolved} as the working directory: it is inside {tree}",
                hint="give a dedicated directory on a data disk, e.g. /scratch/afkit-images",
            )
    if resolved.exists() and not resolved.is_dir():
        raise UnsafeError(f"{resolved} exists and is not a directory", hint="give a directory")
    _check_ancestors(resolved)
    if resolved.is_dir():
        _check_owner(resolved)
    if resolved.is_dir() and not is_ours(resolved) and any(resolved.iterdir()):
        raise UnsafeError(
            f"{resolved} is not empty and was not created by afkit (no {MARKER} in it)",
            hint="give a new or empty directory; afkit never cleans what it did not create",
        )
    return resolved


def is_ours(path: Path) -> bool:
    """PATH holds our marker: a regular file (not a symlink) owned by a trusted user, in a
    directory owned by a trusted user that not everybody can write to."""
    try:
        dst = path.lstat()
        mst = (path / MARKER).lstat()
    except OSError:
        return False
    trusted = trusted_uids()
    return (
        stat.S_ISDIR(dst.st_mode)
        and stat.S_ISREG(mst.st_mode)
        and dst.st_uid in trusted
        and mst.st_uid in trusted
        and not dst.st_mode & stat.S_IWOTH
    )


def leftovers(path: Path) -> list[str]:
    """Names in an afkit working directory that a new build would remove."""
    if not path.is_dir():
        return []
    return sorted(p.name for p in path.iterdir() if p.name not in KEEP)


def confirm_clean(path: Path, names: list[str], yes: bool, ask: Callable[[str], str] | None = None) -> None:
    """Allow cleaning NAMES: with --yes, or after 'y' on a terminal; refuse (exit 4) otherwise."""
    if not names or yes:
        return
    shown = ", ".join(names[:8]) + (" ..." if len(names) > 8 else "")
    if ask is None:
        if not sys.stdin.isatty():
            raise UnsafeError(
                f"{path} holds an earlier build ({shown}) and there is no terminal to ask",
                hint="pass -y/--yes to clean it, or give another directory",
            )
        ask = input
    answer = ask(f"afkit: remove {shown} from {path}? [y/N] ").strip().lower()
    if answer not in ("y", "yes"):
        raise UnsafeError(f"not cleaning {path}", hint="pass -y/--yes, or give another directory")


def prepare(path: Path, yes: bool, ask: Callable[[str], str] | None = None) -> Path:
    """Make PATH a ready, marked, clean working directory (the store is kept)."""
    path = check_safe(path)
    names = leftovers(path) if is_ours(path) else []
    confirm_clean(path, names, yes, ask)
    path.mkdir(mode=0o755, parents=True, exist_ok=True)
    if not is_ours(path):
        _check_owner(path)
        # a fresh temporary file (O_EXCL, O_NOFOLLOW) renamed to the marker
        mark = {"created_by": "afkit", "version": __version__, "time": time.time()}
        write_atomic(path / MARKER, json.dumps(mark) + "\n", mode=0o644)
    for name in names:
        remove(path / name)
    return path


def remove(path: Path) -> None:
    """Remove one entry without following symlinks; a tree whose directories forbid it (a
    rootfs's 0555 /proc, made by a build as this user) is made writable for its owner first,
    as Apptainer's own fs.ForceRemoveAll does."""
    if path.is_symlink() or not path.is_dir():
        path.unlink(missing_ok=True)
        return
    try:
        shutil.rmtree(path)
    except PermissionError:
        for dirpath, dirnames, _files in os.walk(path):
            for name in [".", *dirnames]:
                entry = Path(dirpath, name)
                if not entry.is_symlink():
                    entry.chmod(entry.lstat().st_mode & 0o7777 | stat.S_IRWXU)
        shutil.rmtree(path)
