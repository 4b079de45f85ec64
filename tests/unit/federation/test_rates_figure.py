"""What ``afkit federation measure --figure`` draws: Gbit/s over time per site and cache scenario
(the measurement's JSON shape; no federation is brought up here)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from afkit_testbed.federation import measure
from afkit_testbed.federation.figure import draw_rates, rates_figure

T0 = 1795707150.0

# the reads of one `afkit federation measure` (rates of docs/federation.md, run 2): each read's
# [seconds since the first read, Gbit/s] per interval
READS = [
    ("same-site", "(no cache)", "gsi", [[0.4, 4.23]]),
    ("remote", "(no cache)", "frankfurt", [[1.2, 0.18], [2.1, 0.181]]),
    ("xcache", "cold", "frankfurt", [[3.6, 0.189], [4.5, 0.19]]),
    ("xcache", "warm", "frankfurt", [[6.2, 1.983]]),
    ("xcache-dca", "cold", "frankfurt", [[7.4, 0.19], [8.3, 0.19]]),
    ("xcache-dca", "warm", "frankfurt", [[10.0, 8.778]]),
    ("dcotf", "cold", "frankfurt", [[11.2, 0.19], [12.1, 0.19]]),
    ("dcotf", "warm", "frankfurt", [[13.8, 10.45]]),
]


def result() -> dict[str, Any]:
    rows = [
        {"read": f"{scen} {phase}", "scenario": scen, "phase": phase, "site": site, "timeline": tl,
         "gbps": max(p[1] for p in tl)}
        for scen, phase, site, tl in READS
    ]  # fmt: skip
    return {"wan_gbps": 0.2, "size": 32 << 20, "reader": "frankfurt", "storage": "gsi", "rows": rows}


def test_one_colour_per_site_and_cache_scenario_cold_then_warm() -> None:
    ax = rates_figure(result()).axes[0]
    labels = ax.get_legend_handles_labels()[1]
    assert labels == [
        "gsi: same-site (no cache)",
        "frankfurt: remote (no cache)",
        "frankfurt: xcache (cold then warm)",
        "frankfurt: xcache-dca (cold then warm)",
        "frankfurt: dcotf (cold then warm)",
        "cold read (not in the cache yet)",
        "warm read (cached) or no cache",
        "WAN link rate (200 Mbit/s)",
    ]
    lines = [ln for ln in ax.get_lines() if ln.get_marker() == "o" and len(ln.get_xdata())]  # type: ignore[arg-type]
    assert len(lines) == len(READS)  # one line per read: no line drawn across the pause between reads
    xcache = [ln for ln in lines if ln.get_color() == lines[2].get_color()]
    assert [list(ln.get_xdata()) for ln in xcache] == [[3.6, 4.5], [6.2]]  # type: ignore[arg-type]
    assert [list(ln.get_ydata()) for ln in xcache] == [[0.189, 0.19], [1.983]]  # type: ignore[arg-type]
    assert len({ln.get_color() for ln in lines}) == 5


def test_cold_reads_have_hollow_markers_and_warm_reads_filled_ones() -> None:
    ax = rates_figure(result()).axes[0]
    reads = [ln for ln in ax.get_lines() if ln.get_marker() == "o" and len(ln.get_xdata())]  # type: ignore[arg-type]
    hollow = [ln.get_ydata()[0] for ln in reads if ln.get_markerfacecolor() == "white"]  # type: ignore[index]
    assert hollow == [0.189, 0.19, 0.19]


def test_the_wan_capped_reads_are_not_flat_on_zero() -> None:
    ax = rates_figure(result()).axes[0]
    assert ax.get_yscale() == "log"
    assert ax.get_ylabel() == "throughput [Gbit/s] (log scale)"
    low, high = ax.get_ylim()
    assert low < 0.18 and high > 10.45 and high / low < 1000
    assert ax.get_xlabel() == "time since the measurement started [s]"


def test_no_text_of_the_rates_figure_is_cut(texts_outside: Callable[[Figure], list[str]]) -> None:
    assert texts_outside(rates_figure(result())) == []


def test_draw_rates_writes_a_png(tmp_path: Path) -> None:
    out = draw_rates(result(), tmp_path / "rates.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def bench_output(*intervals: tuple[float, float, float], start: str, end: str) -> str:
    """``afkit bench read``'s stdout: interval records (t - T0, bytes, covered), then the summary."""
    recs = [{"type": "interval", "t": T0 + t, "bytes": b, "covered": c} for t, b, c in intervals]
    recs.append({"type": "summary", "kind": "read", "gbps": 0.2, "start": start, "end": end})
    return "\n".join(json.dumps(r) for r in recs) + "\nafkit bench: read ...\n"


def test_a_read_is_placed_on_the_time_axis_by_its_intervals() -> None:
    # a read from T0+1.5 to T0+3.25 over three wall-clock seconds, 25 MB per full second
    out = bench_output((1, 12.5e6, 0.5), (2, 25e6, 1.0), (3, 6.25e6, 0.25),
                       start="2026-11-26T15:32:31.500Z", end="2026-11-26T15:32:33.250Z")  # fmt: skip
    summary = measure.parse_read(out)
    assert summary is not None and len(summary["intervals"]) == 3
    assert measure.timeline(summary, T0) == [[1.75, 0.2], [2.5, 0.2], [3.125, 0.2]]


def test_a_short_last_part_of_a_second_joins_the_one_before() -> None:
    # the last 50 ms brought 2.5 MB (buffered): alone 0.4 Gbit/s, twice the read's rate
    out = bench_output((1, 25e6, 1.0), (2, 2.5e6, 0.05),
                       start="2026-11-26T15:32:31.000Z", end="2026-11-26T15:32:32.050Z")  # fmt: skip
    summary = measure.parse_read(out)
    assert summary is not None
    assert measure.timeline(summary, T0) == [[1.525, round(27.5e6 * 8 / 1e9 / 1.05, 6)]]


def test_a_read_within_one_second_is_one_point() -> None:
    out = bench_output((5, 32e6, 0.03), start="2026-11-26T15:32:35.100Z", end="2026-11-26T15:32:35.130Z")
    summary = measure.parse_read(out)
    assert summary is not None
    assert measure.timeline(summary, T0) == [[5.115, round(32e6 * 8 / 1e9 / 0.03, 6)]]


def test_output_without_a_summary_is_none() -> None:
    assert measure.parse_read('{"type": "interval", "t": 1}\n') is None
