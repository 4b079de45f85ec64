"""The study criteria on recorded-shaped data, including data where each must fail."""

from __future__ import annotations

import pytest

from afkit.study import criteria

# a knee: 2.5 MB/s per job up to 10 jobs, then the link's 25 MB/s
KNEE = [(2, 5.1), (4, 9.8), (6, 15.2), (8, 19.7), (12, 24.6), (16, 24.9), (20, 24.4)]
LINE = [(3, 7.4), (6, 15.1), (12, 29.8), (18, 44.6), (24, 60.3)]


def test_knee_passes_on_a_rise_then_a_plateau() -> None:
    v = criteria.knee(KNEE, r2_min=0.95, flat_max=1.25, bend_max=0.8)
    assert v.status == criteria.PASS
    assert v.values["knee_jobs"] == 8
    assert v.values["plateau"] == pytest.approx(24.63, abs=0.01)


def test_knee_fails_on_a_straight_line() -> None:
    """A series that never bends has no plateau: the knee claim fails (its 'plateau' still rises)."""
    v = criteria.knee([*LINE, (30, 75.0), (36, 90.2)], r2_min=0.95, flat_max=1.25, bend_max=0.8)
    assert v.status == criteria.FAIL


def test_knee_fails_when_the_rise_is_not_linear() -> None:
    noisy = [(2, 5.0), (4, 18.0), (6, 7.0), (8, 20.0), (12, 24.6), (16, 24.9), (20, 24.4)]
    v = criteria.knee(noisy, r2_min=0.95, flat_max=1.25, bend_max=0.8)
    assert v.status == criteria.FAIL
    assert v.values["r2"] < 0.95


def test_knee_needs_five_points() -> None:
    v = criteria.knee(KNEE[:4], r2_min=0.95, flat_max=1.25, bend_max=0.8)
    assert v.status == criteria.NOT_JUDGEABLE
    assert "4 points" in v.measured


def test_linear_passes_on_a_line() -> None:
    v = criteria.linear(LINE, r2_min=0.95, tail_min=0.8)
    assert v.status == criteria.PASS
    assert v.values["r2"] > 0.99


def test_linear_fails_on_a_plateau() -> None:
    v = criteria.linear(KNEE, r2_min=0.95, tail_min=0.8)
    assert v.status == criteria.FAIL
    assert v.values["tail"] < 0.8


def test_agree_within_the_ratio() -> None:
    assert criteria.agree({"server": 2.4, "all": 2.5}, ratio_max=1.3).status == criteria.PASS


def test_agree_fails_beyond_the_ratio() -> None:
    v = criteria.agree({"server": 2.4, "all": 4.0}, ratio_max=1.3)
    assert v.status == criteria.FAIL
    assert v.values["ratio"] == pytest.approx(4.0 / 2.4)


def test_agree_needs_two_series() -> None:
    assert criteria.agree({"server": 2.4}, ratio_max=1.3).status == criteria.NOT_JUDGEABLE


def test_medians_take_each_x_over_the_repetitions() -> None:
    assert criteria.medians([[(1, 2.0), (2, 4.0)], [(1, 4.0), (2, 6.0)]]) == [(1, 3.0), (2, 5.0)]


def test_spread_names_the_repetitions() -> None:
    per_rep = [
        criteria.linear(LINE, r2_min=0.95, tail_min=0.8),
        criteria.linear(KNEE, r2_min=0.95, tail_min=0.8),
    ]
    v = criteria.with_spread(per_rep[0], per_rep, "r2")
    assert "1 of 2 repetitions pass alone" in v.measured


# per input location, (low, high) seconds over the worker-node sites
NEAR = {"gsi": (2.0, 2.6), "frankfurt": (2.05, 2.62), "alpes": (2.1, 2.7)}


def test_spread_beyond_shift_passes_when_the_wn_spread_dominates() -> None:
    v = criteria.spread_beyond_shift(NEAR, ratio_min=1.0)
    assert v.status == criteria.PASS
    assert v.values["ratio"] == pytest.approx(0.6 / 0.1)  # the smallest: gsi (and alpes), 0.6 s over 0.1 s


def test_spread_beyond_shift_fails_when_locations_are_further_apart() -> None:
    v = criteria.spread_beyond_shift({"a": (2.0, 2.2), "b": (3.0, 3.2)}, ratio_min=1.0)
    assert v.status == criteria.FAIL
    assert v.values["ratio"] == pytest.approx(0.2)


def test_spread_beyond_shift_needs_two_locations() -> None:
    assert criteria.spread_beyond_shift({"a": (1.0, 2.0)}, ratio_min=1.0).status == criteria.NOT_JUDGEABLE


def test_shift_within_spread_passes_a_small_shift_and_fails_a_large_one() -> None:
    small = criteria.shift_within_spread({"a": ((2.1, 2.7), (2.0, 2.6))}, ratio_max=1.0)
    assert small.status == criteria.PASS and small.values["ratio"] == pytest.approx(0.1 / 0.6)
    large = criteria.shift_within_spread({"a": ((1600, 3000), (1500, 2000))}, ratio_max=1.0)
    assert large.status == criteria.FAIL and large.values["ratio"] == pytest.approx(1.1)


def test_shift_within_spread_of_a_reference_without_spread_fails_any_shift() -> None:
    v = criteria.shift_within_spread({"a": ((2.1, 2.1), (2.0, 2.0))}, ratio_max=1.0)
    assert v.status == criteria.FAIL and v.values["ratio"] == float("inf")


def test_variation_ratio_passes_an_order_of_magnitude_against_twice() -> None:
    v = criteria.variation_ratio([100, 400, 1000], [5, 10], ratio_min=2.0)
    assert v.status == criteria.PASS and v.values["ratio"] == pytest.approx(5.0)


def test_variation_ratio_fails_when_both_vary_alike() -> None:
    assert criteria.variation_ratio([2.8, 4.0], [0.3, 0.4], ratio_min=2.0).status == criteria.FAIL


def test_variation_ratio_needs_two_positive_values_each() -> None:
    v = criteria.variation_ratio([2.8], [0.3, 0.4], ratio_min=2.0)
    assert v.status == criteria.NOT_JUDGEABLE and "the first set has 1" in v.measured


def test_all_of_fails_with_one_failing_part_and_is_unjudged_with_one_unjudged() -> None:
    ok = criteria.spread_beyond_shift(NEAR, ratio_min=1.0)
    bad = criteria.spread_beyond_shift({"a": (2.0, 2.2), "b": (3.0, 3.2)}, ratio_min=1.0)
    nj = criteria.spread_beyond_shift({"a": (2.0, 2.2)}, ratio_min=1.0)
    assert criteria.all_of({"x": ok, "y": ok}).status == criteria.PASS
    assert criteria.all_of({"x": ok, "y": bad}).status == criteria.FAIL
    assert criteria.all_of({"x": bad, "y": nj}).status == criteria.NOT_JUDGEABLE
    assert criteria.all_of({"x": ok, "y": bad}).values["y_ratio"] == pytest.approx(0.2)


# --- the disk-server study's criteria (prague-diskserver) -------------------------------------------


def test_runtime_cut_passes_on_shorter_tuned_runs() -> None:
    v = criteria.runtime_cut([10.0, 10.4, 9.8], [7.9, 8.1, 7.6], cut_min=0.05)
    assert v.status == criteria.PASS and v.values["cut"] == pytest.approx(1 - 7.9 / 10.0)
    assert "per pair" in v.measured


def test_runtime_cut_fails_when_tuning_gains_less_than_the_threshold() -> None:
    assert criteria.runtime_cut([10.0, 10.2], [9.8, 10.1], cut_min=0.05).status == criteria.FAIL


def test_runtime_cut_without_runs_of_one_setting_is_not_judgeable() -> None:
    assert criteria.runtime_cut([10.0], [], cut_min=0.05).status == criteria.NOT_JUDGEABLE


def test_share_below_counts_the_reads_under_the_limit() -> None:
    v = criteria.share_below([100, 200, 2999, 16000], limit=3000, share_min=0.5)
    assert v.status == criteria.PASS and v.values["share"] == 0.75
    assert criteria.share_below([100, 16000, 20000], limit=3000, share_min=0.5).status == criteria.FAIL


def test_offset_bands_count_the_parts_of_the_file_read_in_each_span_of_time() -> None:
    size = 1000.0
    # two spans of time: the first reads two parts (0-20, 500-510), the second three
    reads = [
        (0.0, 0),
        (0.1, 10),
        (0.2, 20),
        (0.3, 500),
        (0.4, 510),
        (1.1, 100),
        (1.2, 600),
        (1.3, 900),
        (2.0, 910),
    ]
    assert criteria.bands_per_window(reads, size, windows=2, gap=0.05) == [2, 3]
    assert criteria.offset_bands(reads, size, windows=2, gap=0.05, bands_max=3).status == criteria.PASS
    assert criteria.offset_bands(reads, size, windows=2, gap=0.05, bands_max=2).status == criteria.FAIL


def test_offset_bands_of_scattered_reads_fail() -> None:
    reads = [(i / 100, (i * 37 % 100) * 10.0) for i in range(100)]  # every span reads all over the file
    v = criteria.offset_bands(reads, 1000.0, windows=10, gap=0.05, bands_max=4)
    assert v.status == criteria.FAIL and v.values["median_bands"] > 4


def test_fewer_reads_is_a_ratio_of_counts() -> None:
    assert criteria.fewer_reads(300, 1154, ratio_max=0.5).status == criteria.PASS
    assert criteria.fewer_reads(900, 1154, ratio_max=0.5).status == criteria.FAIL
    assert criteria.fewer_reads(10, 0, ratio_max=0.5).status == criteria.NOT_JUDGEABLE
