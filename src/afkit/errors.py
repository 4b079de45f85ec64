"""Exit codes shared by every afkit command (documented in README, section "Exit codes"), the
project's one table of them; and the one line of an error text a record or a message shows, and
how a program ended.

The shell scripts use the same numbers (``scripts/lib/common.sh``, checked against this table by
``tests/unit/test_exit_codes.py``).
"""

from __future__ import annotations

import signal
from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    FAILURE = 1  # a step failed (build, run, benchmark)
    USAGE = 2  # bad or missing option / argument (argparse uses 2 too)
    PREREQ = 3  # a prerequisite is missing: program, mount, privilege, free space
    UNSAFE = 4  # refused: unsafe path or would overwrite something afkit did not create
    NOT_FOUND = 5  # unknown tag, missing file, missing dataset
    INVALID = 6  # validation of an image / config / result failed
    INTERRUPTED = 130  # Ctrl-C


class AfkitError(Exception):
    """An error with a message for the user and an exit code.

    ``hint`` says what to do about it; it is printed on its own line.
    """

    code: ExitCode = ExitCode.FAILURE

    def __init__(self, message: str, *, hint: str | None = None, code: ExitCode | None = None) -> None:
        super().__init__(message)
        self.hint = hint
        if code is not None:
            self.code = code


class UsageError(AfkitError):
    code = ExitCode.USAGE


class PrereqError(AfkitError):
    code = ExitCode.PREREQ


class UnsafeError(AfkitError):
    code = ExitCode.UNSAFE


class NotFoundError(AfkitError):
    code = ExitCode.NOT_FOUND


class InvalidError(AfkitError):
    code = ExitCode.INVALID


# words of a line that says what went wrong (lower case)
ERROR_MARKS = ("error", "fatal", "exception", "cannot", "failed", "no such", "denied", "refused")


def one_line(
    text: str,
    *,
    limit: int = 300,
    marks: tuple[str, ...] = ERROR_MARKS,
    first: bool = False,
    otherwise: str | None = None,
) -> str:
    """The line of TEXT (a program's stderr, an error's message) that says what went wrong, for a
    job record or a message: the last line naming an error (one of MARKS, any case), else the last
    line (or OTHERWISE when given); with FIRST the first such line, else the first line. A quoted
    path or ``in file ...`` on the next line is added (uproot names the file so). Cut to LIMIT
    characters; empty for no text."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    if not lines:
        return ""
    marked = [i for i, ln in enumerate(lines) if any(m in ln.lower() for m in marks)]
    if not marked and otherwise is not None:
        return otherwise
    picks = marked or list(range(len(lines)))
    i = picks[0] if first else picks[-1]
    out = lines[i]
    if i + 1 < len(lines) and lines[i + 1].startswith(("in file", "'", '"')):
        out += " " + lines[i + 1]
    return out if len(out) <= limit else out[: limit - 3] + "..."


def last_lines(text: str, limit: int = 300) -> str:
    """The last whole lines of TEXT (a program's output) that fit in LIMIT characters, for a
    message: cut between lines, not inside one; a last line longer than LIMIT keeps its end."""
    kept: list[str] = []
    for line in reversed(text.strip().splitlines()):
        if len("\n".join([line, *kept])) > limit:
            break
        kept.insert(0, line)
    if not kept and text.strip():
        return "..." + text.strip()[-(limit - 3) :]
    return "\n".join(kept)


def ended(returncode: int) -> str:
    """How a program ended, for a one-line error: "exited 1", "was killed by SIGSEGV"."""
    if returncode < 0:
        try:
            return f"was killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"was killed by signal {-returncode}"
    return f"exited {returncode}"
