"""``up``, ``down`` and the state of the federation: namespaces, links, toxiproxy, storage per site.

Layout (``$AFKIT_FEDERATION_ROOT``, default /srv/federation): ``state.json`` (the running
federation: link file, sites, addresses, URLs), ``SITE/data`` (the site's origin exports it),
``SITE/storage`` (``afkit storage`` state of the site's daemons), ``toxiproxy/`` (config, log,
pidfile). Every daemon runs in its site's network namespace: the origin on SITE:1094, the caches
on 1095 (xcache), 1096 (xcache-dca), 1097 (dcotf redirector) and 1098 (dcotf cache). A site's
client nodes (``SITE-n1`` ..) run no daemons: they are where a campaign's jobs read from.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import NotRequired, TypedDict

from afkit.atomic import write_atomic
from afkit.errors import AfkitError, PrereqError, UnsafeError
from afkit.storage import daemon as dmn
from afkit.storage.scenarios import SCENARIOS, entry_port
from afkit_testbed.federation import batch, guard, hosts, net, toxiproxy
from afkit_testbed.federation.links import ORIGIN_PORT, SUBNET, TOXIPROXY_API_PORT, WAN_NS, Federation, Site


def root_dir() -> Path:
    return Path(os.environ.get("AFKIT_FEDERATION_ROOT", "/srv/federation"))


def state_file() -> Path:
    return root_dir() / "state.json"


def data_dir(site: str) -> Path:
    return root_dir() / site / "data"


def storage_dir(site: str) -> Path:
    return root_dir() / site / "storage"


def cache_url(site: Site, scenario: str) -> str:
    return f"root://{site.address}:{entry_port(SCENARIOS[scenario], ORIGIN_PORT)}"


class NodeState(TypedDict):
    """One client node of a site in state.json ``sites.SITE.nodes``."""

    namespace: str
    address: str
    rate_mbit: float


class SiteState(TypedDict):
    """One site in state.json ``sites``."""

    index: int
    namespace: str
    address: str
    gateway: str
    rate_mbit: float
    latency_ms: float
    storage_url: str
    local_url: str
    data: str
    caches: dict[str, str]  # scenario -> its URL
    cache_origin: str | None
    nodes: list[NodeState]  # the site's client nodes (links.yaml sites.SITE.nodes), in order


class Clients(TypedDict):
    """What clients need of the federation (``describe``)."""

    links: str
    wan_namespace: str
    submit_address: str
    toxiproxy_api: str
    sites: dict[str, SiteState]


class State(Clients, batch.Workers):
    """state.json of the running federation (``afkit federation urls`` prints it); ``guard`` only
    when it is guarded (afkit_testbed.federation.guard)."""

    guard: NotRequired[guard.GuardState]


def is_guarded(state: State) -> bool:
    return "guard" in state


def describe(fed: Federation, guarded: bool = False) -> Clients:
    """What clients need: per site its address, storage URLs (``roots://`` when GUARDED), caches
    and data directory."""
    sites: dict[str, SiteState] = {}
    for s in fed.sites.values():
        sites[s.name] = {
            "index": s.index,
            "namespace": s.name,
            "address": s.address,
            "gateway": s.gateway,
            "rate_mbit": s.link.rate_mbit,
            "latency_ms": s.link.latency_ms,
            "storage_url": guard.scheme(s.storage_url, guarded),
            "local_url": guard.scheme(s.local_url, guarded),
            "data": str(data_dir(s.name)),
            "caches": {sc: guard.scheme(cache_url(s, sc), guarded) for sc in s.caches},
            "cache_origin": s.cache_origin,
            "nodes": [
                {"namespace": n.namespace, "address": n.address, "rate_mbit": n.link.rate_mbit}
                for n in s.nodes
            ],
        }
    return {
        "links": str(fed.source),
        "wan_namespace": WAN_NS,
        "submit_address": net.submit_address(),
        "toxiproxy_api": toxiproxy.api_url(),
        "sites": sites,
    }


def allowed_hosts(fed: Federation) -> list[str]:
    """xrd.allow of every daemon: the federation's own addresses (a wildcard such as 10.77.* does
    not match: xrootd names an IPv4 client [::ffff:10.77.1.10]). Clients through toxiproxy come
    from the WAN gateway of the server's site; clients on a site's client nodes from their own."""
    hosts = [net.submit_address()]
    for s in fed.sites.values():
        hosts += [s.address, s.gateway, *(n.address for n in s.nodes)]
    return hosts


def storage_cmd(fed: Federation, site: Site, action: str, scenario: str, *extra: str) -> list[str]:
    """``afkit storage ACTION SCENARIO`` for SITE, run in the site's namespace."""
    args = [
        sys.executable,
        "-m",
        "afkit",
        "storage",
        action,
        scenario,
        "--state-dir",
        str(storage_dir(site.name)),
    ]
    if action == "up":
        args += [a for h in allowed_hosts(fed) for a in ("--allow", h)]
        args += extra
    return net.in_ns(site.name, "env", f"AFKIT_STORAGE_BASE_PORT={ORIGIN_PORT}", *args)


def storage_up_cmds(fed: Federation, site: Site, guarded: bool = False) -> list[list[str]]:
    """``afkit storage up`` of SITE's origin and caches; GUARDED: with TLS and tokens, each cache
    with its service token for its origin (afkit_testbed.federation.guard.storage_args)."""
    root = root_dir()
    locks = guard.storage_args(root, site, "origin", "") if guarded else []
    cmds = [storage_cmd(fed, site, "up", "origin", "--data", str(data_dir(site.name)), *locks)]
    if site.cache_origin:
        upstream = fed.site(site.cache_origin)
        for scenario in site.caches:
            # DCOTF's redirector sends its clients to the site's address, not loopback: clients
            # on the site's client nodes (other namespaces) reach its cache there too
            here = ("--redirect-host", site.address) if scenario == "dcotf" else ()
            origin = f"{upstream.gateway}:{ORIGIN_PORT}"
            extra = guard.storage_args(root, site, scenario, origin) if guarded else ["--origin", origin]
            cmds.append(storage_cmd(fed, site, "up", scenario, *extra, *here))
    return cmds


def _prepare_dirs(fed: Federation) -> None:
    root = root_dir()
    root.mkdir(parents=True, exist_ok=True)
    root.chmod(0o755)
    for site in fed.sites:
        _fresh_storage(site)
    (root / "toxiproxy").mkdir(exist_ok=True)


def _fresh_storage(site: str) -> None:
    """SITE's data folder (kept) and its daemons' state folder, empty: the daemons' state and caches
    start empty on every 'up' (a cold cache is cold)."""
    import shutil

    if (storage_dir(site) / "origin" / ".afkit-storage").is_file():
        shutil.rmtree(storage_dir(site))
    for d in (data_dir(site), storage_dir(site)):
        d.mkdir(parents=True, exist_ok=True)
    data_dir(site).chmod(0o2775)
    storage_dir(site).chmod(0o755)
    if os.geteuid() == 0:
        shutil.chown(data_dir(site), "xrootd", "xrootd")


def switch(fed: Federation, guarded: bool, log: batch.Log = print) -> State:
    """A running federation made GUARDED (or open): its storage daemons and registry restarted as
    asked (caches empty), the guard made (or taken away); its namespaces, links, toxiproxy and
    batch workers kept (the execute nodes take half a minute to join their pool again)."""
    root = root_dir()
    for site in fed.sites.values():
        net.run(storage_cmd(fed, site, "down", "all"))
        _fresh_storage(site.name)
    batch.registry_down(root)
    if guarded:
        locks, registry = guard.up(fed, root)
    else:
        guard.down(root)
        locks, registry = None, None
    for site in fed.sites.values():
        for cmd in storage_up_cmds(fed, site, guarded):
            net.run(cmd)
    batch.registry_up(root, registry)
    made = _record(fed, guarded, batch.describe(fed), locks)
    log(f"afkit federation: switched to {'guarded' if guarded else 'open'} storage and registry "
        "(namespaces, links and batch workers kept)")  # fmt: skip
    return made


def _toxiproxy_files() -> dmn.DaemonFiles:
    d = root_dir() / "toxiproxy"
    return dmn.DaemonFiles(d / "proxies.json", d / "toxiproxy.log", d / "toxiproxy.pid")


def start_toxiproxy(fed: Federation, timeout: float = 20) -> int:
    files = _toxiproxy_files()
    pid = dmn.read_pid(files)
    if pid is not None:
        return pid
    binary = toxiproxy.server_binary()
    files.config.write_text(json.dumps(toxiproxy.proxies(fed), indent=1))
    host = f"{SUBNET}.0.1"
    cmd = net.in_ns(WAN_NS, str(binary), "-host", host, "-port", str(TOXIPROXY_API_PORT),
                    "-config", str(files.config))  # fmt: skip
    proc = dmn.spawn(cmd, files)
    if not dmn.wait_for_port(TOXIPROXY_API_PORT, timeout, proc, host=host):
        raise AfkitError("toxiproxy did not come up", hint=f"its log {files.log}:\n{dmn.log_tail(files.log)}")
    return proc.pid


def up(fed: Federation, log: batch.Log = print, guarded: bool = False) -> State:
    """Create everything (GUARDED: TLS and WLCG tokens on every storage daemon, the token issuer);
    on failure, tear down what was made and re-raise."""
    if os.geteuid() != 0:
        raise PrereqError(
            "the federation needs root (network namespaces)", hint="run inside the testbed as root"
        )
    if state_file().is_file() and WAN_NS in net.namespaces():
        state: State = json.loads(state_file().read_text())
        if Path(state["links"]).resolve() != fed.source.resolve():
            raise UnsafeError(
                f"the federation is up with {state['links']}, not {fed.source}",
                hint="take it down first (afkit federation down), then up with the new link file",
            )
        if is_guarded(state) != guarded:
            return switch(fed, guarded, log)
        log(f"afkit federation: already up ({state_file()})")
        return state
    _prepare_dirs(fed)
    try:
        for cmd in net.up_commands(fed):
            net.run(cmd)
        hosts.add(fed)
        log("afkit federation: namespaces, veth links and tbf shaping are set; names in /etc/hosts")
        start_toxiproxy(fed)
        toxiproxy.configure(fed)
        log(f"afkit federation: toxiproxy up ({toxiproxy.api_url()})")
        locks, registry = guard.up(fed, root_dir()) if guarded else (None, None)
        if locks:
            log(f"afkit federation: guarded: token issuer {locks['issuer']}, CA bundle {locks['ca_bundle']}")
        for site in fed.sites.values():
            for cmd in storage_up_cmds(fed, site, guarded):
                net.run(cmd)
            log(f"afkit federation: {site.name}: storage up at {site.address}")
        workers = batch.up(fed, root_dir(), log, registry)
    except BaseException:
        down(fed, log=lambda *_: None)
        raise
    return _record(fed, guarded, workers, locks)


def _record(fed: Federation, guarded: bool, workers: batch.Workers, locks: guard.GuardState | None) -> State:
    """state.json of the federation as it now runs (written atomically), and returned."""
    made = State(**describe(fed, guarded), **workers)  # type: ignore[typeddict-item]  # guard: below
    if locks:
        made["guard"] = locks
    write_atomic(state_file(), json.dumps(made, indent=1))
    return made


def down(fed: Federation, log: batch.Log = print) -> None:
    state_file().unlink(missing_ok=True)
    present = set(net.namespaces())
    batch.down(fed, root_dir())  # before the namespaces go: the daemons run in them
    for site in fed.sites.values():
        if site.name in present:
            subprocess.run(storage_cmd(fed, site, "down", "all"), capture_output=True, check=False)
    guard.down(root_dir())
    if dmn.stop(_toxiproxy_files()):
        log("afkit federation: toxiproxy stopped")
    for cmd in net.down_commands(fed):
        net.run(cmd)
    hosts.remove()
    log("afkit federation: down")


def load_state() -> State:
    if not state_file().is_file():
        raise PrereqError("the federation is not up", hint="scripts/testbed federation up")
    state: State = json.loads(state_file().read_text())
    return state
