"""The per-site batch workers' configuration, as rendered from the testbed's templates
(testbed/afkit_testbed/templates/federation/; no daemons)."""

from __future__ import annotations

from pathlib import Path

import pytest

from afkit.errors import InvalidError
from afkit_testbed.federation import batch, links


def _condor(site: str, tmp_path: Path) -> str:
    fed = links.load()
    return batch.render(
        "condor.conf.j2", site=site, address=fed.site(site).address, submit_address="10.77.0.10",
        local_dir=str(tmp_path), testbed_files=["/etc/condor/config.d/50-afkit-testbed.conf"],
        trust_domain="127.0.0.1:9618", cpus=2, memory_mb=2048, shared_fs=fed.site(site).shared_fs,
    )  # fmt: skip


def _values(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and not line.startswith("#"):
            out[key.strip()] = value.strip()
    return out


def test_a_sites_execute_node_advertises_its_site_bound_to_its_address(tmp_path: Path) -> None:
    conf = _values(_condor("gsi", tmp_path))
    assert conf["AFKIT_SITE"] == '"gsi"'
    assert "AFKIT_SITE" in conf["STARTD_ATTRS"]
    assert conf["NETWORK_INTERFACE"] == "10.77.1.10"
    assert conf["BIND_ALL_INTERFACES"] == "False"
    assert conf["COLLECTOR_HOST"] == "10.77.0.10:9618"
    assert conf["LOCAL_DIR"] == str(tmp_path)
    # only jobs that ask for a federation site: the pool's other jobs stay on the testbed's slots
    assert conf["START"] == "TARGET.WantAfkitSite =?= true"


def test_the_testbed_config_is_read_before_the_sites_settings(tmp_path: Path) -> None:
    text = _condor("gsi", tmp_path)
    assert text.index("include : /etc/condor/config.d/50-afkit-testbed.conf") < text.index(
        "NETWORK_INTERFACE"
    )
    assert _values(text)["LOCAL_CONFIG_DIR"] == ""  # else HTCondor reads config.d last, undoing the site


def test_only_a_site_without_shared_fs_is_its_own_file_system_domain(tmp_path: Path) -> None:
    assert links.load().site("alpes").shared_fs is False  # the link file's alpes
    assert _values(_condor("alpes", tmp_path))["FILESYSTEM_DOMAIN"] == "alpes.afkit-federation"
    assert "FILESYSTEM_DOMAIN" not in _values(_condor("frankfurt", tmp_path))


def test_slurm_gets_a_node_and_a_partition_per_site() -> None:
    fed = links.load()
    sites = [{"name": s.name, "node": batch.slurm_node(s), "address": s.address} for s in fed.sites.values()]
    text = batch.render("slurm.conf.j2", submit_address="10.77.0.10", cpus=2, memory_mb=2048, sites=sites)
    lines = [ln for ln in text.splitlines() if ln and not ln.startswith("#")]
    assert "SlurmctldAddr=10.77.0.10" in lines
    assert any(ln.startswith("NodeName=afkit-alpes NodeAddr=10.77.3.10 ") for ln in lines)
    assert "PartitionName=alpes Nodes=afkit-alpes MaxTime=INFINITE State=UP" in lines
    assert sum(ln.startswith("PartitionName=") for ln in lines) == len(fed.sites)


def test_a_link_files_shared_fs_must_be_a_boolean(tmp_path: Path) -> None:
    raw = {"wan": {"rate": "100mbit", "latency_ms": 1}, "sites": {"a": {"index": 1, "shared_fs": "no"}}}
    with pytest.raises(InvalidError, match=r"sites\.a\.shared_fs: 'no' is not true or false"):
        links.parse(raw, tmp_path / "l.yaml")
