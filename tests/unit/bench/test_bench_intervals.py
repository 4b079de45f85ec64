"""Per-second accounting and the sum across clients."""

from __future__ import annotations

import pytest

from afkit.bench.intervals import IntervalCounter, Record, series_summary, sum_series


def _run(events: list[tuple[float, int]], start: float, end: float) -> list[Record]:
    out: list[Record] = []
    counter = IntervalCounter(out.append)
    counter.begin(start)
    for t, n in events:
        counter.add(t, n)
    counter.finish(end)
    return out


def test_bytes_land_in_the_second_they_complete() -> None:
    recs = _run([(100.2, 10), (100.9, 5), (101.1, 7), (102.5, 1)], start=100.0, end=102.6)
    assert [(r["t"], r["bytes"], r["ops"]) for r in recs] == [(100, 15, 2), (101, 7, 1), (102, 1, 1)]
    assert recs[0]["covered"] == 1.0
    assert recs[-1]["covered"] == pytest.approx(0.6)


def test_partial_first_second_rate_uses_covered_time() -> None:
    recs = _run([(100.75, 250_000_000)], start=100.5, end=101.0)
    assert recs[0]["covered"] == pytest.approx(0.5)
    assert recs[0]["gbps"] == pytest.approx(4.0)  # 2e9 bits over 0.5 s


def test_stalled_seconds_are_recorded_as_zero() -> None:
    recs = _run([(10.5, 1), (14.2, 2)], start=10.0, end=14.5)
    assert [(r["t"], r["bytes"]) for r in recs] == [(10, 1), (11, 0), (12, 0), (13, 0), (14, 2)]


def test_totals_and_gbps_in_decimal_units() -> None:
    out: list[Record] = []
    c = IntervalCounter(out.append)
    c.begin(0.0)
    c.add(0.5, 125_000_000)
    c.add(1.0, 125_000_000)
    c.finish(2.0)
    assert c.total_bytes == 250_000_000 and c.seconds == 2.0
    assert [r["gbps"] for r in out] == pytest.approx([1.0, 1.0])


def test_sum_aligns_clients_that_start_late_and_end_early() -> None:
    a = _run([(100.5, 10), (101.5, 10), (102.5, 10), (103.5, 10)], start=100.0, end=104.0)
    late = _run([(102.5, 5), (103.5, 5)], start=102.0, end=104.0)
    early = _run([(100.5, 1)], start=100.0, end=101.0)
    total = sum_series([a, late, early])
    assert [(r["t"], r["bytes"], r["clients"]) for r in total] == [
        (100, 11, 2),
        (101, 10, 1),
        (102, 15, 2),
        (103, 15, 2),
    ]
    summary = series_summary(total)
    assert summary["bytes"] == 51
    assert summary["max_clients"] == 2
    assert summary["steady_seconds"] == 3  # 100, 102, 103: full seconds with 2 clients
    assert summary["first_t"] == 100 and summary["last_t"] == 103


def test_sum_ignores_other_record_types_and_keeps_events() -> None:
    a: list[Record] = [{"type": "interval", "t": 5, "bytes": 1, "ops": 1, "events": 10, "covered": 1.0}]
    b: list[Record] = [
        {"type": "summary", "bytes": 999},
        {"type": "interval", "t": 5, "bytes": 2, "events": 3},
    ]
    (rec,) = sum_series([a, b])
    assert rec["bytes"] == 3 and rec["events"] == 13 and rec["clients"] == 2


def test_summing_already_summed_series_counts_their_clients() -> None:
    node1 = sum_series([_run([(1.5, 4)], 1.0, 2.0), _run([(1.5, 4)], 1.0, 2.0)])
    node2 = sum_series([_run([(1.5, 2)], 1.0, 2.0)])
    (rec,) = sum_series([node1, node2])
    assert rec["bytes"] == 10 and rec["clients"] == 3


def test_empty_summary() -> None:
    assert series_summary([])["bytes"] == 0


def test_half_second_intervals_lie_on_the_half_second_grid() -> None:
    out: list[Record] = []
    counter = IntervalCounter(out.append, width=0.5)
    counter.begin(100.25)
    for t, n in [(100.3, 10), (100.6, 20_000_000), (101.7, 5)]:
        counter.add(t, n)
    counter.finish(101.8)
    assert [(r["t"], r["bytes"]) for r in out] == [(100.0, 10), (100.5, 20_000_000), (101.0, 0), (101.5, 5)]
    assert out[0]["covered"] == pytest.approx(0.5)  # 100.25..100.5 of 100.0..100.5
    assert out[1]["mbps"] == pytest.approx(320.0)  # 160 Mbit in the interval's 0.5 s
    assert out[-1]["covered"] == pytest.approx(0.6)


def test_sum_of_half_second_series() -> None:
    def run(n: int) -> list[Record]:
        out: list[Record] = []
        c = IntervalCounter(out.append, width=0.5)
        c.begin(10.0)
        c.add(10.2, n)
        c.finish(10.5)
        return out

    (rec,) = sum_series([run(1_000_000), run(2_000_000)], width=0.5)
    assert (rec["t"], rec["bytes"], rec["clients"]) == (10.0, 3_000_000, 2)
    assert rec["mbps"] == pytest.approx(48.0)  # 24 Mbit in 0.5 s
