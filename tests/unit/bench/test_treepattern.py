"""The tree-pattern rule (afkit.bench.treepattern)."""

from __future__ import annotations

import pytest

from afkit.bench import treepattern as tp


def test_plain_name_matches_only_the_top_level_tree() -> None:
    assert tp.select("events", ["events;1", "DF_1/events;1"]) == ["events"]


def test_wildcard_matches_every_df_folder() -> None:
    keys = ["DF_1;1/O2track;1", "DF_1;1/O2collision;1", "DF_7;1/O2track;1", "O2track;1"]
    assert tp.select("DF_*/O2track", keys) == ["DF_1/O2track", "DF_7/O2track"]


def test_wildcards_do_not_cross_slashes() -> None:
    assert not tp.matches("DF_*", "DF_1/O2track")
    assert not tp.matches("*/O2track", "a/b/O2track")


def test_match_is_case_sensitive() -> None:
    assert not tp.matches("DF_*/o2track", "DF_1/O2track")


def test_natural_order_and_each_once() -> None:
    keys = ["DF_10/O2track;1", "DF_2/O2track;2", "DF_2/O2track;1"]
    assert tp.select("DF_*/O2track", keys) == ["DF_2/O2track", "DF_10/O2track"]


def test_cycles_are_stripped() -> None:
    assert tp.strip_cycles("DF_1;1/O2track;3") == "DF_1/O2track"


@pytest.mark.parametrize("pattern", ["DF_*/O2track", "O2tr?ck", "DF_[12]/x"])
def test_is_pattern(pattern: str) -> None:
    assert tp.is_pattern(pattern)


def test_plain_path_is_no_pattern() -> None:
    assert not tp.is_pattern("DF_1/O2track")


@pytest.mark.parametrize("bad", ["", "/events", "DF_1/", "DF_1//O2track"])
def test_check_refuses_empty_segments(bad: str) -> None:
    assert tp.check(bad) is not None


def test_check_accepts_a_pattern() -> None:
    assert tp.check("DF_*/O2track") is None
