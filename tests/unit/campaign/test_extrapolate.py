"""Extrapolation planner, checked against the GSI numbers."""

from __future__ import annotations

import pytest

from afkit.campaign import extrapolate as ex
from afkit.errors import UsageError


def test_ten_petabytes_a_day_is_115_gb_per_second() -> None:
    assert ex.parse_rate("10PB/24h") == pytest.approx(115.74e9, rel=1e-3)
    assert ex.parse_rate("115GB/s") == pytest.approx(115e9)
    assert ex.parse_rate("12.5 MB/s") == pytest.approx(12.5e6)
    assert ex.parse_rate("1GiB/s") == 2**30


def test_gsi_paper_numbers() -> None:
    per_job = ex.parse_rate("32GB/s") / 2500  # 12.8 MB/s per job
    assert per_job == pytest.approx(12.8e6)
    p = ex.plan(ex.parse_rate("115GB/s"), per_job, ex.parse_rate("32GB/s"))
    assert 8800 <= p.jobs <= 9200  # "about 9000 jobs"
    assert p.jobs == 8985
    assert p.servers == 4
    p125 = ex.plan(ex.parse_rate("115GB/s"), ex.parse_rate("12.5MB/s"))
    assert p125.jobs == 9200
    assert p125.servers is None
    assert "9200 jobs at 12.5 MB/s per job" in p125.describe()


def test_exact_multiples_do_not_round_up() -> None:
    assert ex.plan(100.0, 10.0).jobs == 10


@pytest.mark.parametrize("bad", ["fast", "10PB", "10XB/s", "1PB/fortnight"])
def test_bad_rates(bad: str) -> None:
    with pytest.raises(UsageError):
        ex.parse_rate(bad)


def test_rates_must_be_positive() -> None:
    with pytest.raises(UsageError):
        ex.plan(1e9, 0)
