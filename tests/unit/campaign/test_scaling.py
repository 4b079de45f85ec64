"""GSI train scaling: only jobs started in the first minute; throughput when 98 % have finished."""

from __future__ import annotations

from dataclasses import replace

import pytest

from afkit.campaign.rows import IntervalRow, JobRow
from afkit.campaign.scaling import WavePoint, best_wave, bytes_until, scaling_series, wave_point

MB = 1e6


def job(i: int, start: float, end: float, nbytes: float, wave_size: int = 5, status: str = "ok") -> JobRow:
    return JobRow(
        id=f"j{i}",
        type="train",
        bench="t",
        site="s",
        dataset="d",
        scenario="origin",
        access="direct",
        wave_size=wave_size,
        repetition=0,
        status=status,
        start=start,
        processing_start=start,
        end=end,
        bytes=int(nbytes),
    )


WAVE = [
    job(0, 1000, 1100, 100 * MB),
    job(1, 1010, 1060, 50 * MB),
    job(2, 1020, 1120, 100 * MB),
    job(3, 1030, 1080, 50 * MB),
    job(4, 1100, 1150, 50 * MB),  # started 100 s after the first: not counted in the 98 % series
]


def test_first_minute_and_98_percent() -> None:
    p = wave_point(WAVE)
    assert p is not None
    assert p.selected == 4
    assert p.t98 == pytest.approx(120)  # ceil(0.98 * 4) = 4: the last of the four, at 1120
    assert p.throughput_98 == pytest.approx(300 * MB / 120)
    assert p.throughput_all == pytest.approx(350 * MB / 150)
    assert p.per_job == pytest.approx(300 * MB / 120 / 4)


def test_partial_bytes_at_the_evaluation_time() -> None:
    p = wave_point(WAVE, fraction=0.75)  # third finished job: t = 1100
    assert p is not None
    assert p.t98 == pytest.approx(100)
    # job 2 (1020..1120) has read 80 % of its 100 MB by 1100
    assert p.throughput_98 == pytest.approx((100 + 50 + 80 + 50) * MB / 100)


def test_98_percent_of_fifty_jobs_is_the_49th() -> None:
    jobs = [job(i, 0, 100 + i, MB, wave_size=50) for i in range(50)]
    p = wave_point(jobs)
    assert p is not None
    assert p.t98 == pytest.approx(148)  # the 49th end time
    assert p.selected == 50


def test_failed_jobs_are_not_selected() -> None:
    jobs = [*WAVE[:3], job(3, 1030, 1080, 50 * MB, status="failed")]
    p = wave_point(jobs)
    assert p is not None
    assert p.selected == 3


def test_interval_samples_are_used_when_present() -> None:
    j = job(0, 0, 10, 100)
    samples = [IntervalRow("j0", t, b, time=t) for t, b in ((2.0, 60), (5.0, 30), (10.0, 10))]
    assert bytes_until(j, 5, samples) == 90
    assert bytes_until(j, 5, None) == 50  # uniform rate


def test_series_orders_waves_by_concurrency() -> None:
    small = [job(10, 0, 10, 10 * MB, wave_size=1)]
    big = [replace(r, wave_size=5) for r in WAVE]
    points = scaling_series(big + small + [replace(small[0], type="read", id="x")])
    assert [p.concurrent for p in points] == [1, 5]
    assert points[0].throughput_98 == pytest.approx(1 * MB)


def test_the_best_wave_is_the_one_with_the_highest_aggregate_throughput() -> None:
    slow = WavePoint(("a",), 1, 1, 2.0, 100.0, 90.0, 100.0)
    fast = WavePoint(("a",), 4, 4, 2.0, 300.0, 280.0, 75.0)
    assert best_wave([slow, fast, slow]) is fast
