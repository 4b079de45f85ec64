"""Read-pattern traces: ``(offset, length)`` reads, optionally stamped with a time.

Formats read by :func:`load_trace`:

* CSV with a header naming ``offset`` and ``length`` (``time`` optional) or two bare columns;
* JSON: a list of ``[offset, length]`` pairs or of ``{"offset": .., "length": ..}`` objects;
* JSON lines of such objects (``afkit bench read --trace-out`` and ``afkit bench analysis --engine
  root --trace-out`` write these, with :func:`write_trace`).
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from afkit.errors import InvalidError, NotFoundError

if TYPE_CHECKING:
    from collections.abc import Iterable


@dataclass(frozen=True)
class TraceEntry:
    offset: int
    length: int
    time: float | None = None


def _entry(raw: Any, where: str) -> TraceEntry:
    try:
        if isinstance(raw, dict):
            offset, length, t = raw["offset"], raw["length"], raw.get("time")
        else:
            offset, length, t = raw[0], raw[1], (raw[2] if len(raw) > 2 else None)
        entry = TraceEntry(int(offset), int(length), None if t in (None, "") else float(t))
    except (KeyError, IndexError, TypeError, ValueError) as err:
        raise InvalidError(
            f"{where}: not an (offset, length) read: {raw!r}",
            hint="each read needs an integer offset and length",
        ) from err
    if entry.offset < 0 or entry.length <= 0:
        raise InvalidError(f"{where}: offset must be >= 0 and length > 0, got {raw!r}")
    return entry


def _from_csv(text: str, name: str) -> list[TraceEntry]:
    rows = [row for row in csv.reader(io.StringIO(text)) if row and not row[0].startswith("#")]
    if not rows:
        return []
    header = [cell.strip().lower() for cell in rows[0]]
    if "offset" in header and "length" in header:
        keys = header
        return [
            _entry(dict(zip(keys, row, strict=False)), f"{name}:{i + 2}") for i, row in enumerate(rows[1:])
        ]
    return [_entry(row, f"{name}:{i + 1}") for i, row in enumerate(rows)]


def _from_json(text: str, name: str) -> list[TraceEntry]:
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise InvalidError(f"{name}: invalid JSON: {err}") from err
        return [_entry(item, f"{name}[{i}]") for i, item in enumerate(data)]
    entries = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as err:
            raise InvalidError(f"{name}:{lineno}: invalid JSON line: {err}") from err
        if isinstance(item, dict) and item.get("type", "read") != "read":
            continue
        entries.append(_entry(item, f"{name}:{lineno}"))
    return entries


def load_trace(path: Path) -> list[TraceEntry]:
    if not path.is_file():
        raise NotFoundError(f"trace file '{path}' does not exist")
    text = path.read_text()
    stripped = text.lstrip()
    if path.suffix in {".json", ".jsonl"} or stripped.startswith(("[", "{")):
        entries = _from_json(text, str(path))
    else:
        entries = _from_csv(text, str(path))
    if not entries:
        raise InvalidError(
            f"trace '{path}' holds no reads", hint="record one with 'afkit bench read --trace-out'"
        )
    return entries


def write_trace(path: Path, reads: Iterable[tuple[float, int, int]]) -> None:
    """PATH (temporary name, then renamed): one JSON line per read, ``{"time", "offset", "length"}``
    (time: Unix seconds after the read)."""
    from afkit.bench.records import JsonlWriter

    with JsonlWriter(path) as out:
        for t, offset, length in reads:
            out.write({"time": round(t, 6), "offset": offset, "length": length})
