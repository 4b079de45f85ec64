"""The federation's link file: sites, their addresses and the figures of their WAN links.

``testbed/afkit_testbed/templates/federation/links.yaml`` is the default. Every site gets the subnet
``10.77.INDEX.0/24``: its host (the site's namespace) is ``.10``, its WAN gateway (in the WAN
namespace, where toxiproxy listens for the site's storage) ``.1``. The submit host (the testbed's
own namespace) is ``10.77.0.10`` behind the gateway ``10.77.0.1``. A site's client nodes
(``nodes: {count: N, rate: R}``) are namespaces ``SITE-n1`` .. ``SITE-nN`` with the addresses
``10.77.INDEX.21`` .. (``20 + k``), each behind its own link to the site's namespace (its LAN).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from afkit import yamlio
from afkit.errors import InvalidError, NotFoundError

SUBNET = "10.77"
SITE_HOST = 10
GATEWAY = 1
ORIGIN_PORT = 1094
TOXIPROXY_API_PORT = 8474
WAN_NS = "wan"
CACHE_SCENARIOS = ("xcache", "xcache-dca", "dcotf")
NODE_HOST = 20  # a site's client node k has the address 10.77.INDEX.(NODE_HOST + k)
MAX_NODES = 32
NAME_RE = re.compile(r"^[a-z][a-z0-9]{0,11}$")  # interface names w-NAME stay within 15 characters
RATE_RE = re.compile(r"^([0-9]+(?:\.[0-9]+)?)(kbit|mbit|gbit|bit)$")
RATE_UNIT = {"bit": 1, "kbit": 1_000, "mbit": 1_000_000, "gbit": 1_000_000_000}


def default_links_file() -> Path:
    from afkit_testbed import templates_dir

    return templates_dir() / "federation" / "links.yaml"


def parse_rate(text: str, *, what: str = "rate") -> int:
    """``200mbit`` -> 200_000_000 (bit/s; tc's units, decimal)."""
    m = RATE_RE.match(str(text).strip().lower())
    if not m:
        raise InvalidError(f"{what}: {text!r} is not a rate", hint="write e.g. 200mbit, 1gbit or 500kbit")
    bits = int(float(m.group(1)) * RATE_UNIT[m.group(2)])
    if bits < 8_000:
        raise InvalidError(f"{what}: {text!r} is below 8kbit", hint="give a rate of 8kbit or more")
    return bits


@dataclass(frozen=True)
class Link:
    rate_bit: int
    latency_ms: float

    @property
    def rate_mbit(self) -> float:
        return self.rate_bit / 1e6


@dataclass(frozen=True)
class Node:
    """Client node NUMBER (1..) of site SITE: a namespace joined to the site's by a link of its own."""

    site: str
    site_index: int
    number: int
    link: Link  # the node's link to its site's LAN (tbf on both ends; no latency)

    @property
    def namespace(self) -> str:
        return f"{self.site}-n{self.number}"

    @property
    def address(self) -> str:
        """In the site's subnet (a host route each way: the site's namespace is the node's gateway)."""
        return f"{SUBNET}.{self.site_index}.{NODE_HOST + self.number}"

    @property
    def site_ifname(self) -> str:
        """The site's end of the node's link, in the site's namespace."""
        return f"n{self.number}"


@dataclass(frozen=True)
class Site:
    name: str
    index: int
    link: Link
    cache_origin: str | None = None
    caches: tuple[str, ...] = ()
    shared_fs: bool = True  # false: the site's batch workers are another file-system domain
    nodes: tuple[Node, ...] = ()  # client nodes of the site (links.yaml sites.NAME.nodes)
    # guarded: its origin also accepts X.509 proxies of the federation's users (XRootD's gsi)
    x509: bool = False

    @property
    def address(self) -> str:
        return f"{SUBNET}.{self.index}.{SITE_HOST}"

    @property
    def gateway(self) -> str:
        return f"{SUBNET}.{self.index}.{GATEWAY}"

    @property
    def wan_ifname(self) -> str:
        return f"w-{self.name}"

    @property
    def storage_url(self) -> str:
        """The site's storage as other sites reach it: toxiproxy in the WAN namespace."""
        return f"root://{self.gateway}:{ORIGIN_PORT}"

    @property
    def local_url(self) -> str:
        """The site's storage as its own workers reach it (LAN, no proxy)."""
        return f"root://{self.address}:{ORIGIN_PORT}"


@dataclass(frozen=True)
class Federation:
    sites: dict[str, Site]
    source: Path
    defaults: Link = field(default_factory=lambda: Link(200_000_000, 10.0))

    def site(self, name: str) -> Site:
        try:
            return self.sites[name]
        except KeyError:
            raise NotFoundError(
                f"no site {name!r} in the federation", hint=f"sites: {', '.join(self.sites)} ({self.source})"
            ) from None

    @property
    def nodes(self) -> dict[str, Node]:
        """Every site's client nodes, by namespace."""
        return {n.namespace: n for s in self.sites.values() for n in s.nodes}

    def namespace(self, name: str) -> Site | Node:
        """The site or client node whose network namespace is NAME."""
        found = self.sites.get(name) or self.nodes.get(name)
        if found is None:
            nodes = f"; client nodes: {', '.join(self.nodes)}" if self.nodes else ""
            raise NotFoundError(f"no site or client node {name!r} in the federation",
                                hint=f"sites: {', '.join(self.sites)}{nodes} ({self.source})")  # fmt: skip
        return found


def _link(raw: Any, base: Link | None, where: str) -> Link:
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise InvalidError(f"{where}: must be a mapping with 'rate' and 'latency_ms'")
    extra = set(raw) - {"rate", "latency_ms"}
    if extra:
        raise InvalidError(f"{where}: unknown key(s) {', '.join(sorted(extra))}; allowed: rate, latency_ms")
    if base is None and not {"rate", "latency_ms"} <= set(raw):
        raise InvalidError(f"{where}: give both 'rate' and 'latency_ms'")
    rate = parse_rate(raw["rate"], what=f"{where}.rate") if "rate" in raw else base.rate_bit  # type: ignore[union-attr]
    latency = raw.get("latency_ms", base.latency_ms if base else 0)
    if not isinstance(latency, int | float) or isinstance(latency, bool) or latency < 0:
        raise InvalidError(f"{where}.latency_ms: {latency!r} is not a number of milliseconds >= 0")
    return Link(rate, float(latency))


def _nodes(name: str, index: int, raw: Any) -> tuple[Node, ...]:
    """``sites.NAME.nodes: {count: N, rate: R}``: N client nodes, each with a link of rate R."""
    where = f"sites.{name}.nodes"
    if raw is None:
        return ()
    if not isinstance(raw, dict) or set(raw) != {"count", "rate"}:
        raise InvalidError(
            f"{where}: give a mapping with exactly 'count' and 'rate', e.g. {{count: 3, rate: 1gbit}}"
        )
    count = raw["count"]
    if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= MAX_NODES:
        raise InvalidError(f"{where}.count: {count!r} is not an integer in 1..{MAX_NODES}")
    link = Link(parse_rate(raw["rate"], what=f"{where}.rate"), 0.0)
    return tuple(Node(name, index, k, link) for k in range(1, count + 1))


def _site(name: str, raw: Any, defaults: Link) -> Site:
    where = f"sites.{name}"
    if not NAME_RE.match(name) or name == WAN_NS:
        raise InvalidError(
            f"{where}: site names are 1-12 lower-case letters or digits, starting with a letter, not 'wan'"
        )
    if not isinstance(raw, dict):
        raise InvalidError(
            f"{where}: must be a mapping (index, optional wan, caches, shared_fs, nodes, x509)"
        )
    extra = set(raw) - {"index", "wan", "caches", "shared_fs", "nodes", "x509"}
    if extra:
        allowed = "index, wan, caches, shared_fs, nodes, x509"
        raise InvalidError(f"{where}: unknown key(s) {', '.join(sorted(extra))}; allowed: {allowed}")
    shared_fs, x509 = raw.get("shared_fs", True), raw.get("x509", False)
    for key, value in (("shared_fs", shared_fs), ("x509", x509)):
        if not isinstance(value, bool):
            raise InvalidError(f"{where}.{key}: {value!r} is not true or false")
    index = raw.get("index")
    if not isinstance(index, int) or isinstance(index, bool) or not 1 <= index <= 254:
        raise InvalidError(f"{where}.index: {index!r} is not an integer in 1..254 (the subnet 10.77.INDEX)")
    caches = raw.get("caches") or {}
    origin = caches.get("origin") if isinstance(caches, dict) else None
    scenarios = tuple(caches.get("scenarios", CACHE_SCENARIOS)) if isinstance(caches, dict) and caches else ()
    if caches and (not isinstance(origin, str) or any(s not in CACHE_SCENARIOS for s in scenarios)):
        raise InvalidError(
            f"{where}.caches: give 'origin' (a site name) and 'scenarios' (of {', '.join(CACHE_SCENARIOS)})"
        )
    link = _link(raw.get("wan"), defaults, f"{where}.wan")
    return Site(name, index, link, origin, scenarios, shared_fs, _nodes(name, index, raw.get("nodes")), x509)


def parse(raw: Any, source: Path) -> Federation:
    if not isinstance(raw, dict) or not isinstance(raw.get("sites"), dict) or not raw["sites"]:
        raise InvalidError(f"{source}: expected a mapping with 'wan' and a non-empty 'sites' mapping")
    extra = set(raw) - {"wan", "sites"}
    if extra:
        raise InvalidError(f"{source}: unknown key(s) {', '.join(sorted(extra))}; allowed: wan, sites")
    defaults = _link(raw.get("wan"), None, "wan")
    sites = {name: _site(str(name), spec, defaults) for name, spec in raw["sites"].items()}
    seen: dict[int, str] = {}
    for site in sites.values():
        if site.index in seen:
            raise InvalidError(
                f"sites.{site.name}.index: {site.index} is also the index of {seen[site.index]}"
            )
        seen[site.index] = site.name
        if site.cache_origin is not None and site.cache_origin not in sites:
            raise InvalidError(
                f"sites.{site.name}.caches.origin: unknown site {site.cache_origin!r}; "
                f"sites: {', '.join(sites)}"
            )
    return Federation(sites, source, defaults)


def load(path: Path | None = None) -> Federation:
    p = path or default_links_file()
    if not p.is_file():
        raise NotFoundError(f"federation link file not found: {p}", hint="give --links FILE")
    try:
        raw = yamlio.load(p.read_text(encoding="utf-8"))
    except yaml.YAMLError as err:
        raise InvalidError(f"{p}: not valid YAML: {err}") from err
    try:
        return parse(raw, p)
    except InvalidError as err:
        hint = err.hint or "see testbed/afkit_testbed/templates/federation/links.yaml"
        raise InvalidError(f"{p}: {err}", hint=hint) from None
