"""Tree patterns (afkit.bench.treepattern): the rule of ROOT's reader macro, fnmatch(3) with
FNM_PATHNAME, checked against the C library's own fnmatch."""

from __future__ import annotations

import ctypes
import ctypes.util

import pytest

from afkit.bench.treepattern import matches, select

FNM_PATHNAME = 1  # <fnmatch.h>
LIBC = ctypes.CDLL(ctypes.util.find_library("c"))

CASES = [
    ("events", "events"),
    ("events", "DF_1/events"),
    ("DF_*/O2track", "DF_2336986275012608/O2track"),
    ("DF_*/O2track", "DF_1/O2track_iu"),
    ("DF_*/O2track", "DF_1/sub/O2track"),
    ("*", "DF_1/O2track"),
    ("*", "O2track"),
    ("*/*", "DF_1/O2track"),
    ("DF_?/O2*", "DF_7/O2collision"),
    ("DF_?/O2*", "DF_17/O2collision"),
    ("DF_[0-9]*/O2track", "DF_3/O2track"),
    ("DF_[!0-9]*/O2track", "DF_3/O2track"),
    ("DF_[!0-9]*/O2track", "DF_x/O2track"),
    ("a[/]b", "a/b"),
    ("x[", "x["),
    ("O2track.fX", "O2track.fX"),
    ("O2track.fX", "O2trackAfX"),
]


@pytest.mark.parametrize(("pattern", "path"), CASES)
def test_a_pattern_matches_as_fnmatch_with_fnm_pathname(pattern: str, path: str) -> None:
    libc = LIBC.fnmatch(pattern.encode(), path.encode(), FNM_PATHNAME) == 0
    assert matches(pattern, path) is libc


def test_a_pattern_without_a_slash_names_top_level_trees_only() -> None:
    paths = ["events", "DF_1/O2track", "DF_2/O2track", "DF_2/O2collision"]
    assert select(["*"], paths) == ["events"]
    # natural order (afkit.bench.treepattern)
    assert select(["DF_*/O2track", "events"], paths) == ["DF_1/O2track", "DF_2/O2track", "events"]
