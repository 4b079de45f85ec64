"""``afkit storage``: cache scenarios (origin, xcache, xcache-dca, dcotf) on loopback."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from afkit import argtypes
from afkit.cli import usage_handler
from afkit.errors import ExitCode, UsageError
from afkit.storage import manager
from afkit.storage.render import X509, Guard, Settings, render
from afkit.storage.scenarios import HOST, SCENARIOS, default_origin, get_scenario, url


def _settings(args: argparse.Namespace, scenario: str) -> Settings:
    # absolute: xrootd refuses a relative adminpath ("XrdConfig: adminpath not absolute")
    root = (Path(args.state_dir) if args.state_dir else manager.default_state_root()).absolute()
    return Settings(
        state_dir=root / scenario,
        origin=getattr(args, "origin", None) or default_origin(),
        data_dir=Path(
            getattr(args, "data", None) or os.environ.get("AFKIT_XROOTD_DATA", "/srv/xrootd/data")
        ).resolve(),
        ram=getattr(args, "ram", "1g"),
        allow=tuple(getattr(args, "allow", None) or ()),
        throttle=_throttle(args, scenario),
        redirect_host=_redirect_host(args, scenario),
        guard=_guard(args),
    )


GUARD_OPTIONS = {"tls_cert": "--tls-cert", "tls_key": "--tls-key", "tls_ca": "--tls-ca",
                 "token_issuer": "--token-issuer", "token_audience": "--token-audience"}  # fmt: skip


def _guard(args: argparse.Namespace) -> Guard | None:
    """The guard the options ask for (all of them, or none: an open server)."""
    given = {k: getattr(args, k, None) for k in GUARD_OPTIONS}
    if not any(given.values()):
        for option, what in (
            ("origin_token", "cache"),
            ("x509_certdir", "server"),
            ("x509_gridmap", "server"),
        ):
            if getattr(args, option, None):
                raise UsageError(f"--{option.replace('_', '-')} is for a guarded {what}",
                                 hint="give " + ", ".join(GUARD_OPTIONS.values()) + " too")  # fmt: skip
        return None
    missing = [GUARD_OPTIONS[k] for k, v in given.items() if not v]
    if missing:
        raise UsageError(f"a guarded server needs {', '.join(missing)} too",
                         hint="TLS (ztn sends tokens over TLS only) and the token issuer go together: "
                         "give all of " + ", ".join(GUARD_OPTIONS.values()))  # fmt: skip
    token = getattr(args, "origin_token", None)
    if token and args.scenario == "origin":
        raise UsageError("--origin-token is for a cache (its token for the origin it fetches from), "
                         "not the origin scenario")  # fmt: skip
    if token and not str(getattr(args, "origin", "") or "").startswith("roots://"):
        raise UsageError("--origin-token needs --origin roots://HOST:PORT",
                         hint="a token is sent over TLS only (ztn): the cache reaches its origin "
                         "by roots://")  # fmt: skip
    return Guard(cert=Path(args.tls_cert).absolute(), key=Path(args.tls_key).absolute(),
                 cafile=Path(args.tls_ca).absolute(), issuer=args.token_issuer,
                 audience=args.token_audience, base_path=args.token_base_path,
                 origin_token=Path(token).absolute() if token else None,
                 x509=_x509(args))  # fmt: skip


def _x509(args: argparse.Namespace) -> X509 | None:
    """X.509 proxies accepted too: --x509-certdir and --x509-gridmap (both or neither)."""
    certdir, gridmap = getattr(args, "x509_certdir", None), getattr(args, "x509_gridmap", None)
    if not certdir and not gridmap:
        return None
    if not (certdir and gridmap):
        raise UsageError("X.509 proxies need --x509-certdir and --x509-gridmap together",
                         hint="the CAs of its users' certificates and the users it accepts")  # fmt: skip
    return X509(certdir=Path(certdir).absolute(), gridmap=Path(gridmap).absolute())


def _redirect_host(args: argparse.Namespace, scenario: str) -> str:
    """--redirect-host HOST (dcotf only), else loopback."""
    host = getattr(args, "redirect_host", None)
    if not host:
        return HOST
    if scenario != "dcotf":
        raise UsageError(f"--redirect-host is for the dcotf scenario (its redirector), not '{scenario}'",
                         hint="only dcotf's redirector sends clients on to another server")  # fmt: skip
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9.:-]*", host):
        raise UsageError(f"--redirect-host: {host!r} is not a host name or address", hint="e.g. 10.77.2.10")
    return str(host)


def _throttle(args: argparse.Namespace, scenario: str) -> int | None:
    """--throttle RATE as bytes/s (origin only), or None."""
    from afkit.bench.units import parse_size

    text = getattr(args, "throttle", None)
    if not text:
        return None
    if scenario != "origin":
        raise UsageError(f"--throttle is for the origin scenario, not '{scenario}'",
                         hint="throttle the origin the caches read from instead")  # fmt: skip
    rate = parse_size(text, what="throttle rate")
    if rate <= 0:
        raise UsageError(f"--throttle must be a positive rate in bytes/s, got '{text}'")
    return rate


def cmd_up(args: argparse.Namespace) -> int:
    scenario = get_scenario(args.scenario)
    settings = _settings(args, scenario.name)
    for rec in manager.up(scenario, settings, args.timeout):
        print(json.dumps({"scenario": scenario.name, **rec}))
    print(f"afkit storage: {scenario.name} up; clients use {url(scenario.name, '/PATH')}", file=sys.stderr)
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    names = list(SCENARIOS) if args.scenario == "all" else [get_scenario(args.scenario).name]
    for name in names:
        stopped = manager.down(SCENARIOS[name], _settings(args, name))
        if stopped:
            print(f"afkit storage: {name}: stopped {', '.join(stopped)}", file=sys.stderr)
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    names = [get_scenario(args.scenario).name] if args.scenario else list(SCENARIOS)
    running = False
    for name in names:
        for rec in manager.status(SCENARIOS[name], _settings(args, name)):
            running = running or rec["running"]
            print(json.dumps(rec))
    return 0 if running or not args.scenario else int(ExitCode.FAILURE)


def cmd_url(args: argparse.Namespace) -> int:
    print(url(args.scenario, args.path))
    return 0


def cmd_render(args: argparse.Namespace) -> int:
    scenario = get_scenario(args.scenario)
    settings = _settings(args, scenario.name)
    for daemon in scenario.daemons:
        print(f"# ---- {daemon.name}")
        print(render(scenario, daemon, settings), end="")
    return 0


def register(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "storage",
        help="XRootD cache scenarios on loopback (origin, xcache, xcache-dca, dcotf)",
        description="Start, stop and inspect the XRootD daemons of a cache scenario, and give its "
        "clients' URLs. Scenarios: " + "; ".join(f"{s.name}: {s.description}" for s in SCENARIOS.values()),
    )
    parser.set_defaults(func=usage_handler(parser))
    ssub = parser.add_subparsers(dest="storage_command", metavar="STORAGE_COMMAND")

    def state(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--state-dir",
            help="configs, logs, pidfiles, cache (default $AFKIT_STORAGE_STATE, else ~/.cache/afkit/storage; "
            "as root /var/lib/afkit/storage)",
        )

    def config(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--origin",
            help="host:port the caches fetch from (default from $AFKIT_XROOTD_URL); "
            "roots://HOST:PORT for a guarded origin (TLS)",
        )
        p.add_argument("--data", help="directory the 'origin' scenario exports (default $AFKIT_XROOTD_DATA)")
        p.add_argument("--ram", default="1g", help="pfc.ram of the caches (>= 1g; default 1g)")
        p.add_argument(
            "--allow",
            action="append",
            metavar="HOST",
            help="also allow clients from HOST, an address such as 10.77.2.10 (xrd.allow host; repeatable; "
            "a wildcard such as 10.77.* matches no IPv4 client: xrootd names it [::ffff:10.77.2.10]); "
            "default: loopback only",
        )
        p.add_argument(
            "--redirect-host",
            metavar="HOST",
            help="dcotf only: the address its redirector sends clients to, where they reach its "
            "cache (default 127.0.0.1: clients on this host; another address for clients in other "
            "network namespaces, e.g. a federation site's client nodes)",
        )
        g = p.add_argument_group(
            "guarded (as WLCG sites: TLS on every connection, a WLCG token on every request; "
            "all of the first five or none)"
        )
        g.add_argument(
            "--tls-cert", metavar="FILE", help="the server's certificate (PEM), for the address clients use"
        )
        g.add_argument(
            "--tls-key", metavar="FILE", help="its private key (PEM; xrootd gets a copy only it can read)"
        )
        g.add_argument("--tls-ca", metavar="FILE", help="the CAs it trusts (PEM): clients' and the issuer's")
        g.add_argument("--token-issuer", metavar="URL", help="the issuer whose WLCG tokens it accepts")
        g.add_argument("--token-audience", metavar="AUD", help="the audience (aud) its tokens must name")
        g.add_argument("--token-base-path", metavar="PATH", default="/",
                       help="the path the tokens' scopes are relative to (default /)")  # fmt: skip
        g.add_argument("--origin-token", metavar="FILE",
                       help="a cache's own WLCG token for its guarded origin (with --origin "
                       "roots://HOST:PORT; xrootd gets a copy only it can read)")  # fmt: skip
        g.add_argument("--x509-certdir", metavar="DIR",
                       help="accept X.509 proxies too (XRootD's gsi), of users of the CAs in DIR "
                       "(hashed, as /etc/grid-security/certificates); the server's key is RSA")  # fmt: skip
        g.add_argument("--x509-gridmap", metavar="FILE",
                       help='with --x509-certdir: the users it accepts, a grid-mapfile ("DN" account '
                       "lines); each may read and write under the token base path")  # fmt: skip
        p.add_argument(
            "--throttle",
            metavar="RATE",
            help="origin only: serve at most RATE bytes/s, e.g. 20MB (XRootD's throttle plugin, "
            "throttle.throttle data): a slow storage endpoint on purpose; default: no limit",
        )

    up = ssub.add_parser("up", help="start a scenario's daemons and wait for their ports")
    up.add_argument("scenario", choices=list(SCENARIOS))
    up.add_argument("--timeout", type=argtypes.positive, default=30.0, help="seconds to wait for each port")
    state(up)
    config(up)
    up.set_defaults(func=cmd_up)

    down = ssub.add_parser("down", help="stop the daemons afkit started for a scenario ('all': every one)")
    down.add_argument("scenario", choices=[*SCENARIOS, "all"])
    state(down)
    down.set_defaults(func=cmd_down)

    st = ssub.add_parser("status", help="pid, port and state of the daemons (JSON lines)")
    st.add_argument("scenario", nargs="?", choices=list(SCENARIOS))
    state(st)
    st.set_defaults(func=cmd_status)

    u = ssub.add_parser("url", help="the URL a scenario's clients open for PATH (a path on the origin)")
    u.add_argument("scenario", choices=list(SCENARIOS))
    u.add_argument("path")
    u.set_defaults(func=cmd_url)

    r = ssub.add_parser("render", help="print the rendered xrootd configs of a scenario")
    r.add_argument("scenario", choices=list(SCENARIOS))
    state(r)
    config(r)
    r.set_defaults(func=cmd_render)
