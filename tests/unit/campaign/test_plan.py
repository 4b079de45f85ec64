"""Job expansion: counts per sweep, stable unique ids, waves."""

from __future__ import annotations

from typing import Any

from afkit.campaign import plan


def test_read_sweep_count_and_ids(raw: dict[str, Any], make: Any) -> None:
    raw["benchmarks"][0]["sweep"].update(block_size=["1M", "8M"], repetitions=3)
    jobs = plan.expand(make(raw))
    assert len(jobs) == 2 * 2 * 2 * 3  # scenarios x clients x block sizes x repetitions
    assert len({j.id for j in jobs}) == len(jobs)
    assert [j.id for j in plan.expand(make(raw))] == [j.id for j in jobs]  # stable
    assert jobs[0].id == "here.gen.origin.direct.c1.b1M.s0.w1.r0.i0"


def test_train_waves_chain_in_order(raw: dict[str, Any], make: Any) -> None:
    raw["benchmarks"] = [
        {"name": "t", "type": "train", "sites": ["here"], "datasets": ["gen"], "sweep": {"jobs": [1, 3, 2]}}
    ]
    jobs = plan.expand(make(raw))
    assert len(jobs) == 6
    assert all(j.clients == 1 for j in jobs)
    members = plan.wave_members(jobs)
    assert sorted(len(v) for v in members.values()) == [1, 2, 3]
    prev = plan.previous_waves(jobs)
    w1, w3, w2 = (f"here.gen.origin.direct.c1.b8M.s0.w{n}.r0" for n in (1, 3, 2))
    assert prev == {("t", w3): w1, ("t", w2): w3}


def test_analysis_nodes_make_waves(raw: dict[str, Any], make: Any) -> None:
    raw["benchmarks"] = [
        {
            "name": "a",
            "type": "analysis",
            "sites": ["here", "far"],
            "datasets": ["hzz"],
            "sweep": {"clients": [1, 4], "nodes": [1, 2], "access": ["direct", "copy"]},
        }
    ]
    jobs = plan.expand(make(raw))
    assert len(jobs) == 2 * 2 * 2 * (1 + 2)  # sites x access x clients x (1 + 2 node jobs)
    far = [j for j in jobs if j.site == "far"]
    assert far[0].urls[0].startswith("root://")
    assert next(j for j in jobs if j.site == "here").urls[0].startswith("/")


def test_steps_ignore_client_sweeps(raw: dict[str, Any], make: Any) -> None:
    raw["benchmarks"] = [
        {
            "name": "s",
            "type": "steps",
            "sites": ["here"],
            "datasets": ["hzz"],
            "sweep": {"clients": [1, 8], "access": ["direct", "copy"], "repetitions": 2},
        }
    ]
    jobs = plan.expand(make(raw))
    assert len(jobs) == 4
    assert {j.access for j in jobs} == {"direct", "copy"}


def test_spread_train_spreads_each_wave_over_the_datasets(raw: dict[str, Any], make: Any) -> None:
    raw["datasets"]["gen2"] = {"storage": "remote", "generate": {"count": 1, "size_mb": 1}}
    raw["benchmarks"] = [{"name": "t", "type": "train", "sites": ["here"], "datasets": ["gen", "gen2"],
                          "spread": True, "sweep": {"jobs": [3, 4]}}]  # fmt: skip
    jobs = plan.expand(make(raw))
    members = plan.wave_members(jobs)
    assert sorted(len(v) for v in members.values()) == [3, 4]  # one wave per size, not one per dataset
    w4 = next(v for v in members.values() if len(v) == 4)
    assert [j.dataset for j in w4] == ["gen", "gen2", "gen", "gen2"]
    assert w4[1].urls[0].startswith("root://far.example")
    w3 = "here.gen+gen2.origin.direct.c1.b8M.s0.w3.r0"
    assert plan.previous_waves(jobs) == {("t", "here.gen+gen2.origin.direct.c1.b8M.s0.w4.r0"): w3}


def test_demand_is_part_of_the_job_and_its_wave(raw: dict[str, Any], make: Any) -> None:
    raw["benchmarks"] = [{"name": "t", "type": "train", "sites": ["here"], "datasets": ["gen"],
                          "demand": "2.5MB/s", "sweep": {"jobs": [2]}}]  # fmt: skip
    jobs = plan.expand(make(raw))
    assert {j.demand for j in jobs} == {"2.5MB/s"}
    assert jobs[0].wave == "here.gen.origin.direct.c1.b8M.s0.d2.5MBps.w2.r0"
