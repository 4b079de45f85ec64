"""The campaign figures as matplotlib objects: what each series is labelled, the axes' scales, and
that no text (tick label, title, legend) is cut at the figure's edge."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from afkit.campaign import aggregate as agg
from afkit.campaign import compare, figures
from afkit.campaign.cells import CellComparison
from afkit.campaign.contract import JobRecord
from afkit.campaign.rows import IntervalRow, JobRow, read_intervals, read_jobs


def typed(records: list[dict[str, Any]]) -> list[JobRecord]:
    """The records as the aggregator reads them (afkit.campaign.contract.JobRecord)."""
    return [JobRecord(**r) for r in records]


FIX = Path(__file__).parent / "fixtures" / "compare"
TextsOutside = Callable[[Figure], list[str]]


def rec(i: int, gbps: float, **kw: Any) -> dict[str, Any]:
    """A read job of 3 s whose intervals carry GBPS Gbit/s each."""
    per_s = gbps * 1e9 / 8
    base = {
        "campaign": "fed", "bench": "read", "type": "read", "id": f"r{i}", "site": "frankfurt",
        "dataset": "d", "scenario": "origin", "access": "direct", "clients": 1, "wave_size": 1,
        "repetition": 0, "interval": 1.0, "status": "ok", "start": 0.0, "end": 4.0,
        "processing_start": 1.0, "url": "root://10.77.0.2:1094//d/f",
        "steps": {"setup": 0.5, "stage_in": 0.0, "processing": 3.0, "stage_out": 0.1},
        "bytes": round(3 * per_s), "events": 0,
        "intervals": [{"t": t, "time": 1.0 + t, "bytes": per_s} for t in (0.0, 1.0, 2.0)],
    }  # fmt: skip
    base.update(kw)
    return base


def tables(recs: list[dict[str, Any]]) -> tuple[list[JobRow], list[IntervalRow]]:
    """RECS aggregated into jobs.csv and intervals.csv and read back as typed rows."""
    with tempfile.TemporaryDirectory() as tmp:
        jobs, intervals = Path(tmp) / "jobs.csv", Path(tmp) / "intervals.csv"
        agg.aggregate(typed(recs), jobs, intervals)
        return read_jobs(jobs), read_intervals(intervals)


def test_the_text_check_finds_a_cut_label(texts_outside: TextsOutside) -> None:
    """The check itself can fail: a figure too narrow for its tick labels (no layout engine)."""
    fig = Figure(figsize=(3, 3))
    ax = fig.subplots()
    ax.set_yticks([0, 1], ["a very long cell label that cannot fit", "another one"])
    assert texts_outside(fig) == ["a very long cell label that cannot fit", "another one"]


def wan_and_local() -> list[dict[str, Any]]:
    """A WAN-capped remote read (0.2 Gbit/s), a warm cache (5 Gbit/s) and a copy-mode job that read
    its local scratch copy at 12 Gbit/s after staging it in from the remote endpoint."""
    copy_steps = {"setup": 0.5, "stage_in": 1.4, "processing": 3.0, "stage_out": 0.1}
    return [
        rec(0, 0.2),
        rec(1, 5.0, scenario="xcache", url="root://10.77.0.3:1095//d/f"),
        rec(2, 12.0, access="copy", steps=copy_steps),
    ]


def test_copy_mode_series_are_reads_of_the_local_copy() -> None:
    series = figures.rate_series(*tables(wan_and_local()))
    assert {k[0] for k in series} == {
        "frankfurt <- 10.77.0.2:1094",
        "frankfurt <- 10.77.0.3:1095",
        "frankfurt <- local copy (staged from 10.77.0.2:1094)",
    }
    fig = figures.rate_vs_time_figure(*tables(wan_and_local()))
    assert fig is not None
    labels = fig.axes[0].get_legend_handles_labels()[1]
    assert "frankfurt <- local copy (staged from 10.77.0.2:1094): origin copy 1cl" in labels
    assert "frankfurt <- 10.77.0.2:1094: origin copy 1cl" not in labels


def test_the_step_table_names_where_a_copy_was_staged_in_from() -> None:
    rows, _ = tables(wan_and_local())
    steps = {(s["scenario"], s["access"]): s for s in figures.step_ranges(rows)}
    copy, direct = steps[("origin", "copy")], steps[("origin", "direct")]
    assert (copy["staged_from"], copy["read_from"]) == ("10.77.0.2:1094", "local copy")
    assert copy["stage_in"] == (1.4, 1.4)
    assert (direct["staged_from"], direct["read_from"]) == ("", "10.77.0.2:1094")


def test_the_report_step_table_shows_the_stage_in_endpoint(tmp_path: Path) -> None:
    from afkit.campaign import report

    recs = wan_and_local()
    agg.aggregate(typed(recs), tmp_path / "jobs.csv", tmp_path / "intervals.csv")
    html = report.render_tables(tmp_path / "jobs.csv", tmp_path / "intervals.csv", tmp_path / "r").read_text()
    assert "<th>read from</th><th>stage-in from</th>" in html
    assert "<td>local copy</td><td>10.77.0.2:1094</td>" in html


def test_rates_orders_of_magnitude_apart_get_a_log_axis() -> None:
    fig = figures.rate_vs_time_figure(*tables(wan_and_local()))
    assert fig is not None
    ax = fig.axes[0]
    assert ax.get_yscale() == "log"
    assert ax.get_ylabel() == "throughput [Gbit/s] (log scale)"
    # the WAN-capped series is drawn at its rate, inside the axis, not flat on zero
    low, high = ax.get_ylim()
    remote = "frankfurt <- 10.77.0.2:1094: origin direct"
    wan = next(ln for ln in ax.get_lines() if str(ln.get_label()).startswith(remote))
    assert low < min(wan.get_ydata()) == 0.2 < high  # type: ignore[operator]


def test_rates_of_one_order_keep_a_linear_axis() -> None:
    fig = figures.rate_vs_time_figure(*tables([rec(0, 0.2), rec(1, 0.5, scenario="xcache")]))
    assert fig is not None
    assert fig.axes[0].get_yscale() == "linear"
    assert fig.axes[0].get_ylabel() == "throughput [Gbit/s]"


def test_read_vs_clients_gets_the_log_axis_too() -> None:
    rows, _ = tables([rec(0, 0.2), rec(1, 5.0, scenario="xcache"), rec(2, 0.2, clients=2, id="r9")])
    fig = figures.vs_clients_figure(rows, "read")
    assert fig is not None
    assert fig.axes[0].get_yscale() == "log"


def test_no_figure_text_is_cut(texts_outside: TextsOutside) -> None:
    recs = [rec(i, 0.2 * (i + 1), site=f"a-site-with-a-rather-long-name-{i}", scenario=f"xcache-dca-{i}")
            for i in range(8)]  # fmt: skip
    rows, intervals = tables(recs)
    made = [figures.rate_vs_time_figure(rows, intervals), figures.vs_clients_figure(rows, "read")]
    for fig in made:
        assert fig is not None
        assert texts_outside(fig) == []


def _long_cells() -> list[CellComparison]:
    base, again = read_jobs(FIX / "base.jobs.csv"), read_jobs(FIX / "again.jobs.csv")
    longer = {"site": "a-worker-node-site-with-a-long-name", "dataset": "nanoaod-ttbar-2018"}
    renamed = [[replace(r, **longer) for r in rows] for rows in (base, again)]
    return compare.compare(base, again) + compare.compare(*renamed)


def test_comparison_labels_are_never_cut(texts_outside: TextsOutside) -> None:
    cells = _long_cells()
    fig = figures.comparison_figure(cells, 0.1)
    assert fig is not None
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels[2] == (
        "rd a-worker-node-site-with-a-long-name nanoaod-ttbar-2018 origin direct 1cl (inconclusive, 5/5 rep.)"
    )
    assert texts_outside(fig) == []


def test_the_comparison_shades_the_tolerance_band_and_colours_verdicts() -> None:
    base = read_jobs(FIX / "base.jobs.csv")
    # the throttled run stands for the same cells on a slower endpoint (test_compare's _rows)
    throttled = [replace(r, block_size="1m") for r in read_jobs(FIX / "throttled.jobs.csv")]
    cells = compare.compare(base, read_jobs(FIX / "again.jobs.csv")) + compare.compare(base, throttled)
    fig = figures.comparison_figure(cells, 0.1)
    assert fig is not None
    ax = fig.axes[0]
    band = [p for p in ax.patches if p.get_label() == "same: within 10%"]
    assert len(band) == 1
    x0, x1 = (band[0].get_x(), band[0].get_x() + band[0].get_width())  # type: ignore[attr-defined]
    assert (round(x0, 6), round(x1, 6)) == (0.9, 1.1)
    colours = [c.lines[0].get_color() for c in ax.containers]  # type: ignore[attr-defined]
    assert colours == ["tab:orange", "tab:orange", "tab:red", "tab:red"]
    assert ax.get_xscale() == "log"  # ratios from 0.08 to 2: an order of magnitude and more


def test_a_series_averaged_over_repetitions_says_so() -> None:
    recs = [rec(0, 0.2), rec(1, 0.4, repetition=1, id="r1"), rec(2, 5.0, scenario="xcache")]
    fig = figures.rate_vs_time_figure(*tables(recs))
    assert fig is not None
    assert fig.axes[0].get_legend_handles_labels()[1] == [
        "frankfurt <- 10.77.0.2:1094: origin direct 1cl, mean of 2 repetitions",
        "frankfurt <- 10.77.0.2:1094: xcache direct 1cl",
    ]


def test_the_clients_axis_has_a_tick_at_each_client_count_run() -> None:
    rows, _ = tables([rec(0, 0.2), rec(1, 0.3, clients=4, id="r4")])
    fig = figures.vs_clients_figure(rows, "read")
    assert fig is not None
    assert list(fig.axes[0].get_xticks()) == [1, 4]


def test_analysis_vs_clients_shows_mbit_per_s_and_events_per_s_per_scenario() -> None:
    recs = [
        rec(0, 0.2, type="analysis", events=3000),
        rec(1, 0.4, type="analysis", events=6000, clients=2, id="r1"),
        rec(2, 0.2, type="analysis", events=3000, scenario="xcache", id="r2"),
    ]
    rows, _ = tables(recs)
    fig = figures.vs_clients_figure(rows, "analysis")
    assert fig is not None
    mbit, events = fig.axes[0], fig.axes[1]
    assert mbit.get_ylabel().startswith("throughput [Mbit/s]")
    assert events.get_ylabel().startswith("events/s")
    lines = {str(ln.get_label()): list(ln.get_ydata()) for ln in mbit.get_lines()}  # type: ignore[arg-type]
    origin = lines["frankfurt <- 10.77.0.2:1094: origin direct 1 job(s)/wave"]
    assert origin == [200.0, 400.0]  # 0.2 and 0.4 Gbit/s at 1 and 2 clients
    assert "frankfurt <- 10.77.0.2:1094: xcache direct 1 job(s)/wave" in lines


def test_the_step_table_shows_the_image_pulls_and_their_cache_hits(tmp_path: Path) -> None:
    from afkit.campaign import report

    pulled = {"site": "alpes", "submit_files": "transferred"}
    recs = [
        rec(0, 1.0, image_pull_s=45.0, image_cache="miss", **pulled),
        *[rec(i, 1.0, image_pull_s=0.01 * i, image_cache="hit", **pulled) for i in (1, 2)],
        rec(3, 1.0),  # frankfurt: the submit host's files, no pull
    ]
    steps = {s["site"]: s for s in figures.step_ranges(tables(recs)[0])}
    assert (steps["alpes"]["image_pull"], steps["alpes"]["image_cache"]) == ((0.01, 45.0), "2 hit, 1 miss")
    assert (steps["frankfurt"]["image_pull"], steps["frankfurt"]["image_cache"]) == (None, "")
    agg.aggregate(typed(recs), tmp_path / "jobs.csv", tmp_path / "intervals.csv")
    html = report.render_tables(tmp_path / "jobs.csv", tmp_path / "intervals.csv", tmp_path / "r").read_text()
    assert "<th>jobs</th><th>image pull</th><th>image cache</th><th>setup</th>" in html
    assert "<td>0.01&ndash;45.00</td><td>2 hit, 1 miss</td>" in html
