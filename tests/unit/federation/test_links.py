"""The federation's link file and the commands built from it (no namespaces are made here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from afkit.errors import InvalidError
from afkit_testbed.federation import links, net


def fed(raw: dict) -> links.Federation:
    return links.parse(raw, Path("links.yaml"))


BASE = {"wan": {"rate": "200mbit", "latency_ms": 10}, "sites": {"gsi": {"index": 1}}}


def test_default_file_has_three_sites_with_their_own_subnets() -> None:
    f = links.load()
    assert set(f.sites) >= {"gsi", "frankfurt", "alpes"}
    assert len({s.address for s in f.sites.values()}) == len(f.sites)
    assert f.defaults == links.Link(200_000_000, 10.0)


def test_site_override_keeps_the_other_default() -> None:
    raw = {**BASE, "sites": {"gsi": {"index": 1, "wan": {"rate": "50mbit"}}}}
    assert fed(raw).site("gsi").link == links.Link(50_000_000, 10.0)


@pytest.mark.parametrize("rate", ["200", "fast", "10mb", "1kbit"])
def test_bad_rates_are_refused(rate: str) -> None:
    with pytest.raises(InvalidError, match=r"wan\.rate"):
        fed({**BASE, "wan": {"rate": rate, "latency_ms": 1}})


def test_duplicate_index_is_refused() -> None:
    with pytest.raises(InvalidError, match="also the index of gsi"):
        fed({**BASE, "sites": {"gsi": {"index": 1}, "fra": {"index": 1}}})


def test_cache_origin_must_be_a_site() -> None:
    with pytest.raises(InvalidError, match="unknown site 'cern'"):
        fed({**BASE, "sites": {"gsi": {"index": 1, "caches": {"origin": "cern"}}}})


def test_site_named_wan_is_refused() -> None:
    with pytest.raises(InvalidError, match="not 'wan'"):
        fed({**BASE, "sites": {"wan": {"index": 1}}})


def test_site_without_caches_has_none() -> None:
    assert fed(BASE).site("gsi").caches == ()


def test_shaping_covers_both_directions_at_the_link_rate() -> None:
    site = fed(BASE).site("gsi")
    cmds = net.shape(site, links.Link(8_000_000, 0))
    assert [c[2] for c in cmds] == ["gsi", "wan"]
    assert all("tbf" in c and "8000000bit" in c for c in cmds)
    burst = int(cmds[0][cmds[0].index("burst") + 1])
    assert burst >= 64 * 1024


def test_partition_takes_the_wan_end_down_and_up() -> None:
    site = fed(BASE).site("gsi")
    assert net.partition(site, True)[-1] == "down"
    assert net.partition(site, False)[-1] == "up"


def test_the_default_file_has_alpes_take_x509_proxies_only() -> None:
    assert [s.name for s in links.load().sites.values() if s.x509] == ["alpes"]


def test_x509_must_be_true_or_false() -> None:
    with pytest.raises(InvalidError, match=r"sites\.gsi\.x509: 'yes' is not true or false"):
        fed({**BASE, "sites": {"gsi": {"index": 1, "x509": "yes"}}})
