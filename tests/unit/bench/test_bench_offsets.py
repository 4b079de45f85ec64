"""Offset arithmetic of the read plans."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from afkit.bench.offsets import BlockPlan, ReplayPlan, RootLikePlan, parse_stride
from afkit.errors import UsageError


def test_sequential_blocks_cover_the_file_once() -> None:
    reqs = list(BlockPlan(block=100).requests(350))
    assert reqs == [[(0, 100)], [(100, 100)], [(200, 100)], [(300, 50)]]


def test_stride_formula_start_plus_block_plus_stride_times_k() -> None:
    plan = BlockPlan(block=10, stride=5, start=3)
    assert list(plan.offsets(60)) == [3 + 15 * k for k in range(4)]
    assert list(plan.requests(60))[-1] == [(48, 10)]


def test_last_block_is_truncated_at_the_end() -> None:
    assert list(BlockPlan(block=10, stride=5, start=3).requests(50))[-1] == [(48, 2)]


def test_random_is_a_permutation_of_the_blocks() -> None:
    size, block = 1000, 64
    offsets = list(BlockPlan(block=block, stride=None, seed=7).offsets(size))
    assert sorted(offsets) == list(range(0, size, block))
    assert offsets != sorted(offsets)
    assert offsets == list(BlockPlan(block=block, stride=None, seed=7).offsets(size))
    assert offsets != list(BlockPlan(block=block, stride=None, seed=8).offsets(size))


def test_random_order_is_drawn_when_the_requests_are_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    plan = BlockPlan(block=64, stride=None, seed=7)
    requests = plan.requests(1000)  # drawn now, not at the first next()
    monkeypatch.setattr(np.random, "default_rng", lambda *_a: pytest.fail("drawn again while reading"))
    assert sorted(off for [(off, _ln)] in requests) == list(range(0, 1000, 64))


def test_random_with_start_offset() -> None:
    offsets = sorted(BlockPlan(block=10, stride=None, start=5).offsets(40))
    assert offsets == [5, 15, 25, 35]


def test_file_shorter_than_one_block_is_one_short_read() -> None:
    assert list(BlockPlan(block=1 << 23).requests(1000)) == [[(0, 1000)]]


def test_start_beyond_end_reads_nothing() -> None:
    assert list(BlockPlan(block=10, start=100).requests(50)) == []


@pytest.mark.parametrize("kwargs", [{"block": 0}, {"block": 10, "stride": -1}, {"block": 10, "start": -5}])
def test_invalid_plans_are_usage_errors(kwargs: dict[str, int]) -> None:
    with pytest.raises(UsageError):
        BlockPlan(**kwargs)


def test_parse_stride() -> None:
    assert parse_stride("random") is None
    assert parse_stride("0") == 0
    assert parse_stride("1MiB") == 1 << 20
    with pytest.raises(UsageError):
        parse_stride("sideways")


def test_root_like_reads_are_small_disjoint_and_in_all_regions() -> None:
    size = 1 << 20
    plan = RootLikePlan(regions=4, per_region=3, seed=1)
    reqs = list(plan.requests(size))
    chunks = [c for r in reqs for c in r]
    assert all(0 < length < 3000 for _off, length in chunks)
    assert max(len(r) for r in reqs) == 12
    spans = sorted(chunks)
    for (o1, l1), (o2, _l2) in itertools.pairwise(spans):
        assert o1 + l1 <= o2, "chunks overlap"
    assert all(o + ln <= size for o, ln in chunks)
    regions_touched = {o * 4 // size for o, _ln in chunks}
    assert regions_touched == {0, 1, 2, 3}


def test_replay_groups_into_vectors_and_clips_to_size() -> None:
    plan = ReplayPlan(((0, 10), (100, 10), (200, 10), (995, 10), (2000, 5)), vector=2)
    assert list(plan.requests(1000)) == [[(0, 10), (100, 10)], [(200, 10), (995, 5)]]
