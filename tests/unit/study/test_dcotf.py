"""dcotf-xcache: the measures from job rows and the claims judged on them, passing and failing."""

from __future__ import annotations

from afkit.campaign.rows import JobRow
from afkit.study import dcotf, model

WAN = 25.0  # MB/s: a 200 Mbit/s link


def job(bench: str, scen: str, rep: int, rate: float, *, nodes: int = 1, i: int = 0, stride: str = "0",
        clients: int = 1, events: float = 0.0) -> JobRow:  # fmt: skip
    wave = f"{bench}.{scen}.s{stride}.c{clients}.w{nodes}.r{rep}"
    return JobRow(bench=bench, type="read" if bench == "micro" else "analysis", id=f"{wave}.i{i}", wave=wave,
                  scenario=scen, stride=stride, clients=clients, wave_size=nodes, repetition=rep, status="ok",
                  throughput_MBps=rate, events_per_s=events)  # fmt: skip


def micro_rows(origin: float = 24.0, dca: float = 400.0, dcotf_rate: float = 380.0, xcache: float = 110.0,
               random: float = 0.5) -> list[JobRow]:  # fmt: skip
    rows = []
    for scen, rate in (("origin", origin), ("xcache", xcache), ("xcache-dca", dca), ("dcotf", dcotf_rate)):
        for rep in (0, 1):
            r = rate if rep or scen == "origin" else WAN * 0.9  # a cache's first read is cold: WAN-bound
            rows += [job("micro", scen, rep, r / 3, nodes=3, i=i) for i in range(3)]
            rows += [job("micro", scen, rep, r / 3 * random, nodes=3, i=i, stride="random") for i in range(3)]
    return rows


def analysis_rows(esd_mbps: float = 60.0, aod_mbps: float = 30.0) -> list[JobRow]:
    rows = []
    for bench, mbps, ev in (("aod", aod_mbps, 80.0), ("esd", esd_mbps, 30.0)):
        for scen, f in (("origin", 0.4), ("xcache", 1.0), ("xcache-dca", 1.1), ("dcotf", 1.05)):
            rows.append(job(bench, scen, 1, mbps / 8 * f, clients=1, events=ev * f))
            rows.append(job(bench, scen, 1, mbps / 8 * f * 2, clients=4, events=ev * f * 2))
    return rows


def verdicts(rows: list[JobRow]) -> dict[str, str]:
    v, _ = dcotf.judge(model.load("dcotf-xcache"), rows, WAN)
    return {k: x.status for k, x in v.items()}


def test_the_original_shape_passes_every_claim_but_the_container_one() -> None:
    v = verdicts(micro_rows() + analysis_rows())
    assert v.pop("container-similar") == "not judgeable"
    assert set(v.values()) == {"pass"}, v


def test_a_no_cache_rate_above_the_wan_link_fails() -> None:
    assert verdicts(micro_rows(origin=60.0))["no-cache-wan-cap"] == "fail"


def test_caches_at_the_wan_rate_fail() -> None:
    v = verdicts(micro_rows(dca=26.0, dcotf_rate=26.0, xcache=20.0))
    assert v["warm-caches-above-wan"] == "fail"


def test_dca_and_dcotf_far_apart_fail() -> None:
    assert verdicts(micro_rows(dcotf_rate=100.0))["dca-dcotf-similar"] == "fail"


def test_a_random_stride_faster_than_stride_0_fails() -> None:
    assert verdicts(micro_rows(random=2.0))["stride0-above-random"] == "fail"


def test_esd_slower_than_aod_fails() -> None:
    assert verdicts(micro_rows() + analysis_rows(esd_mbps=20.0))["esd-vs-aod"] == "fail"


def test_the_cold_repetition_is_not_the_warm_rate() -> None:
    _, m = dcotf.judge(model.load("dcotf-xcache"), micro_rows(), WAN)
    assert m["micro_dca_warm"] == 400.0


def test_failed_jobs_leave_their_claims_unjudged() -> None:
    rows = micro_rows()
    rows[0] = JobRow(**{**rows[0].__dict__, "status": "failed"})
    v = verdicts(rows)
    assert v["no-cache-wan-cap"] == "not judgeable"


def test_one_repetition_says_there_was_no_warm_read() -> None:
    rows = [r for r in micro_rows() + analysis_rows() if r.repetition == 0 or r.bench != "micro"]
    rows = [JobRow(**{**r.__dict__, "repetition": 0}) for r in rows]
    v, _ = dcotf.judge(model.load("dcotf-xcache"), rows, WAN)
    for claim in ("warm-caches-above-wan", "dca-dcotf-similar", "xcache-lower", "analysis-dcotf-dca"):
        assert v[claim].status == "not judgeable"
        assert "one repetition, so no warm read" in v[claim].measured, v[claim]
    assert "no successful job" not in v["warm-caches-above-wan"].measured


def test_scenarios_left_out_are_named_as_the_reason() -> None:
    rows = [r for r in micro_rows() + analysis_rows() if r.scenario in ("origin", "dcotf")]
    v, _ = dcotf.judge(model.load("dcotf-xcache"), rows, WAN)
    assert v["xcache-lower"].status == "not judgeable"
    assert "scenario xcache, xcache-dca not run" in v["xcache-lower"].measured, v["xcache-lower"]
