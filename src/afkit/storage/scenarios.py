"""The cache scenarios: which xrootd daemons each runs, on which loopback ports, and the URL
its clients use.

Ports (base ``AFKIT_STORAGE_BASE_PORT``, default 11094, clear of the testbed origin on 1094):
``origin`` base+0, ``xcache`` base+1, ``xcache-dca`` base+2, ``dcotf`` base+3 (redirector)
and base+4 (its caching server).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from afkit.errors import NotFoundError, UsageError

HOST = "127.0.0.1"
DEFAULT_BASE_PORT = 11094
DEFAULT_ORIGIN = "127.0.0.1:1094"


@dataclass(frozen=True)
class Daemon:
    name: str
    template: str
    offset: int  # port = base + offset
    dca: bool = False  # an XCache with direct cache access (pss.dca world)


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    daemons: tuple[Daemon, ...]
    entry: str  # the daemon clients connect to


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario(
            "origin",
            "plain XRootD data server, no cache",
            (Daemon("origin", "origin.cfg.j2", 0),),
            "origin",
        ),
        Scenario(
            "xcache",
            "XCache disk caching proxy (libXrdPss + libXrdPfc) in front of the origin",
            (Daemon("xcache", "xcache.cfg.j2", 1),),
            "xcache",
        ),
        Scenario(
            "xcache-dca",
            "XCache with direct cache access (pss.dca world): cached files are read in place",
            (Daemon("xcache-dca", "xcache.cfg.j2", 2, dca=True),),
            "xcache-dca",
        ),
        Scenario(
            "dcotf",
            "DCOTF-like: a redirector sends clients to the cached file on the shared filesystem",
            (
                Daemon("dcotf-cache", "xcache.cfg.j2", 4, dca=True),
                Daemon("dcotf-redirector", "redirector.cfg.j2", 3),
            ),
            "dcotf-redirector",
        ),
    )
}


def get_scenario(name: str) -> Scenario:
    try:
        return SCENARIOS[name]
    except KeyError:
        raise NotFoundError(
            f"unknown storage scenario '{name}'", hint=f"scenarios: {', '.join(SCENARIOS)}"
        ) from None


def base_port() -> int:
    raw = os.environ.get("AFKIT_STORAGE_BASE_PORT", str(DEFAULT_BASE_PORT))
    try:
        port = int(raw)
    except ValueError:
        raise UsageError(f"AFKIT_STORAGE_BASE_PORT='{raw}' is not a port number") from None
    if not 1024 <= port <= 65530:
        raise UsageError(f"AFKIT_STORAGE_BASE_PORT={port} is out of range 1024..65530")
    return port


def port_of(scenario: Scenario, daemon: Daemon, base: int | None = None) -> int:
    del scenario
    return (base_port() if base is None else base) + daemon.offset


def entry_port(scenario: Scenario, base: int | None = None) -> int:
    daemon = next(d for d in scenario.daemons if d.name == scenario.entry)
    return port_of(scenario, daemon, base)


def url(scenario_name: str, path: str, base: int | None = None) -> str:
    """The URL a client of ``scenario_name`` opens to read ``path`` (a path on the origin)."""
    scenario = get_scenario(scenario_name)
    if not path.startswith("/"):
        raise UsageError(f"path '{path}' must be absolute (the path on the origin server)")
    return f"root://{HOST}:{entry_port(scenario, base)}/{path}"


def default_origin() -> str:
    """``host:port`` of the origin the caches fetch from: from ``AFKIT_XROOTD_URL`` if set."""
    env = os.environ.get("AFKIT_XROOTD_URL", "")
    if env.startswith(("root://", "xroot://")):
        hostport = env.split("://", 1)[1].split("/", 1)[0]
        if hostport:
            return hostport if ":" in hostport else f"{hostport}:1094"
    return DEFAULT_ORIGIN
