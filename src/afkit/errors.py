"""Exit codes shared by every afkit command (documented in README, section "Exit codes").

The shell scripts use the same numbers (``scripts/lib/common.sh``).
"""

from __future__ import annotations

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
