"""The federation campaign (workflows/config/federation.yaml): its locations match the link file,
and a site with ``netns`` runs its jobs in that network namespace."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from afkit.campaign import config, job, locations, plan
from afkit.paths import workflows_dir
from afkit_testbed.federation import links

CAMPAIGN = workflows_dir() / "config" / "federation.yaml"


@pytest.fixture
def campaign() -> config.Campaign:
    return config.load(CAMPAIGN)


def test_same_site_pairs_read_the_local_path_others_the_dataset_sites_wan_url(
    campaign: config.Campaign,
) -> None:
    fed = links.load()
    by_pair = {(loc.site, loc.dataset): loc for loc in locations.matrix(campaign, ["origin"])}
    for (site, dataset), loc in by_pair.items():
        home = dataset.removesuffix("-data")
        if site == home:
            assert loc.urls[0].startswith(f"/srv/federation/{home}/data/"), loc
        else:
            assert loc.urls[0].startswith(fed.site(home).storage_url + "//"), loc
    assert len({loc.urls[0] for loc in by_pair.values()}) == 6  # 3 local paths, 3 WAN endpoints


def test_campaign_addresses_are_the_link_files(campaign: config.Campaign) -> None:
    fed = links.load()
    for name, store in campaign.config["storage"].items():
        assert store["url"] == fed.site(name).storage_url
    caches = campaign.config["storage"]["gsi"]["caches"]
    assert caches["xcache"] == f"root://{fed.site('frankfurt').address}:1095"
    assert fed.site("frankfurt").cache_origin == "gsi"


def test_a_netns_site_runs_its_job_in_that_namespace(
    campaign: config.Campaign, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    calls: list[list[str]] = []

    def fake_run(cmd: list[str], *_args: Any, **_kw: Any) -> subprocess.CompletedProcess[str]:
        calls.append(cmd)
        out = {"status": "ok", "host": "wn", "container_start": 1.0, "processing_start": 1.5, "bytes": 1,
               "bytes_staged": 0, "events": 0, "bytes_out": 2, "steps": {"processing": 0.5},
               "intervals": []}  # fmt: skip  # a payload's result (afkit.campaign.contract.PayloadResult)
        spec = json.loads(Path(cmd[-1]).read_text(encoding="utf-8"))  # the payload's spec, last argument
        Path(spec["result"]).write_text(json.dumps(out), encoding="utf-8")
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(job, "_run_payload", fake_run)
    monkeypatch.setattr(shutil, "which", lambda _name: "/usr/bin/apptainer")
    sif = tmp_path / "bench.sif"
    sif.write_bytes(b"SIF")
    j = next(x for x in plan.expand(campaign) if x.site == "alpes")
    spec = plan.specs(campaign, [j])[0]
    image = tmp_path / "image.json"
    image.write_text(json.dumps({"path": str(sif), "sha256": "0" * 64}), encoding="utf-8")
    spec = dataclasses.replace(spec, image=str(image), binds=(),
                               site=dataclasses.replace(spec.site, scratch=str(tmp_path)))  # fmt: skip
    rec = job.run(spec, output=tmp_path / "r.json", log=tmp_path / "r.log")
    assert rec.status == "ok"
    assert calls[0][:3] == ["nsenter", "--net=/run/netns/alpes", "--"]
    assert calls[0][3] == "apptainer"
