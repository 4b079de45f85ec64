"""Network namespaces, veth links and tbf shaping of the federation (iproute2 and tc).

The command lists are built by pure functions (unit-tested) and run by :func:`run`. Everything is
created inside the testbed's own network namespace: the WAN namespace, one namespace per site and
one veth pair from the testbed's namespace (the submit host, ``fed0``) into the WAN.

A site's client nodes (links.Node) are namespaces of their own, each joined to its site's namespace
(the site's LAN: its storage and caches) by a veth pair shaped with tbf at the node's rate on both
ends. A node's address is in its site's subnet, reached by host routes: the node's only route is
its site's address (``.10``, on the link, also the node's default gateway), the site routes the
node's ``/32`` to its end of the link and forwards, and the WAN namespace routes the node's ``/32``
via the site's address. So a node reaches its site's daemons on the site's address and the other
sites' storage through the site and the site's WAN link, and every packet keeps its 10.77 address.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from afkit.errors import AfkitError
from afkit_testbed.federation.links import GATEWAY, SITE_HOST, SUBNET, WAN_NS, Federation, Link, Node, Site

SUBMIT_IF = "fed0"
SUBMIT_WAN_IF = "w-submit"
SITE_IF = "wan0"
NODE_IF = "lan0"  # a client node's end of its link to the site's namespace
NETNS_DIR = Path("/run/netns")
Cmd = list[str]


def submit_address() -> str:
    return f"{SUBNET}.0.{SITE_HOST}"


def in_ns(ns: str, *cmd: str) -> Cmd:
    """CMD run in the named network namespace NS (mount namespace unchanged)."""
    return ["nsenter", f"--net={NETNS_DIR / ns}", "--", *cmd]


def tbf(ns: str, dev: str, link: Link) -> Cmd:
    """A token bucket at the link's rate on DEV's egress (burst: 10 ms of data, >= 64 KiB)."""
    burst = max(link.rate_bit // 8 // 100, 64 * 1024)
    return ["tc", "-n", ns, "qdisc", "replace", "dev", dev, "root", "tbf",
            "rate", f"{link.rate_bit}bit", "burst", str(burst), "latency", "100ms"]  # fmt: skip


def shape(site: Site, link: Link) -> list[Cmd]:
    """Both directions of a site's WAN link: the site's upload and its download."""
    return [tbf(site.name, SITE_IF, link), tbf(WAN_NS, site.wan_ifname, link)]


def node_shape(node: Node, link: Link) -> list[Cmd]:
    """Both directions of a client node's link: its upload (node end) and download (site end)."""
    return [tbf(node.namespace, NODE_IF, link), tbf(node.site, node.site_ifname, link)]


def wan_commands() -> list[Cmd]:
    wan = f"{SUBNET}.0.{GATEWAY}"
    return [
        ["ip", "netns", "add", WAN_NS],
        ["ip", "-n", WAN_NS, "link", "set", "lo", "up"],
        in_ns(WAN_NS, "sysctl", "-qw", "net.ipv4.ip_forward=1"),
        ["ip", "link", "add", SUBMIT_IF, "type", "veth", "peer", "name", SUBMIT_WAN_IF, "netns", WAN_NS],
        ["ip", "addr", "add", f"{submit_address()}/24", "dev", SUBMIT_IF],
        ["ip", "link", "set", SUBMIT_IF, "up"],
        ["ip", "-n", WAN_NS, "addr", "add", f"{wan}/24", "dev", SUBMIT_WAN_IF],
        ["ip", "-n", WAN_NS, "link", "set", SUBMIT_WAN_IF, "up"],
        ["ip", "route", "add", f"{SUBNET}.0.0/16", "via", wan],
    ]


def site_commands(site: Site) -> list[Cmd]:
    ns = site.name
    return [
        ["ip", "netns", "add", ns],
        ["ip", "-n", ns, "link", "set", "lo", "up"],
        [
            "ip",
            "-n",
            ns,
            "link",
            "add",
            SITE_IF,
            "type",
            "veth",
            "peer",
            "name",
            site.wan_ifname,
            "netns",
            WAN_NS,
        ],
        ["ip", "-n", ns, "addr", "add", f"{site.address}/24", "dev", SITE_IF],
        ["ip", "-n", ns, "link", "set", SITE_IF, "up"],
        ["ip", "-n", ns, "route", "add", "default", "via", site.gateway],
        ["ip", "-n", WAN_NS, "addr", "add", f"{site.gateway}/24", "dev", site.wan_ifname],
        ["ip", "-n", WAN_NS, "link", "set", site.wan_ifname, "up"],
        *shape(site, site.link),
    ]


def node_commands(site: Site, node: Node) -> list[Cmd]:
    """Client node NODE of SITE: its namespace, its shaped link to the site, the routes both ways."""
    ns, host = node.namespace, f"{node.address}/32"
    return [
        ["ip", "netns", "add", ns],
        ["ip", "-n", ns, "link", "set", "lo", "up"],
        [
            "ip",
            "-n",
            site.name,
            "link",
            "add",
            node.site_ifname,
            "type",
            "veth",
            "peer",
            "name",
            NODE_IF,
            "netns",
            ns,
        ],
        ["ip", "-n", ns, "addr", "add", host, "dev", NODE_IF],
        ["ip", "-n", ns, "link", "set", NODE_IF, "up"],
        ["ip", "-n", ns, "route", "add", f"{site.address}/32", "dev", NODE_IF],
        ["ip", "-n", ns, "route", "add", "default", "via", site.address, "dev", NODE_IF],
        ["ip", "-n", site.name, "link", "set", node.site_ifname, "up"],
        site_route_to(node, site.address),
        ["ip", "-n", WAN_NS, "route", "add", host, "via", site.address],
        *node_shape(node, node.link),
    ]


def site_route_to(node: Node, site_address: str) -> Cmd:
    """The site's route to NODE over its end of the node's link (``replace``: also after the link
    was down, which deletes the routes through it)."""
    return ["ip", "-n", node.site, "route", "replace", f"{node.address}/32", "dev", node.site_ifname,
            "src", site_address]  # fmt: skip


def nodes_commands(site: Site) -> list[Cmd]:
    """SITE's client nodes; the site's namespace forwards between them and its WAN link."""
    if not site.nodes:
        return []
    cmds = [in_ns(site.name, "sysctl", "-qw", "net.ipv4.ip_forward=1")]
    for node in site.nodes:
        cmds += node_commands(site, node)
    return cmds


def up_commands(fed: Federation) -> list[Cmd]:
    cmds = wan_commands()
    for site in fed.sites.values():
        cmds += site_commands(site)
    for site in fed.sites.values():
        cmds += nodes_commands(site)
    return cmds


def partition(site: Site | Node, down: bool) -> Cmd:
    """Cut (or restore) a site's WAN link at the WAN end: the site is unreachable, and reaches nothing
    (a client node: its link at the site's end)."""
    if isinstance(site, Node):
        return ["ip", "-n", site.site, "link", "set", site.site_ifname, "down" if down else "up"]
    return ["ip", "-n", WAN_NS, "link", "set", site.wan_ifname, "down" if down else "up"]


def link_state(fed: Federation, target: Site | Node, down: bool) -> list[Cmd]:
    """Take a site's WAN link or a client node's link down, or up again (a node's: with the site's
    route to the node, which the kernel deleted with the link)."""
    if isinstance(target, Node) and not down:
        return [partition(target, False), site_route_to(target, fed.site(target.site).address)]
    return [partition(target, down)]


def link_shape(target: Site | Node, link: Link) -> list[Cmd]:
    """The tbf commands of a site's WAN link or a client node's link."""
    return node_shape(target, link) if isinstance(target, Node) else shape(target, link)


def namespaces() -> list[str]:
    return sorted(p.name for p in NETNS_DIR.iterdir()) if NETNS_DIR.is_dir() else []


def run(cmd: Cmd) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise AfkitError(f"'{' '.join(cmd)}' failed (exit {proc.returncode}): {proc.stderr.strip()}")
    return proc.stdout


def down_commands(fed: Federation, present: list[str] | None = None) -> list[Cmd]:
    """Deleting a namespace deletes its veth ends and their peers (fed0 with the WAN). The client
    nodes go first: every ``SITE-nK`` namespace of the federation's sites, also those of an earlier
    link file with more nodes."""
    there = namespaces() if present is None else present
    node_re = re.compile(rf"^(?:{'|'.join(map(re.escape, fed.sites))})-n[0-9]+$")
    nodes = [ns for ns in there if node_re.match(ns)]
    return [["ip", "netns", "del", ns] for ns in [*nodes, *fed.sites, WAN_NS] if ns in there]
