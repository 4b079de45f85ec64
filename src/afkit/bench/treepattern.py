"""Which trees of a ROOT file a tree pattern names: one rule for every reader of afkit.

A pattern is matched against a tree's key path in the file, directories joined with ``/``
(``events``, ``DF_2336986275012608/O2track``), with shell wildcards that do not cross ``/``:
``*`` any run of characters but ``/``, ``?`` one character but ``/``, ``[...]`` a set (``[!...]``
its complement). This is fnmatch(3) with ``FNM_PATHNAME``, which afkit's ROOT reader macro calls
(afkit.bench.rootread); a pattern without ``/`` therefore names trees at the top of the file only:
``DF_*/O2track`` every DF folder's track table, ``*`` every top-level tree. Standard library only.
"""

from __future__ import annotations

import functools
import re


@functools.lru_cache(maxsize=256)
def _compile(pattern: str) -> re.Pattern[str]:
    out, i, n = [], 0, len(pattern)
    while i < n:
        c = pattern[i]
        i += 1
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            j = i + (1 if i < n and pattern[i] in "!^" else 0)
            j += 1 if j < n and pattern[j] == "]" else 0
            while j < n and pattern[j] != "]":
                j += 1
            if j >= n:  # no closing bracket: a literal "["
                out.append(re.escape(c))
                continue
            body = pattern[i:j]
            negate = body[:1] in ("!", "^")
            body = body[1:] if negate else body
            body = body.replace("\\", "\\\\").replace("^", "\\^")
            out.append(f"[^/{body}]" if negate else f"(?!/)[{body}]")
            i = j + 1
        else:
            out.append(re.escape(c))
    return re.compile("".join(out) + r"\Z", re.DOTALL)


def matches(pattern: str, path: str) -> bool:
    """Whether tree key path PATH matches PATTERN (module docstring)."""
    return _compile(pattern).match(path) is not None


def select(patterns: list[str], paths: list[str]) -> list[str]:
    """The PATHS (in their order) that match any of PATTERNS."""
    return [p for p in paths if any(matches(pat, p) for pat in patterns)]
