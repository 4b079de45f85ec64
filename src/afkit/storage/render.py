"""Render a scenario's xrootd configuration files from ``templates/xrootd/*.j2``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import jinja2

from afkit.atomic import write_atomic
from afkit.errors import UsageError
from afkit.storage.scenarios import HOST, Daemon, Scenario, port_of

# the one local account every X.509 user of a guarded server is mapped to (its grid-mapfile's
# names are replaced by it: XRootD's authorisation database grants it the base path). The ':'
# is in no Unix user name, so no WLCG token issued for a user of a host has it as its subject:
# a token whose scopes do not allow a request falls through to that database under its subject
# (xrootd src/XrdSciTokens/XrdSciTokensAccess.cc, onmissing = passthrough) and finds nothing
X509_ACCOUNT = "x509:users"


@dataclass(frozen=True)
class X509:
    """What a guarded server accepts X.509 proxies by (XRootD's ``gsi``, xrootd
    src/XrdSecgsi/XrdSecProtocolgsi.cc): the CAs of CERTDIR (hashed, as
    /etc/grid-security/certificates holds them) and the users of GRIDMAP (a grid-mapfile:
    ``"DN" account`` lines; a DN not in it is refused). docs/benchmarks.md, "Guarded storage"."""

    certdir: Path
    gridmap: Path


@dataclass(frozen=True)
class Guard:
    """A guarded server, as WLCG sites run theirs: TLS on every connection (CERT and KEY, issued
    for the addresses its clients use; CAFILE: the CAs it trusts, its clients' and the token
    issuer's) and a WLCG token on every request (XRootD's ``ztn`` protocol, the SciTokens
    authorization plugin: tokens of ISSUER for AUDIENCE, their scopes relative to BASE_PATH;
    anonymous requests refused). docs/benchmarks.md, "Guarded storage"."""

    cert: Path
    key: Path
    cafile: Path
    issuer: str
    audience: str
    base_path: str = "/"
    # a cache's own WLCG token (a file), presented to its guarded origin, which it reaches over
    # TLS (--origin roots://HOST:PORT); None for an origin
    origin_token: Path | None = None
    # X.509 proxies accepted too (an origin: --x509-certdir, --x509-gridmap); None: tokens only
    x509: X509 | None = None


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
        # an X.509-accepting server's copy of the grid-mapfile and its authorisation database
        "gridmap": base / "grid-mapfile",
        "authdb": base / "authdb",
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
        "gridmap": dirs["gridmap"],
        "authdb": dirs["authdb"],
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
        # with X.509 users too, a request no token allows goes on to the authorisation database
        # (the X.509 account's grants only); else it is denied here
        f"onmissing = {'passthrough' if guard.x509 else 'deny'}\n\n"
        "[Issuer afkit]\n"
        f"issuer = {guard.issuer}\n"
        f"base_path = {guard.base_path}\n"
    )


def write_config(path: Path, text: str) -> None:
    write_atomic(path, text)


def gridmap_entries(text: str) -> list[str]:
    """The DNs of a grid-mapfile's lines (``"DN" account[,account...]``, the DN quoted or, without
    spaces, not; # comments), as XRootD reads them (xrootd src/XrdOuc/XrdOucGMap.cc); raises
    UsageError naming a line it cannot read."""
    dns: list[str] = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        dn, sep, rest = line[1:].partition('"') if line.startswith('"') else line.partition(" ")
        if not sep or not dn or not rest.strip():
            raise UsageError(f"grid-mapfile line {number}: expected '\"DN\" account', got {line!r}",
                             hint='e.g. "/O=afkit federation/OU=users/CN=alice" alice')  # fmt: skip
        dns.append(dn)
    return dns


def gridmap_text(dns: list[str]) -> str:
    """The server's grid-mapfile: each DN mapped to :data:`X509_ACCOUNT`."""
    head = "# Rendered by 'afkit storage' from the given grid-mapfile; every user is one account.\n"
    return head + "".join(f'"{dn}" {X509_ACCOUNT}\n' for dn in dns)


def authdb_text(guard: Guard) -> str:
    """XRootD's authorisation database of an X.509-accepting server (xrootd src/XrdAcc): the X.509
    account may do everything under the base path; nobody else anything (tokens are the SciTokens
    plugin's)."""
    return ("# Rendered by 'afkit storage'; do not edit, re-render.\n"
            f"u {X509_ACCOUNT} {guard.base_path} a\n")  # fmt: skip
