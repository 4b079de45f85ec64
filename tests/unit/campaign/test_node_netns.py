"""A local site's client nodes (``node_netns``, docs/campaigns.md) and the ``nodes`` sweep of read
benchmarks: waves of 1, 2, 3 jobs released together, job i of a wave in node_netns[i mod len]."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from afkit.campaign import config, job, plan
from afkit.campaign.contract import JobSpec, SiteSpec
from afkit.errors import InvalidError

NODES = ["frankfurt-n1", "frankfurt-n2", "frankfurt-n3"]


def _error(raw: dict[str, Any]) -> str:
    with pytest.raises(InvalidError) as exc:
        config.validate(raw)
    return str(exc.value)


def nodes_read(raw: dict[str, Any], nodes: list[int]) -> dict[str, Any]:
    raw["benchmarks"] = [{"name": "r", "type": "read", "sites": ["here"], "datasets": ["gen"],
                          "sweep": {"clients": [2], "nodes": nodes}}]  # fmt: skip
    return raw


def test_a_read_benchmark_with_nodes_makes_waves_of_that_many_jobs_each_with_its_clients(
    raw: dict[str, Any], make: Any
) -> None:
    jobs = plan.expand(make(nodes_read(raw, [1, 2, 3])))
    members = plan.wave_members(jobs)
    assert [len(v) for v in members.values()] == [1, 2, 3]
    assert {j.clients for j in jobs} == {2}
    assert [j.index for j in members[("r", "here.gen.origin.direct.c2.b8M.s0.w3.r0")]] == [0, 1, 2]


def test_a_read_benchmarks_node_waves_run_one_after_another_the_one_node_wave_first(
    raw: dict[str, Any], make: Any
) -> None:
    jobs = plan.expand(make(nodes_read(raw, [1, 2, 3])))
    w1, w2, w3 = (f"here.gen.origin.direct.c2.b8M.s0.w{n}.r0" for n in (1, 2, 3))
    assert plan.previous_waves(jobs) == {("r", w2): w1, ("r", w3): w2}


def test_a_read_benchmark_without_nodes_keeps_its_ids_and_makes_no_waves(
    raw: dict[str, Any], make: Any
) -> None:
    jobs = plan.expand(make(raw))  # the fixture's read benchmark: no nodes sweep
    assert [j.id for j in jobs] == [
        f"here.gen.{s}.direct.c{c}.b8M.s0.w1.r0.i0" for s in ("origin", "xcache") for c in (1, 2)
    ]
    assert plan.wave_members(jobs) == {} and plan.previous_waves(jobs) == {}


def test_job_i_of_a_wave_runs_on_node_i_mod_the_nodes() -> None:
    site = SiteSpec("frankfurt", "local", node_netns=tuple(NODES[:2]))
    assert [site.job_netns(i) for i in range(5)] == ["frankfurt-n1", "frankfurt-n2"] * 2 + ["frankfurt-n1"]


def test_without_node_netns_every_job_runs_in_the_sites_netns() -> None:
    assert SiteSpec("gsi", "local", netns="gsi").job_netns(2) == "gsi"
    assert SiteSpec("here", "local").job_netns(0) == ""


def test_the_spec_carries_node_netns_only_when_the_site_names_them(raw: dict[str, Any], make: Any) -> None:
    plain = plan.specs(make(raw), plan.expand(make(raw)))[0]
    assert "node_netns" not in json.loads(plain.to_json())["site"]  # existing campaigns' specs unchanged
    raw["sites"]["here"]["node_netns"] = NODES
    spec = plan.specs(make(raw), plan.expand(make(raw)))[0]
    assert JobSpec.from_json(spec.to_json()).site.node_netns == tuple(NODES)


def test_node_netns_only_for_the_local_executor(raw: dict[str, Any]) -> None:
    raw["sites"]["far"]["node_netns"] = NODES  # far runs on slurm
    assert "sites.far.node_netns: only for executor 'local'" in _error(raw)


def test_netns_and_node_netns_together_are_refused(raw: dict[str, Any]) -> None:
    raw["sites"]["here"].update(netns="frankfurt", node_netns=NODES)
    assert "sites.here: netns and node_netns both name where its jobs run" in _error(raw)


@pytest.mark.parametrize(
    "value", [[], ["frankfurt-n1", "frankfurt-n1"], ["Frankfurt"], ["a/b"], "frankfurt-n1"]
)
def test_bad_node_netns_are_refused(raw: dict[str, Any], value: object) -> None:
    raw["sites"]["here"]["node_netns"] = value
    assert "node_netns" in _error(raw)


def test_netns_may_name_a_client_node(raw: dict[str, Any], make: Any) -> None:
    raw["sites"]["here"]["netns"] = "frankfurt-n2"
    assert make(raw).config["sites"]["here"]["netns"] == "frankfurt-n2"


def test_each_job_of_a_wave_runs_in_its_nodes_namespace_and_records_its_address(
    raw: dict[str, Any], make: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    calls: list[list[str]] = []

    def fake_run(cmd: list[str], *_args: Any, **_kw: Any) -> subprocess.CompletedProcess[str]:
        calls.append(cmd)
        out = {"status": "ok", "host": "wn", "container_start": 1.0, "processing_start": 1.5, "bytes": 1,
               "bytes_staged": 0, "events": 0, "bytes_out": 2, "steps": {"processing": 0.5},
               "intervals": []}  # fmt: skip  # a payload's result (afkit.campaign.contract.PayloadResult)
        spec = json.loads(Path(cmd[-1]).read_text(encoding="utf-8"))
        Path(spec["result"]).write_text(json.dumps(out), encoding="utf-8")
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(job, "_run_payload", fake_run)
    monkeypatch.setattr(job, "worker_address", lambda netns="": f"address of {netns}")
    monkeypatch.setattr(shutil, "which", lambda _name: "/usr/bin/apptainer")
    sif, image = tmp_path / "bench.sif", tmp_path / "image.json"
    sif.write_bytes(b"SIF")
    image.write_text(json.dumps({"path": str(sif), "sha256": "0" * 64}), encoding="utf-8")
    raw["sites"]["here"]["node_netns"] = NODES[:2]
    campaign = make(nodes_read(raw, [3]))
    for spec in plan.specs(campaign, plan.expand(campaign)):
        spec = dataclasses.replace(spec, image=str(image), binds=(),
                                   site=dataclasses.replace(spec.site, scratch=str(tmp_path)))  # fmt: skip
        rec = job.run(spec, output=tmp_path / f"{spec.job.id}.json", log=tmp_path / "r.log")
        assert rec.wn_address == f"address of {NODES[spec.job.index % 2]}"
    assert [c[:2] for c in calls] == [["nsenter", f"--net=/run/netns/{ns}"] for ns in (*NODES[:2], NODES[0])]
