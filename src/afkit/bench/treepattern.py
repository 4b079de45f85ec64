"""Tree patterns: which trees of a ROOT file an analysis benchmark reads.

One rule for every reader (the uproot engine, the uproot campaign payload, the ROOT payload):

- A tree's *path* is its key path in the file without cycle numbers: ``events``,
  ``DF_2261906081/O2track`` (a TTree ``O2track`` in the TDirectory ``DF_2261906081``).
- A *pattern* is a path whose segments may hold shell wildcards: ``*`` (any characters),
  ``?`` (one character), ``[...]`` (one of a set). Wildcards never cross ``/``: ``DF_*/O2track``
  matches ``DF_1/O2track`` but neither ``O2track`` nor ``DF_1/sub/O2track``. The match is
  case-sensitive and whole-path (a pattern without ``/`` only names top-level trees).
- The matching trees are read in *natural* order (``DF_2`` before ``DF_10``), each once.

This is fnmatch(3) with ``FNM_PATHNAME``, which afkit's ROOT reader macro calls
(afkit.bench.rootread): the tests check the two against each other.

Standard library only: the ROOT payload's driver runs it inside images without afkit's
dependencies.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from fnmatch import fnmatchcase

WILDCARDS = frozenset("*?[")


def strip_cycles(key: str) -> str:
    """``DF_1;1/O2track;3`` -> ``DF_1/O2track`` (uproot's and ROOT's key names carry cycles)."""
    return "/".join(part.split(";", 1)[0] for part in key.split("/"))


def is_pattern(pattern: str) -> bool:
    """True when PATTERN holds a wildcard (else it names one tree)."""
    return any(c in WILDCARDS for c in pattern)


def check(pattern: str) -> str | None:
    """Why PATTERN is not a usable tree pattern, or None."""
    if not pattern:
        return "the tree pattern is empty"
    if pattern.startswith("/") or pattern.endswith("/") or "//" in pattern:
        return f"tree pattern {pattern!r} has an empty path segment (write DIR/TREE, no leading '/')"
    return None


def matches(pattern: str, path: str) -> bool:
    """Whether the tree at PATH (cycles allowed) is named by PATTERN."""
    want = pattern.split("/")
    have = strip_cycles(path).split("/")
    return len(want) == len(have) and all(fnmatchcase(h, w) for h, w in zip(have, want, strict=True))


def natural_key(path: str) -> list[tuple[int, int | str]]:
    """Sort key: digit runs compare as numbers (``DF_2`` < ``DF_10``)."""
    return [(0, int(tok)) if tok.isdigit() else (1, tok) for tok in re.split(r"(\d+)", path) if tok]


def select(patterns: str | Iterable[str], paths: Iterable[str]) -> list[str]:
    """The paths (cycles stripped, each once) PATTERNS (one or several) name, in natural order."""
    wanted = [patterns] if isinstance(patterns, str) else list(patterns)
    found = {strip_cycles(p) for p in paths}
    return sorted((p for p in found if any(matches(w, p) for w in wanted)), key=natural_key)
