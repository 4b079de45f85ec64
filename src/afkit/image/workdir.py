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
import sys
import time
from collections.abc import Callable
from pathlib import Path

from afkit import __version__
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


def check_safe(path: Path) -> Path:
    """The resolved PATH, or UnsafeError (exit 4) when it must never be a working directory."""
    resolved = Path(os.path.realpath(path))
    text = str(resolved)
    if text in _SYSTEM_DIRS or resolved in homes():
        raise UnsafeError(
            f"refusing to use {resolved} as the working directory: it is a system or home directory",
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
    if resolved.is_dir() and not is_ours(resolved) and any(resolved.iterdir()):
        raise UnsafeError(
            f"{resolved} is not empty and was not created by afkit (no {MARKER} in it)",
            hint="give a new or empty directory; afkit never cleans what it did not create",
        )
    return resolved


def is_ours(path: Path) -> bool:
    marker = path / MARKER
    return marker.is_file() and not marker.is_symlink()


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
    path.mkdir(parents=True, exist_ok=True)
    if not is_ours(path):
        tmp = path / f".{MARKER}.tmp"
        tmp.write_text(
            json.dumps({"created_by": "afkit", "version": __version__, "time": time.time()}) + "\n"
        )
        tmp.rename(path / MARKER)
    for name in names:
        remove(path / name)
    return path


def remove(path: Path) -> None:
    """Remove one entry without following symlinks."""
    if path.is_symlink() or not path.is_dir():
        path.unlink(missing_ok=True)
    else:
        shutil.rmtree(path)
