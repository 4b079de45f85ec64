"""JSON-lines output of the benchmarks and the provenance stamped on every summary."""

from __future__ import annotations

import json
import os
import platform
import socket
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import IO, Any, TypedDict

from afkit import __version__

# A JSON object read back from a result file: json.loads gives it, nothing has checked its keys
# (the reader picks records by their "type" and converts the values it uses).
JsonObject = dict[str, Any]


class Provenance(TypedDict):
    """``provenance`` of every summary record."""

    host: str
    afkit_version: str
    python: str
    platform: str
    pid: int
    argv: list[str]
    args: dict[str, object]  # the command's options (afkit.bench.output.public_args)
    container: str | None


def provenance(args: dict[str, object] | None = None) -> Provenance:
    """Who measured what, where and with which software."""
    return {
        "host": socket.gethostname(),
        "afkit_version": __version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "pid": os.getpid(),
        "argv": list(sys.argv),
        "args": args or {},
        "container": _container(),
    }


def _container() -> str | None:
    if os.environ.get("APPTAINER_CONTAINER") or os.environ.get("SINGULARITY_CONTAINER"):
        return os.environ.get("APPTAINER_CONTAINER") or os.environ.get("SINGULARITY_CONTAINER")
    return None


def _plain(obj: Any) -> Any:
    """numpy scalars and paths as plain JSON values."""
    if hasattr(obj, "item"):
        return obj.item()
    return str(obj)


def utc_iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int((t % 1) * 1000):03d}Z"


class JsonlWriter:
    """Writes records one per line, flushed as they come.

    A file is written under a temporary name beside it and renamed into place on close (also
    after an error, so the intervals measured so far are kept); ``-`` or ``None`` is stdout.
    """

    def __init__(self, path: str | os.PathLike[str] | None) -> None:
        self.path = None if path is None or path == "-" else Path(path)
        self._tmp: Path | None = None
        self._fh: IO[str]
        if self.path is None:
            self._fh = sys.stdout
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.part")
            self._fh = self._tmp.open("w", encoding="utf-8")

    def write(self, record: Mapping[str, object]) -> None:
        self._fh.write(json.dumps(record, separators=(",", ":"), default=_plain) + "\n")
        self._fh.flush()

    def close(self) -> None:
        if self._tmp is None or self.path is None:
            self._fh.flush()
            return
        if not self._fh.closed:
            self._fh.close()
            os.replace(self._tmp, self.path)

    def discard(self) -> None:
        """Drop what was written (nothing was measured); stdout cannot be taken back."""
        if self._tmp is None:
            self._fh.flush()
            return
        if not self._fh.closed:
            self._fh.close()
        self._tmp.unlink(missing_ok=True)

    def __enter__(self) -> JsonlWriter:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def read_jsonl(path: Path) -> list[JsonObject]:
    from afkit.errors import InvalidError, NotFoundError

    if not path.is_file():
        raise NotFoundError(f"result file '{path}' does not exist")
    out = []
    for lineno, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError as err:
            raise InvalidError(f"{path}:{lineno}: not a JSON line: {err}") from err
    return out
