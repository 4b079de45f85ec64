"""A site's client nodes in the link file, the commands `afkit federation up` runs for them, what
`afkit federation urls` reports and who the daemons allow (no namespaces are made here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from afkit.errors import InvalidError, NotFoundError
from afkit_testbed.federation import control, links, net

BASE = {"wan": {"rate": "200mbit", "latency_ms": 10}, "sites": {"gsi": {"index": 1}}}


def fed(**frankfurt: object) -> links.Federation:
    raw = {**BASE, "sites": {"gsi": {"index": 1}, "frankfurt": {"index": 2, **frankfurt}}}
    return links.parse(raw, Path("links.yaml"))


def three() -> links.Federation:
    return fed(nodes={"count": 3, "rate": "1gbit"})


def test_nodes_are_namespaces_with_addresses_in_the_sites_subnet() -> None:
    nodes = three().site("frankfurt").nodes
    assert [n.namespace for n in nodes] == ["frankfurt-n1", "frankfurt-n2", "frankfurt-n3"]
    assert [n.address for n in nodes] == ["10.77.2.21", "10.77.2.22", "10.77.2.23"]
    assert {n.link.rate_bit for n in nodes} == {1_000_000_000}


def test_a_site_without_nodes_has_none() -> None:
    assert three().site("gsi").nodes == ()


def test_the_default_link_file_gives_frankfurt_three_nodes_and_no_other_site_any() -> None:
    f = links.load()
    assert [n.namespace for n in f.site("frankfurt").nodes] == [f"frankfurt-n{k}" for k in (1, 2, 3)]
    assert all(not s.nodes for name, s in f.sites.items() if name != "frankfurt")


@pytest.mark.parametrize(
    ("nodes", "match"),
    [
        ({"count": 3}, "exactly 'count' and 'rate'"),
        ({"count": 3, "rate": "1gbit", "latency_ms": 1}, "exactly 'count' and 'rate'"),
        ([3], "exactly 'count' and 'rate'"),
        ({"count": 0, "rate": "1gbit"}, r"nodes\.count: 0 is not an integer in 1\.\.32"),
        ({"count": 33, "rate": "1gbit"}, r"nodes\.count: 33"),
        ({"count": True, "rate": "1gbit"}, r"nodes\.count: True"),
        ({"count": 2, "rate": "fast"}, r"sites\.frankfurt\.nodes\.rate: 'fast' is not a rate"),
    ],
)
def test_bad_nodes_are_refused_naming_the_key(nodes: object, match: str) -> None:
    with pytest.raises(InvalidError, match=match):
        fed(nodes=nodes)


def test_a_node_is_found_by_its_namespace_and_an_unknown_name_is_not_found() -> None:
    f = three()
    node = f.namespace("frankfurt-n2")
    assert isinstance(node, links.Node) and node.number == 2
    assert f.namespace("gsi") is f.site("gsi")
    with pytest.raises(NotFoundError, match="no site or client node 'frankfurt-n4'") as err:
        f.namespace("frankfurt-n4")
    assert "frankfurt-n3" in (err.value.hint or "")


def cmds_of(f: links.Federation) -> list[list[str]]:
    return net.up_commands(f)


def test_up_makes_each_nodes_namespace_and_its_veth_pair_from_the_sites_namespace() -> None:
    cmds = cmds_of(three())
    for k in (1, 2, 3):
        assert ["ip", "netns", "add", f"frankfurt-n{k}"] in cmds
        assert ["ip", "-n", "frankfurt", "link", "add", f"n{k}", "type", "veth",
                "peer", "name", net.NODE_IF, "netns", f"frankfurt-n{k}"] in cmds  # fmt: skip
        assert ["ip", "-n", f"frankfurt-n{k}", "addr", "add", f"10.77.2.2{k}/32", "dev", net.NODE_IF] in cmds


def test_nodes_are_made_after_every_site_namespace_and_the_wan() -> None:
    cmds = cmds_of(three())
    first_node = cmds.index(["ip", "netns", "add", "frankfurt-n1"])
    sites = [i for i, c in enumerate(cmds) if c[:3] == ["ip", "netns", "add"] and "-n" not in c[3]]
    assert max(sites) < first_node


def test_a_node_routes_everything_via_its_sites_address() -> None:
    cmds = cmds_of(three())
    assert ["ip", "-n", "frankfurt-n1", "route", "add", "10.77.2.10/32", "dev", net.NODE_IF] in cmds
    default = ["ip", "-n", "frankfurt-n1", "route", "add", "default", "via", "10.77.2.10", "dev", net.NODE_IF]
    assert default in cmds


def test_the_site_forwards_and_the_site_and_the_wan_route_back_to_each_node() -> None:
    cmds = cmds_of(three())
    assert net.in_ns("frankfurt", "sysctl", "-qw", "net.ipv4.ip_forward=1") in cmds
    back = ["ip", "-n", "frankfurt", "route", "replace", "10.77.2.22/32", "dev", "n2", "src", "10.77.2.10"]
    assert back in cmds
    assert ["ip", "-n", "wan", "route", "add", "10.77.2.22/32", "via", "10.77.2.10"] in cmds


def test_a_site_without_nodes_does_not_forward() -> None:
    cmds = cmds_of(three())
    assert net.in_ns("gsi", "sysctl", "-qw", "net.ipv4.ip_forward=1") not in cmds
    assert not any(c[:3] == ["ip", "-n", "gsi"] and "veth" in c and "lan0" in c for c in cmds)


def test_each_nodes_link_is_shaped_on_both_ends_at_the_node_rate() -> None:
    cmds = cmds_of(three())
    tbfs = [c for c in cmds if "tbf" in c and "1000000000bit" in c]
    ends = {(c[2], c[c.index("dev") + 1]) for c in tbfs}
    node_ends = {(f"frankfurt-n{k}", net.NODE_IF) for k in (1, 2, 3)}
    assert ends == node_ends | {("frankfurt", f"n{k}") for k in (1, 2, 3)}


def test_a_node_link_can_be_reshaped_and_cut_at_the_sites_end() -> None:
    node = three().nodes["frankfurt-n3"]
    cmds = net.link_shape(node, links.Link(50_000_000, 0))
    ends = [(c[2], c[c.index("dev") + 1]) for c in cmds]
    assert ends == [("frankfurt-n3", net.NODE_IF), ("frankfurt", "n3")]
    assert net.partition(node, True) == ["ip", "-n", "frankfurt", "link", "set", "n3", "down"]


def test_down_deletes_the_nodes_first_also_those_of_an_earlier_link_file() -> None:
    present = sorted(["wan", "gsi", "frankfurt", "frankfurt-n1", "frankfurt-n5", "other-n1"])
    cmds = net.down_commands(three(), present)
    assert [c[-1] for c in cmds] == ["frankfurt-n1", "frankfurt-n5", "gsi", "frankfurt", "wan"]


def test_urls_report_each_sites_nodes() -> None:
    sites = control.describe(three())["sites"]
    assert sites["gsi"]["nodes"] == []
    assert sites["frankfurt"]["nodes"] == [
        {"namespace": f"frankfurt-n{k}", "address": f"10.77.2.2{k}", "rate_mbit": 1000.0} for k in (1, 2, 3)
    ]


def test_every_daemon_allows_the_node_addresses() -> None:
    f = three()
    hosts = control.allowed_hosts(f)
    assert {"10.77.2.21", "10.77.2.22", "10.77.2.23"} <= set(hosts)
    for cmd in control.storage_up_cmds(f, f.site("gsi")):
        allowed = {cmd[i + 1] for i, a in enumerate(cmd) if a == "--allow"}
        assert "10.77.2.23" in allowed


def test_dcotfs_redirector_sends_clients_to_the_sites_address_which_the_nodes_reach() -> None:
    f = fed(nodes={"count": 1, "rate": "1gbit"}, caches={"origin": "gsi"})
    cmds = {c[c.index("up") + 1]: c for c in control.storage_up_cmds(f, f.site("frankfurt"))}
    dcotf = cmds["dcotf"]
    assert dcotf[dcotf.index("--redirect-host") + 1] == "10.77.2.10"
    assert "--redirect-host" not in cmds["xcache"] and "--redirect-host" not in cmds["origin"]


def test_a_node_link_up_again_restores_the_sites_route_to_the_node() -> None:
    """Setting the site's end down deletes the routes through it: up puts the route back."""
    f = three()
    node = f.nodes["frankfurt-n3"]
    assert net.link_state(f, node, down=True) == [net.partition(node, True)]
    up = net.link_state(f, node, down=False)
    assert up[0] == ["ip", "-n", "frankfurt", "link", "set", "n3", "up"]
    assert up[1] == [
        "ip",
        "-n",
        "frankfurt",
        "route",
        "replace",
        "10.77.2.23/32",
        "dev",
        "n3",
        "src",
        "10.77.2.10",
    ]


def test_a_sites_link_state_is_its_wan_end_only() -> None:
    f = three()
    assert net.link_state(f, f.site("gsi"), down=False) == [net.partition(f.site("gsi"), False)]
