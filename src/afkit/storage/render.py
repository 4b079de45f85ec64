"""Render a scenario's xrootd configuration files from ``templates/xrootd/*.j2``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import jinja2

from afkit.atomic import write_atomic
from afkit.errors import UsageError
from afkit.storage.scenarios import HOST, Daemon, Scenario, port_of


@dataclass(frozen=True)
class Guard:
    """A guarded server, as WLCG sites run theirs: TLS on every connection (CERT and KEY, issued
    for the addresses its clients use; CAFILE: the CAs it trusts, its clients' and the token
    issuer's) and a WLCG token on every request (XRootD's ``ztn`` protocol, the SciTokens
    authorization plugin: tokens of ISSUER for AUDIENCE, their scopes relative to BASE_PATH;
    anonymous requests refused). docs/storage.md, "Guarded storage"."""

    cert: Path
    key: Path
    cafile: Path
    issuer: str
    audience: str
    base_path: str = "/"
    # a cache's own WLCG token (a file), presented to its guarded origin, which it reaches over
    # TLS (--origin roots://HOST:PORT); None for an origin
    origin_token: Path | None = None


@dataclass(frozen=True)
class Settings:
    state_dir: Path  # this scenario's directory
    origin: str = "127.0.0.1:1094"
    data_dir: Path = Path("/srv/xrootd/data")
    ram: str = "1g"
    blocksize: str = "1M"
    base: int | None = None
    # clients allowed besides loopback (xrd.allow host; a '*' wildcard matches, e.g. 10.77.*)
    allow: tuple[str, ...] = ()
    # origin only: bytes/s the server reads from its file system (XRootD's throttle plugin)
    throttle: int | None = None
    # dcotf only: the address its redirector sends clients to (its cache's port there); loopback
    # serves clients on this host only, a client in another network namespace needs the host's own
    redirect_host: str = HOST
    # TLS and tokens required (afkit storage up --tls-cert ... --token-issuer ...); None: open
    guard: Guard | None = None


def templates_dir() -> Path:
    from afkit import paths

    return paths.templates_dir() / "xrootd"


def _check_ram(ram: str) -> None:
    from afkit.bench.units import parse_size

    if parse_size(ram, what="pfc.ram") < 1 << 30:
        raise UsageError(f"pfc.ram {ram} is below 1g: XCache refuses to start", hint="use --ram 1g or more")


def daemon_dirs(settings: Settings, daemon: Daemon) -> dict[str, Path]:
    base = settings.state_dir / daemon.name
    return {
        "admin_dir": base / "admin",
        "run_dir": base / "run",
        "config": base / "xrootd.cfg",
        "log": base / "xrootd.log",
        "pidfile": base / "xrootd.pid",
        # a guarded server's own copies of its certificate and key (owned by the service user, the
        # key mode 0600, as xrootd wants them), its SciTokens configuration and key cache
        "tls_cert": base / "tls" / "cert.pem",
        "tls_key": base / "tls" / "key.pem",
        "scitokens_cfg": base / "scitokens.cfg",
        "keycache": base / "keycache",
        # a guarded cache's copy of its service token (the service user's, mode 0600, as ztn wants)
        "origin_token": base / "tls" / "origin.token",
    }


def shared_cache_dir(settings: Settings) -> Path:
    return settings.state_dir / "cache"


def render(scenario: Scenario, daemon: Daemon, settings: Settings) -> str:
    _check_ram(settings.ram)
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    cache_daemon = next((d for d in scenario.daemons if d.template == "xcache.cfg.j2"), None)
    dirs = daemon_dirs(settings, daemon)
    values = {
        "scenario": scenario.name,
        "daemon": daemon.name,
        "port": port_of(scenario, daemon, settings.base),
        "admin_dir": dirs["admin_dir"],
        "run_dir": dirs["run_dir"],
        "data_dir": settings.data_dir,
        "cache_dir": shared_cache_dir(settings),
        "origin": settings.origin,
        "ram": settings.ram,
        "blocksize": settings.blocksize,
        "cache_host": settings.redirect_host,
        "cache_port": port_of(scenario, cache_daemon, settings.base) if cache_daemon else 0,
        "dca": daemon.dca,
        "allow": settings.allow,
        "throttle": settings.throttle,
        "guard": settings.guard,
        "tls_cert": dirs["tls_cert"],
        "tls_key": dirs["tls_key"],
        "scitokens_cfg": dirs["scitokens_cfg"],
    }
    return env.get_template(daemon.template).render(**values)


def scitokens_config(guard: Guard) -> str:
    """The SciTokens plugin's configuration of GUARD (xrootd src/XrdSciTokens/README.md): its one
    issuer, the audience its tokens must name, the namespace their scopes are relative to; a
    request without a token that allows it is denied."""
    return (
        "# Rendered by 'afkit storage'; do not edit, re-render.\n"
        "[Global]\n"
        f"audience = {guard.audience}\n"
        "onmissing = deny\n\n"
        "[Issuer afkit]\n"
        f"issuer = {guard.issuer}\n"
        f"base_path = {guard.base_path}\n"
    )


def write_config(path: Path, text: str) -> None:
    write_atomic(path, text)
