"""Train-scaling series per storage target, per server (XRootD host:port the jobs read from) or all."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest

from afkit import cli
from afkit.campaign import aggregate as agg
from afkit.campaign import report
from afkit.campaign.contract import JobRecord
from afkit.campaign.rows import JobRow, read_jobs
from afkit.campaign.scaling import scaling_series, server_of
from afkit.errors import ExitCode, InvalidError


def typed(records: list[dict[str, Any]]) -> list[JobRecord]:
    """The records as the aggregator reads them (afkit.campaign.contract.JobRecord)."""
    return [JobRecord(**r) for r in records]


def rows(records: list[dict[str, Any]]) -> list[JobRow]:
    """The records as jobs.csv's typed rows (the columns JobRow has)."""
    names = {f.name for f in dataclasses.fields(JobRow)}
    return [JobRow(**{k: v for k, v in r.items() if k in names}) for r in records]


MB = 1e6


def train(jid: str, site: str, dataset: str, url: str, start: float, end: float, **kw: Any) -> dict[str, Any]:
    base = {
        "campaign": "gsi", "campaign_hash": "h1", "image_sha256": "f00d", "image_path": "/x.sif",
        "bench": "t", "type": "train", "id": jid, "site": site, "dataset": dataset, "scenario": "origin",
        "access": "direct", "clients": 1, "wave_size": 2, "repetition": 0, "interval": 1.0, "status": "ok",
        "url": url, "start": start, "processing_start": start, "end": end, "bytes": 100_000_000, "events": 0,
        "steps": {"setup": 0.1, "stage_in": 0.0, "processing": end - start, "stage_out": 0.0},
    }  # fmt: skip
    base.update(kw)
    return base


# three storage targets (site/dataset pairs), each a wave of 2 concurrent jobs reading 100 MB:
# A and B read from the same server (se1, default port), C from another (se2:2094)
JOBS = [
    train("a0", "s1", "dA", "root://se1.example:1094//data/a.root", 0, 10),
    train("a1", "s1", "dA", "root://se1.example:1094//data/a.root", 0, 10),
    train("b0", "s2", "dB", "root://se1.example//data/b.root", 2, 12),
    train("b1", "s2", "dB", "root://se1.example//data/b.root", 2, 12),
    train("c0", "s1", "dC", "root://se2.example:2094//data/c.root", 0, 20),
    train("c1", "s1", "dC", "root://se2.example:2094//data/c.root", 0, 20),
]


@pytest.mark.parametrize(
    ("url", "server"),
    [
        ("root://se1.example:1094//data/a.root", "se1.example:1094"),
        ("root://se1.example//data/a.root", "se1.example:1094"),  # XRootD's default port
        ("xroot://u@se.example:11094//f", "se.example:11094"),
        ("root://[::1]:1095//f", "[::1]:1095"),
        # forwarding mode: the jobs read from the cache, which reads from the origin
        ("root://cache.example:11095//root://origin.example:1094//f", "cache.example:11095"),
        ("/lustre/alice/f.root", "local"),
        ("", "local"),
    ],
)
def test_server_of(url: str, server: str) -> None:
    assert server_of(url) == server


def test_target_grouping_is_one_series_per_storage_target() -> None:
    points = scaling_series(rows(JOBS))
    assert [p.key for p in points] == [
        ("t", "s1", "dA", "origin", "direct"),
        ("t", "s1", "dC", "origin", "direct"),
        ("t", "s2", "dB", "origin", "direct"),
    ]
    assert [p.concurrent for p in points] == [2, 2, 2]
    assert [p.throughput_98 for p in points] == pytest.approx([20 * MB, 10 * MB, 20 * MB])
    assert [p.servers for p in points] == [1, 1, 1]


def test_server_grouping_merges_the_waves_reading_from_one_server() -> None:
    points = scaling_series(rows(JOBS), grouping="server")
    by_server = {p.key[2]: p for p in points}
    assert set(by_server) == {"se1.example:1094", "se2.example:2094"}
    se1 = by_server["se1.example:1094"]
    assert se1.key == ("t", "server", "se1.example:1094", "origin", "direct")
    assert (se1.concurrent, se1.selected, se1.servers) == (4, 4, 1)
    assert se1.t98 == pytest.approx(12)  # ceil(0.98 * 4) = 4th end; span from the first start (0)
    assert se1.throughput_98 == pytest.approx(400 * MB / 12)
    assert se1.per_server == pytest.approx(se1.throughput_98)
    se2 = by_server["se2.example:2094"]
    assert (se2.concurrent, se2.throughput_98) == (2, pytest.approx(10 * MB))


def test_all_grouping_is_one_series_over_every_target() -> None:
    [p] = scaling_series(rows(JOBS), grouping="all")
    assert p.key == ("t", "all", "all targets", "origin", "direct")
    assert (p.concurrent, p.selected, p.servers) == (6, 6, 2)
    assert p.t98 == pytest.approx(20)
    assert p.throughput_98 == pytest.approx(600 * MB / 20)
    assert p.per_server == pytest.approx(300 * MB / 20)
    assert p.per_job == pytest.approx(600 * MB / 20 / 6)


def test_waves_of_different_sizes_and_scenarios_stay_apart() -> None:
    more = [
        *JOBS,
        *[train(f"d{i}", "s1", "dA", "root://se1.example:1094//data/a.root", 30, 40, wave_size=4)
          for i in range(4)],
        *[train(f"x{i}", "s1", "dA", "root://cache:1095//data/a.root", 50, 60, scenario="xcache")
          for i in range(2)],
    ]  # fmt: skip
    points = scaling_series(rows(more), grouping="server")
    assert [(p.key[2], p.key[3], p.concurrent) for p in points] == [
        ("cache:1095", "xcache", 2),
        ("se1.example:1094", "origin", 4),  # the two waves of 2 (A, B)
        ("se1.example:1094", "origin", 4),  # A's wave of 4, later
        ("se2.example:2094", "origin", 2),
    ]
    assert points[2].t98 == pytest.approx(10)


def test_unknown_grouping_is_invalid() -> None:
    with pytest.raises(InvalidError, match="allowed values: 'target', 'server', 'all'") as err:
        scaling_series(rows(JOBS), grouping="host")
    assert err.value.code == ExitCode.INVALID


def _tables(tmp_path: Path) -> Path:
    agg.aggregate(typed(JOBS), tmp_path / "jobs.csv", tmp_path / "intervals.csv")
    return tmp_path / "jobs.csv"


@pytest.mark.parametrize(
    ("grouping", "header", "rows", "servers"),
    [
        ("target", "storage target", ["t s1 dA origin direct"], "one server"),
        ("server", "server", ["t server se1.example:1094 origin direct", "t server se2.example:2094"],
         "one server"),
        ("all", "all storage targets", ["t all all targets origin direct"], "2 servers"),
    ],
)  # fmt: skip
def test_report_tables_the_chosen_grouping(
    tmp_path: Path, grouping: str, header: str, rows: list[str], servers: str
) -> None:
    jobs = _tables(tmp_path)
    html = report.render(read_jobs(jobs), [], tmp_path / "r", grouping=grouping).read_text()
    table = html[html.index("Analysis-train scaling") : html.index("Extrapolation</h2>")]
    assert f"<tr><th>{header}</th>" in table
    assert f"grouping <code>{grouping}</code>" in table
    for row in rows:
        assert f"<td>{row}" in table
    assert re.search(rf"From the wave .*, {servers}\)\.", html)


def test_report_rejects_an_unknown_grouping_before_writing(tmp_path: Path) -> None:
    jobs = _tables(tmp_path)
    with pytest.raises(InvalidError):
        report.render(read_jobs(jobs), [], tmp_path / "r", grouping="site")
    assert not (tmp_path / "r").exists()


def test_extrapolate_from_a_table_per_grouping(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    jobs = _tables(tmp_path)
    base = ["campaign", "extrapolate", "--target", "600MB/s", "--from", str(jobs)]
    # all: best wave 30 MB/s over 2 servers = 15 MB/s per server, 5 MB/s per job
    assert cli.main([*base, "--grouping", "all"]) == ExitCode.OK
    out = capsys.readouterr().out
    assert "120 jobs" in out and "40 servers" in out
    # server: best wave se1, 400 MB / 12 s over one server, 4 jobs
    assert cli.main([*base, "--grouping", "server"]) == ExitCode.OK
    out = capsys.readouterr().out
    assert "72 jobs" in out and "18 servers" in out
    with pytest.raises(SystemExit) as err:  # argparse: usage error, the choices named
        cli.main([*base, "--grouping", "host"])
    assert err.value.code == ExitCode.USAGE
    assert "choose from 'target', 'server', 'all'" in capsys.readouterr().err
