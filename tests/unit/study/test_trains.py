"""gsi-trains: the series from job rows, the claims judged on them, the extrapolation arithmetic."""

from __future__ import annotations

from pathlib import Path

import pytest

from afkit.campaign import config
from afkit.campaign.rows import JobRow
from afkit.errors import UsageError
from afkit.study import model, recipe, trains

MB = 1e6
FILE = 48 * MB


def wave(
    bench: str, n: int, rep: int, t0: float, cap: float, demand: float = 2.5, servers: int = 1
) -> list[JobRow]:
    """N train jobs started together, each at min(demand, cap / N) MB/s, reading one file."""
    rate = min(demand, cap / n) * MB
    rows = []
    for i in range(n):
        site = f"10.77.{i % servers + 1}.1"
        rows.append(
            JobRow(
                bench=bench,
                type="train",
                id=f"{bench}.w{n}.r{rep}.i{i}",
                wave=f"{bench}.w{n}.r{rep}",
                site="submit",
                dataset=f"on-{i % servers}",
                scenario="origin",
                access="direct",
                clients=1,
                wave_size=n,
                repetition=rep,
                status="ok",
                start=t0 + 0.1 * i,
                processing_start=t0 + 0.1 * i,
                end=t0 + 0.1 * i + FILE / rate,
                bytes=int(FILE),
                url=f"root://{site}:1094//data/f",
            )
        )
    return rows


def rows_of(server_cap: float, all_cap: float) -> list[JobRow]:
    out: list[JobRow] = []
    t = 1000.0
    for rep in (0, 1):
        for n in (2, 4, 6, 8, 12, 16, 20):
            out += wave("server", n, rep, t, server_cap)
            t += 1000
        for n in (3, 6, 12, 18, 24):
            out += wave("all", n, rep, t, all_cap, servers=3)
            t += 1000
    return out


@pytest.fixture
def study() -> model.Study:
    return model.load("gsi-trains")


def test_a_link_capped_server_and_uncapped_servers_pass(study: model.Study) -> None:
    data = trains.measure(rows_of(25.0, 75.0), [])
    v = trains.judge(study, data)
    assert v["server-knee"].status == "pass"
    assert v["all-linear"].status == "pass"
    assert v["per-job-agree"].status == "pass"
    assert v["server-knee"].values["knee_jobs"] == 8  # the last sweep point below 25 / 2.5 = 10 jobs


def test_the_target_claim_is_not_judged_without_a_target(study: model.Study) -> None:
    v = trains.judge(study, trains.measure(rows_of(25.0, 75.0), []))
    assert v["target-knee"].status == "not judgeable"


def test_all_servers_that_saturate_fail_the_linear_claim(study: model.Study) -> None:
    """A shared bottleneck in front of 'all' (e.g. the client's own link) bends the line: fail."""
    v = trains.judge(study, trains.measure(rows_of(25.0, 25.0), []))
    assert v["all-linear"].status == "fail"


def test_a_server_without_a_cap_fails_the_knee_claim(study: model.Study) -> None:
    v = trains.judge(study, trains.measure(rows_of(1000.0, 75.0), []))
    assert v["server-knee"].status == "fail"


def test_a_failed_job_leaves_its_series_unjudged(study: model.Study) -> None:
    rows = rows_of(25.0, 75.0)
    rows[3] = JobRow(**{**rows[3].__dict__, "status": "failed"})
    v = trains.judge(study, trains.measure(rows, []))
    assert v["server-knee"].status == "not judgeable"
    assert "did not succeed" in v["server-knee"].measured


def test_extrapolation_from_the_original_inputs(study: model.Study) -> None:
    v = trains.judge(study, trains.measure([], []))["extrapolation-original"]
    # 10 PB / 24 h = 115.74 GB/s; 12.8 MB/s per job -> 9043 jobs; 2100 MB/s per OSS -> 56 OSS
    assert v.values == {"jobs": 9043, "servers": 56.0}
    assert v.status == "pass"
    assert "9043 jobs" in v.measured and "would be 109" in v.measured


def test_box_campaign_is_a_valid_campaign(study: model.Study, tmp_path: Path) -> None:
    sif = tmp_path / "bench.sif"
    sif.write_bytes(b"x")
    urls = {
        "sites": {
            s: {
                "storage_url": f"root://10.77.{i}.1:1094",
                "data": f"/srv/federation/{s}/data",
                "rate_mbit": 200.0,
            }
            for i, s in enumerate(("gsi", "frankfurt", "alpes"), 1)
        }
    }
    fac = recipe.from_federation(study, urls, sif)
    import yaml

    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(recipe.campaign(study, fac)))
    c = config.load(path)
    benches = {b["name"]: b for b in c.config["benchmarks"]}
    assert set(benches) == {"server", "all"}
    assert benches["all"]["spread"] is True
    assert benches["all"]["datasets"] == ["data-gsi", "data-frankfurt", "data-alpes"]
    assert fac.facts["server_capacity"] == "25 MB/s"


def _guarded_urls() -> dict[str, object]:
    return {
        "sites": {
            s: {
                "storage_url": f"roots://10.77.{i}.1:1094",
                "data": f"/srv/federation/{s}/data",
                "rate_mbit": 200.0,
            }
            for i, s in enumerate(("gsi", "frankfurt", "alpes"), 1)
        },
        "guard": {
            "issuer": "https://10.77.0.10:8443",
            "ca_bundle": "/srv/federation/guard/pki/ca-bundle.pem",
        },
    }


def test_a_guarded_box_names_the_token_as_every_storages_credential(
    study: model.Study, tmp_path: Path
) -> None:
    sif = tmp_path / "bench.sif"
    sif.write_bytes(b"x")
    fac = recipe.from_federation(study, _guarded_urls(), sif, tmp_path / "t.token")
    expected = {"token": str(tmp_path / "t.token"), "ca": "/srv/federation/guard/pki/ca-bundle.pem"}
    assert {n: s["credential"] for n, s in fac.storage.items()} == dict.fromkeys(
        ("gsi", "frankfurt", "alpes"), expected
    )  # type: ignore[index]


def test_a_guarded_box_without_a_token_says_how_to_get_one(study: model.Study, tmp_path: Path) -> None:
    sif = tmp_path / "bench.sif"
    sif.write_bytes(b"x")
    with pytest.raises(UsageError, match="the federation in the box is guarded") as err:
        recipe.from_federation(study, _guarded_urls(), sif)
    assert "--token FILE" in err.value.hint and "afkit federation token" in err.value.hint
