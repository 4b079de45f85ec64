"""The HTML report: figures embedded, failed and missing cells marked, tables present."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from afkit.campaign import aggregate as agg
from afkit.campaign import report
from afkit.campaign.contract import JobRecord
from afkit.campaign.rows import IntervalRow, JobRow, read_intervals, read_jobs


def typed(records: list[dict[str, Any]]) -> list[JobRecord]:
    """The records as the aggregator reads them (afkit.campaign.contract.JobRecord)."""
    return [JobRecord(**r) for r in records]


def tables(tmp_path: Path, records: list[dict[str, Any]]) -> tuple[list[JobRow], list[IntervalRow]]:
    """RECORDS aggregated into TMP_PATH's jobs.csv and intervals.csv, read back as typed rows."""
    agg.aggregate(typed(records), tmp_path / "jobs.csv", tmp_path / "intervals.csv")
    return read_jobs(tmp_path / "jobs.csv"), read_intervals(tmp_path / "intervals.csv")


def rec(i: int, **kw: Any) -> dict[str, Any]:
    base = {
        "campaign": "demo",
        "campaign_hash": "abc123",
        "image_sha256": "f00d",
        "image_path": "/x.sif",
        "bench": "read",
        "type": "read",
        "id": f"r{i}",
        "site": "here",
        "dataset": "d",
        "scenario": "origin",
        "access": "direct",
        "clients": 1,
        "wave_size": 1,
        "repetition": 0,
        "interval": 1.0,
        "status": "ok",
        "start": 0.0,
        "end": 4.0,
        "processing_start": 1.0,
        "steps": {"setup": 0.5, "stage_in": 0.0, "processing": 3.0, "stage_out": 0.1},
        "bytes": 300_000_000,
        "events": 0,
        "intervals": [{"t": t, "time": 1.0 + t, "bytes": 1e8} for t in (1.0, 2.0, 3.0)],
    }
    base.update(kw)
    return base


def test_report_renders_figures_and_marks_cells(tmp_path: Path) -> None:
    records = [
        rec(0),
        rec(1, clients=2),
        rec(
            2,
            scenario="xcache",
            status="failed",
            error="OSError: cannot open root://127.0.0.1:1095//f",
            steps={},
        ),
        rec(3, bench="ana", type="analysis", id="a0", events=5000, dataset="hzz"),
        rec(4, bench="ana", type="analysis", id="a1", events=9000, clients=2, dataset="hzz"),
        *[
            rec(10 + i, bench="t", type="train", id=f"t{i}", wave_size=2, start=float(i), end=10.0 + i)
            for i in range(2)
        ],
    ]
    agg.aggregate(typed(records), tmp_path / "jobs.csv", tmp_path / "intervals.csv")
    rows, intervals = read_jobs(tmp_path / "jobs.csv"), read_intervals(tmp_path / "intervals.csv")
    html_path = report.render(rows, intervals, tmp_path / "report")
    html = html_path.read_text()
    assert html_path.stat().st_mode & 0o777 == 0o644
    assert html.count("data:image/png;base64,") == 4  # rate vs time, read vs clients, analysis, train
    assert "abc123" in html and "f00d" in html
    assert '<td class="failed">0/1 ok</td>' in html
    assert "cannot open root://127.0.0.1:1095//f" in html
    assert "Analysis-train scaling" in html
    assert re.search(r"Extrapolation</h2>\s*<p>From the wave", html)
    assert "jobs at" in html
    assert (tmp_path / "report" / "rate_vs_time.png").stat().st_size > 1000


def test_every_report_has_the_figures_directory_snakemake_report_needs(tmp_path: Path) -> None:
    """afkit campaign report (not the workflow's rule) also fills report/figures, exactly."""
    agg.aggregate(typed([rec(0), rec(1, clients=2)]), tmp_path / "jobs.csv", tmp_path / "intervals.csv")
    rows, intervals = read_jobs(tmp_path / "jobs.csv"), read_intervals(tmp_path / "intervals.csv")
    (tmp_path / "report" / "figures").mkdir(parents=True)
    (tmp_path / "report" / "figures" / "train_scaling.png").write_bytes(b"from an earlier report")
    report.render(rows, intervals, tmp_path / "report")
    made = sorted(p.name for p in (tmp_path / "report" / "figures").iterdir())
    assert made == ["rate_vs_time.png", "read_vs_clients.png"]
    assert made == sorted(p.name for p in (tmp_path / "report").glob("*.png"))


def test_report_without_any_successful_job(tmp_path: Path) -> None:
    records = [rec(0, status="failed", error="boom", steps={}, intervals=[])]
    agg.aggregate(typed(records), tmp_path / "jobs.csv", tmp_path / "intervals.csv")
    html = report.render(read_jobs(tmp_path / "jobs.csv"), [], tmp_path / "r").read_text()
    assert "data:image/png" not in html
    assert "0 ok, 1 failed, 0 missing" in html


def test_figures_keep_sites_and_endpoints_apart(tmp_path: Path) -> None:
    from afkit.campaign import figures

    recs = [
        rec(0, bench="ana", type="analysis", id="a", site="condor", url="root://se-a:1094//f"),
        rec(1, bench="ana", type="analysis", id="b", site="slurm", url="root://se-b:1094//f"),
    ]
    rows, _ = tables(tmp_path, recs)
    lines = figures.client_lines(rows, "analysis")
    assert {src for src, _ in lines} == {"condor <- se-a:1094", "slurm <- se-b:1094"}
    assert all(pts[1][0] == 100.0 for pts in lines.values())  # 3e8 B / 3 s each, never 200 (a sum)


def test_read_time_series_keep_sites_apart(tmp_path: Path) -> None:
    from afkit.campaign import figures

    recs = [rec(0, site="condor", url="/mnt/f"), rec(1, site="slurm", url="root://se:1094//f")]
    series = figures.rate_series(*tables(tmp_path, recs))
    assert {k[0] for k in series} == {"condor <- local", "slurm <- se:1094"}
    assert all(v == 0.8 for pts in series.values() for v in pts.values())  # 1e8 B/s each = 0.8 Gbit/s


def test_the_demo_campaign_report_has_a_bottleneck_per_job(tmp_path: Path) -> None:
    from afkit.campaign import config, plan
    from afkit.paths import workflows_dir

    demo = config.load(workflows_dir() / "config" / "demo.yaml")
    jobs = [j.as_dict() for j in plan.expand(demo)]
    verdicts = ["network", "disk", "cpu", "none"]
    records = [
        rec(i, **{k: v for k, v in j.items() if k != "urls"}, campaign_hash=demo.hash,
            bottleneck=verdicts[i % 4], bottleneck_reason=f"reason {i}")
        for i, j in enumerate(jobs)
    ]  # fmt: skip
    agg.aggregate(typed(records), tmp_path / "jobs.csv", tmp_path / "intervals.csv")
    rows = read_jobs(tmp_path / "jobs.csv")
    assert sorted(r.bottleneck for r in rows) == sorted(verdicts[i % 4] for i in range(len(jobs)))
    html = report.render(rows, read_intervals(tmp_path / "intervals.csv"), tmp_path / "r").read_text()
    table = html.split("What bounded each job</h2>", 1)[1].split("</table>", 1)[0]
    assert table.count("<tr><td>") == len(jobs) > 0
    assert all(f"reason {i}" in table for i in range(len(jobs)))


def test_a_jobs_table_without_the_bottleneck_column_reports_unknown(tmp_path: Path) -> None:
    agg.aggregate(typed([rec(0)]), tmp_path / "jobs.csv", tmp_path / "intervals.csv")
    old = [
        {k: v for k, v in r.items() if not k.startswith("bottleneck")}
        for r in agg.read_csv(tmp_path / "jobs.csv")
    ]
    agg.write_csv(tmp_path / "jobs.csv", list(old[0]), old)
    html = report.render(read_jobs(tmp_path / "jobs.csv"), [], tmp_path / "r").read_text()
    assert "<td>unknown</td>" in html.split("What bounded each job</h2>", 1)[1]


def test_report_shows_the_start_skew_of_each_wave_against_the_goal(tmp_path: Path) -> None:
    records = [
        rec(10 + i, bench="t", type="train", id=f"t{i}", wave="w2.r0", wave_size=2, start=s, end=s + 10)
        for i, s in enumerate((100.0, 100.75))
    ] + [
        rec(20 + i, bench="t", type="train", id=f"u{i}", wave="w2.r1", wave_size=2, start=s, end=s + 10)
        for i, s in enumerate((200.0, 203.5))
    ]
    agg.aggregate(typed(records), tmp_path / "jobs.csv", tmp_path / "intervals.csv")
    rows, intervals = read_jobs(tmp_path / "jobs.csv"), read_intervals(tmp_path / "intervals.csv")
    html = report.render(rows, intervals, tmp_path / "report").read_text()
    assert "Wave start skew" in html and "Goal: at most 2 s" in html
    assert re.search(r"<td>w2\.r0</td>.*?<td class=\"ok\">0\.75</td>", html, re.S)
    assert re.search(r"<td>w2\.r1</td>.*?<td class=\"failed\">3\.50</td>", html, re.S)


def test_the_cells_table_says_how_many_repetitions_each_cell_had(tmp_path: Path) -> None:
    records = [
        *[rec(i, repetition=i) for i in range(3)],
        *[rec(10 + i, clients=2, repetition=i) for i in range(2)],
        rec(12, clients=2, repetition=2, status="failed", error="boom", steps={}, intervals=[]),
    ]
    agg.aggregate(typed(records), tmp_path / "jobs.csv", tmp_path / "intervals.csv")
    html = report.render(read_jobs(tmp_path / "jobs.csv"), [], tmp_path / "r").read_text()
    assert "<th>repetitions</th>" in html
    assert re.search(r"<td>1</td><td>1</td><td>3</td>\s*<td class=\"ok\">ok</td>", html)
    assert re.search(r"<td>2</td><td>1</td><td>2 of 3</td>\s*<td class=\"failed\">2/3 ok</td>", html)


def _ana(i: int, payload: str, events: int, **kw: Any) -> dict[str, Any]:
    return rec(100 + i, bench=f"ana-{payload}", type="analysis", id=f"p{i}", dataset="ao2d", payload=payload,
               events=events, bytes=200_000_000, branches=["fPt"], **kw)  # fmt: skip


def test_payload_section_sets_each_payload_against_rootreadspeed(tmp_path: Path) -> None:
    records = [
        _ana(0, "rootreadspeed", 6000, readspeed_verdict="decompression-bound"),
        _ana(1, "rootreadspeed", 6000, readspeed_verdict="decompression-bound"),
        _ana(2, "root", 5700, bottleneck="cpu"),
        _ana(3, "afkit-bench", 3000, bottleneck="cpu"),
        _ana(4, "afkit-bench", 3000, clients=4),  # several clients: not in the one-thread comparison
    ]
    agg.aggregate(typed(records), tmp_path / "jobs.csv", tmp_path / "intervals.csv")
    lines = report.payload_table.section(read_jobs(tmp_path / "jobs.csv"))
    by = {ln["payload"]: ln for ln in lines}
    assert [ln["payload"] for ln in lines] == ["rootreadspeed", "afkit-bench", "root"]
    assert by["rootreadspeed"]["jobs"] == 2 and by["afkit-bench"]["jobs"] == 1
    assert by["root"]["ratio"] == "0.950" and by["afkit-bench"]["ratio"] == "0.500"
    assert by["rootreadspeed"]["verdict"] == "decompression-bound" and by["root"]["verdict"] == "cpu"
    assert by["root"]["eps"] == pytest.approx(5700 / 3.0)
    assert by["root"]["mbps"] == pytest.approx(2e8 / 3.0 / 1e6 * 8, rel=1e-4)  # MB/s in jobs.csv, rounded


def test_payload_section_is_rendered_in_the_report(tmp_path: Path) -> None:
    records = [_ana(0, "rootreadspeed", 6000, readspeed_verdict="io-bound"), _ana(1, "root", 5700)]
    agg.aggregate(typed(records), tmp_path / "jobs.csv", tmp_path / "intervals.csv")
    rows, intervals = read_jobs(tmp_path / "jobs.csv"), read_intervals(tmp_path / "intervals.csv")
    html = report.render(rows, intervals, tmp_path / "report").read_text()
    assert "Analysis payloads side by side" in html
    assert re.search(
        r"<td>root</td><td>1</td>\s*<td>1900\.0</td><td>533\.3</td><td>unknown</td><td>0\.950</td>", html
    )
    assert "<td>io-bound</td>" in html


def test_no_payload_section_with_one_payload(tmp_path: Path) -> None:
    agg.aggregate(
        typed([_ana(0, "root", 5700), _ana(1, "root", 5000)]), tmp_path / "jobs.csv", tmp_path / "i.csv"
    )
    rows, intervals = read_jobs(tmp_path / "jobs.csv"), read_intervals(tmp_path / "i.csv")
    assert "Analysis payloads side by side" not in report.render(rows, intervals, tmp_path / "r").read_text()
