"""What a path is when a file was asked for and it is something else (a common module).

A user who names a directory, ``/dev/null`` or a FIFO where afkit wants a file (a campaign, a sites
file, a token) is told what it is, before it is opened: reading a FIFO waits for a writer, reading a
directory raises IsADirectoryError.
"""

from __future__ import annotations

import stat
from pathlib import Path


def kind(path: Path) -> str | None:
    """What PATH is when it is not a regular file ("a directory", "a named pipe (FIFO)", ...), None
    for a regular file (or a link to one) and for nothing at all."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return None
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe (FIFO)"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):  # fmt: skip
        if test(mode):
            return name
    return None
