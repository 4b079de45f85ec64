"""Aggregation to tidy CSV with provenance; mixed campaigns/images refused; missing jobs marked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from afkit.campaign import aggregate as agg
from afkit.campaign import plan
from afkit.campaign.contract import JobRecord
from afkit.campaign.rows import JobRow
from afkit.errors import InvalidError


def typed(records: list[dict[str, Any]]) -> list[JobRecord]:
    """The records as the aggregator reads them (afkit.campaign.contract.JobRecord)."""
    return [JobRecord(**r) for r in records]


def record(i: int, **kw: Any) -> dict[str, Any]:
    rec = {
        "campaign": "c",
        "campaign_hash": "abc",
        "image_sha256": "f00",
        "image_tag": "T",
        "bench": "read",
        "type": "read",
        "id": f"j{i}",
        "site": "here",
        "host": "wn1",
        "dataset": "d",
        "scenario": "origin",
        "access": "direct",
        "clients": 2,
        "status": "ok",
        "start": 100.0,
        "end": 112.0,
        "processing_start": 101.0,
        "steps": {"setup": 1.0, "stage_in": 0.0, "processing": 10.0, "stage_out": 0.5},
        "bytes": 50_000_000,
        "events": 2000,
        "intervals": [{"t": 1.0, "time": 102.0, "bytes": 5_000_000}, {"t": 2.0, "time": 103.0, "bytes": 7}],
        # the rest of a complete record (afkit.campaign.jobrecord)
        "image_path": "/i.sif", "image_fingerprint": "", "wave": f"w{i}", "executor": "local",
        "batch_job_id": "", "block_size": "8M", "stride": "0", "wave_size": 1, "index": 0, "repetition": 0,
        "duration": 10.0, "interval": 1.0, "template": "redirlocal", "url": "/d/f", "files": 1,
        "bottleneck": "none", "bottleneck_reason": "-", "payload": "builtin", "branches": [],
        "submit_host": "sub", "container_start": 100.5, "bytes_staged": 0, "bytes_out": 20,
        "wn_site": "", "wn_address": "10.0.0.1", "submit_files": "shared",
    }  # fmt: skip
    rec.update(kw)
    return rec


def test_rows_carry_provenance_and_rates(tmp_path: Path) -> None:
    rows = agg.aggregate(typed([record(0)]), tmp_path / "jobs.csv", tmp_path / "intervals.csv")
    assert rows[0]["throughput_MBps"] == pytest.approx(5.0)
    assert rows[0]["events_per_s"] == pytest.approx(200.0)
    assert rows[0]["wall_s"] == pytest.approx(12.0)
    table = agg.read_csv(tmp_path / "jobs.csv")
    assert table[0]["campaign_hash"] == "abc"
    assert table[0]["image_sha256"] == "f00"
    assert table[0]["image_tag"] == "T"
    assert table[0]["host"] == "wn1"
    assert table[0]["setup_s"] == "1.0"
    intervals = agg.read_csv(tmp_path / "intervals.csv")
    assert [r["bytes"] for r in intervals] == ["5000000", "7"]
    assert intervals[0]["id"] == "j0"


def test_rows_carry_the_hash_of_the_campaign_they_were_aggregated_for(tmp_path: Path) -> None:
    # records kept across an edit of the campaign (their spec did not change) are current for it
    rows = agg.aggregate(typed([record(0), record(1, campaign_hash="zzz")]), tmp_path / "j.csv",
                         tmp_path / "i.csv", campaign_hash="c0ffee")  # fmt: skip
    assert {r["campaign_hash"] for r in rows} == {"c0ffee"}
    assert {r["campaign_hash"] for r in agg.read_csv(tmp_path / "i.csv")} == {"c0ffee"}


def test_different_images_are_refused_without_writing(tmp_path: Path) -> None:
    with pytest.raises(InvalidError, match="image_sha256: bee, f00"):
        agg.aggregate(typed([record(0), record(1, image_sha256="bee")]), tmp_path / "j.csv",
                      tmp_path / "i.csv")  # fmt: skip
    assert not (tmp_path / "j.csv").exists()


def test_different_images_are_refused_unless_allowed(tmp_path: Path) -> None:
    recs = [record(0), record(1, image_sha256="bee")]
    with pytest.raises(InvalidError, match="different images"):
        agg.aggregate(typed(recs), tmp_path / "j.csv", tmp_path / "i.csv")
    rows = agg.aggregate(typed(recs), tmp_path / "j.csv", tmp_path / "i.csv", allow_mixed=True)
    assert {r["image_sha256"] for r in rows} == {"f00", "bee"}


def test_failed_and_missing_jobs(tmp_path: Path) -> None:
    failed = record(
        1, status="failed", error="OSError: cannot open root://x//f: connection refused", steps={}
    )
    expected = [plan.Job(bench="read", type="read", site="here", dataset="d", scenario="origin",
                         access="direct", clients=1, block_size="8M", stride="0", repetition=i,
                         urls=("u",)) for i in range(3)]  # fmt: skip
    ok = record(0, id=expected[0].id)
    failed["id"] = expected[1].id
    rows = agg.aggregate(typed([ok, failed]), tmp_path / "j.csv", tmp_path / "i.csv", expected=expected)
    status = {r["id"]: r for r in rows}
    j0, j1, j2 = (status[j.id] for j in expected)
    assert j0["status"] == "ok"
    assert j1["status"] == "failed"
    assert "connection refused" in str(j1["error"])
    assert j1["throughput_MBps"] == ""
    assert j2["status"] == "missing"


def test_unreadable_record(tmp_path: Path) -> None:
    bad = tmp_path / "x.json"
    bad.write_text("{half")
    good = tmp_path / "y.json"
    good.write_text(json.dumps(record(0)))
    assert len(agg.load_records([good])) == 1
    with pytest.raises(InvalidError, match="unreadable job record"):
        agg.load_records([good, bad])


def test_wave_start_skew_is_the_spread_of_the_wave_jobs_starts() -> None:
    def job(wave: str, start: float | None, size: int = 3, **kw: Any) -> JobRow:
        return JobRow(bench="t", wave=wave, wave_size=size, site="gsi", dataset="d", start=start, **kw)

    rows = [
        job("w3.r0", 100.0),
        job("w3.r0", 101.5, status="failed"),  # launched, then failed: it counts
        job("w3.r0", 100.4),
        job("w3.r1", 200.0),
        job("w3.r1", 203.25),
        job("w3.r1", None),  # never started (missing): not counted
        job("w1.r0", 50.0, size=1),  # a wave of one job has no skew
    ]
    skews = {w["wave"]: w for w in agg.wave_skews(rows)}
    assert set(skews) == {"w3.r0", "w3.r1"}
    assert skews["w3.r0"]["skew_s"] == 1.5 and skews["w3.r0"]["within_goal"]
    assert skews["w3.r1"]["skew_s"] == 3.25 and not skews["w3.r1"]["within_goal"]
    assert skews["w3.r1"]["started"] == 2 and skews["w3.r1"]["wave_size"] == 3
