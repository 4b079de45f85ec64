"""Files written whole or not at all: a fresh temporary name beside the target, then one rename.

``write_atomic(path, data)`` writes text or bytes held in memory; ``atomic_path(path)`` gives a
temporary file name to a writer that wants one (matplotlib's ``savefig``, ``ElementTree.write``,
a stream of chunks) and renames it over PATH when the block ends without an exception. Either way
a reader sees the old file or the new one, never half of one, and a failure (or Ctrl-C) leaves
no temporary file behind.

The temporary file is created here, exclusively and without following a symlink
(``O_CREAT | O_EXCL | O_NOFOLLOW``), in PATH's directory (so the rename stays on one file system),
named ``.STEM.RANDOM.tmpSUFFIX`` (hidden; the suffix kept for writers that pick the format from
it). Its permissions follow the umask unless MODE is given. Standard library only: the CI helper
(``ci/cicfg.py``) uses it too.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def atomic_path(path: Path | str, *, mode: int | None = None, tmp_dir: Path | None = None) -> Iterator[Path]:
    """Yield an empty temporary file beside PATH (with MODE: made 0600); on success chmod it to MODE
    (when given) and rename it to PATH; on any exception remove it. PATH's directory is created if missing.
    TMP_DIR: make the temporary file there instead (same file system; for a file that must stay
    out of PATH's directory while the block runs, e.g. a log of a builder that cleans it)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    where = target.parent if tmp_dir is None else tmp_dir
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    while True:
        tmp = where / f".{target.stem}.{secrets.token_hex(4)}.tmp{target.suffix}"
        try:
            # with MODE: readable by its owner only until the rename (a key is never readable by
            # others, not even while it is being written); else as the umask says
            os.close(os.open(tmp, flags, 0o666 if mode is None else 0o600))
            break
        except FileExistsError:
            continue
    try:
        yield tmp
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_atomic(path: Path | str, data: str | bytes, *, mode: int | None = None) -> Path:
    """Write DATA (text as UTF-8, newlines as given, or bytes) to PATH atomically; return PATH."""
    with atomic_path(path, mode=mode) as tmp:
        if isinstance(data, bytes):
            tmp.write_bytes(data)
        else:
            tmp.write_text(data, encoding="utf-8", newline="")
    return Path(path)


def write_if_changed(path: Path | str, text: str, *, mode: int | None = None) -> bool:
    """Write TEXT to PATH atomically (its folder made) unless PATH already holds it: an unchanged
    file keeps its time, so that Snakemake sees nothing newer. True when written."""
    target = Path(path)
    try:
        if target.read_text(encoding="utf-8") == text:
            return False
    except (OSError, ValueError):  # missing, unreadable or not UTF-8: written anew
        target.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(target, text, mode=mode)
    return True
