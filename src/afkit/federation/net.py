"""Network namespaces, veth links and tbf shaping of the federation (iproute2 and tc).

The command lists are built by pure functions (unit-tested) and run by :func:`run`. Everything is
created inside the testbed's own network namespace: the WAN namespace, one namespace per site and
one veth pair from the testbed's namespace (the submit host, ``fed0``) into the WAN.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from afkit.errors import AfkitError
from afkit.federation.links import GATEWAY, SITE_HOST, SUBNET, WAN_NS, Federation, Link, Site

SUBMIT_IF = "fed0"
SUBMIT_WAN_IF = "w-submit"
SITE_IF = "wan0"
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


def up_commands(fed: Federation) -> list[Cmd]:
    cmds = wan_commands()
    for site in fed.sites.values():
        cmds += site_commands(site)
    return cmds


def partition(site: Site, down: bool) -> Cmd:
    """Cut (or restore) a site's WAN link at the WAN end: the site is unreachable, and reaches nothing."""
    return ["ip", "-n", WAN_NS, "link", "set", site.wan_ifname, "down" if down else "up"]


def namespaces() -> list[str]:
    return sorted(p.name for p in NETNS_DIR.iterdir()) if NETNS_DIR.is_dir() else []


def run(cmd: Cmd) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise AfkitError(f"'{' '.join(cmd)}' failed (exit {proc.returncode}): {proc.stderr.strip()}")
    return proc.stdout


def down_commands(fed: Federation) -> list[Cmd]:
    """Deleting a namespace deletes its veth ends and their peers (fed0 with the WAN)."""
    present = set(namespaces())
    return [["ip", "netns", "del", ns] for ns in [*fed.sites, WAN_NS] if ns in present]
