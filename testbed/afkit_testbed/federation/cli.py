"""``afkit federation``: the testbed's sites as network namespaces, their links and faults."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from afkit.cli import usage_handler
from afkit.errors import ExitCode, UsageError
from afkit_testbed.federation import batch, control, links, net, toxiproxy


def _fed(args: argparse.Namespace) -> links.Federation:
    given = getattr(args, "links", None)
    if given is None and control.state_file().is_file():
        given = control.load_state()["links"]  # the running federation's own file
    return links.load(Path(given) if given else None)


def cmd_up(args: argparse.Namespace) -> int:
    state = control.up(_fed(args), log=lambda msg: print(msg, file=sys.stderr),  # stdout: the state
                       guarded=args.guarded)  # fmt: skip
    print(json.dumps(state, indent=1))
    return ExitCode.OK


def cmd_down(args: argparse.Namespace) -> int:
    control.down(_fed(args))
    return ExitCode.OK


def cmd_status(args: argparse.Namespace) -> int:
    state = control.load_state()
    workers = batch.status(_fed(args))
    for name, site in state["sites"].items():
        qdisc = net.run(["tc", "-n", name, "qdisc", "show", "dev", net.SITE_IF]).strip()
        link = net.run(["ip", "-n", links.WAN_NS, "-br", "link", "show", f"w-{name}"]).split()
        print(json.dumps({"site": name, "address": site["address"], "link": link[1] if len(link) > 1 else "?",
                          "qdisc": qdisc, "storage_url": site["storage_url"],
                          "caches": site["caches"], "workers": workers.get(name, {})}))  # fmt: skip
        for node in site.get("nodes", []):
            qdisc = net.run(["tc", "-n", node["namespace"], "qdisc", "show", "dev", net.NODE_IF]).strip()
            print(json.dumps({"node": node["namespace"], "site": name, "address": node["address"],
                              "qdisc": qdisc}))  # fmt: skip
    return ExitCode.OK


def cmd_urls(args: argparse.Namespace) -> int:
    print(json.dumps(control.load_state(), indent=1))
    return ExitCode.OK


def cmd_exec(args: argparse.Namespace) -> int:
    cmd = list(args.cmd)
    if cmd[:1] == ["--"]:
        cmd = cmd[1:]
    if not cmd:
        raise UsageError("exec: no command given", hint="afkit federation exec SITE -- CMD...")
    _fed(args).namespace(args.site)
    argv = net.in_ns(args.site, *cmd)
    os.execvp(argv[0], argv)
    return ExitCode.FAILURE  # not reached


def cmd_link(args: argparse.Namespace) -> int:
    fed = _fed(args)
    target = fed.namespace(args.site)  # a site's WAN link, or a client node's link to its site
    if args.down or args.up:
        for cmd in net.link_state(fed, target, down=args.down):
            net.run(cmd)
    if args.rate or args.reset:
        link = target.link if args.reset else links.Link(links.parse_rate(args.rate), target.link.latency_ms)
        for cmd in net.link_shape(target, link):
            net.run(cmd)
    if args.reset:
        for cmd in net.link_state(fed, target, down=False):
            net.run(cmd)
        if isinstance(target, links.Site):
            toxiproxy.reset_site(target)
    return ExitCode.OK


def _attrs(pairs: list[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise UsageError(f"--attr {pair!r}: expected NAME=NUMBER", hint="e.g. --attr latency=500")
        try:
            out[key] = int(value)
        except ValueError:
            raise UsageError(f"--attr {pair!r}: {value!r} is not an integer") from None
    return out


def cmd_toxic(args: argparse.Namespace) -> int:
    site = _fed(args).site(args.site)
    if args.action == "add":
        if not args.type:
            raise UsageError("toxic add needs --type (latency, bandwidth, reset_peer, timeout, ...)")
        toxic: toxiproxy.Toxic = {"name": args.name or args.type, "type": args.type, "stream": args.stream,
                 "attributes": _attrs(args.attr or [])}  # fmt: skip
        print(json.dumps(toxiproxy.add_toxic(site, toxic)))
    elif args.action == "remove":
        if not args.name:
            raise UsageError("toxic remove needs --name")
        toxiproxy.remove_toxic(site, args.name)
    elif args.action in ("disable", "enable"):
        toxiproxy.set_enabled(site, args.action == "enable")
    elif args.action == "reset":
        toxiproxy.reset_site(site)
    else:
        print(json.dumps(toxiproxy.show(site), indent=1))
    return ExitCode.OK


def cmd_token(args: argparse.Namespace) -> int:
    from afkit_testbed.federation import guard

    control.load_state()
    out = guard.issue_token(control.root_dir(), args.scope, Path(args.output), args.lifetime, args.owner)
    print(out)
    return ExitCode.OK


def cmd_usercert(args: argparse.Namespace) -> int:
    from afkit_testbed.federation import guard

    control.load_state()
    print(guard.issue_usercert(control.root_dir(), Path(args.output), args.owner))
    return ExitCode.OK


def cmd_password(args: argparse.Namespace) -> int:
    from afkit_testbed.federation import guard

    control.load_state()
    print(guard.give_password(control.root_dir(), Path(args.output), args.owner))
    return ExitCode.OK


def cmd_figure(args: argparse.Namespace) -> int:
    from afkit_testbed.federation.figure import draw

    print(draw(_fed(args), Path(args.output)))
    return ExitCode.OK


def cmd_measure(args: argparse.Namespace) -> int:
    from afkit.bench.units import parse_size
    from afkit_testbed.federation.measure import measure, table

    control.load_state()
    result = measure(_fed(args), parse_size(args.size, what="--size"))
    if args.figure:
        from afkit_testbed.federation.figure import draw_rates

        draw_rates(result, Path(args.figure))
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        print(table(result))
    return ExitCode.OK


def register(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "federation",
        help="testbed sites as network namespaces with shaped WAN links, toxiproxy faults (as root)",
        description="Sites as network namespaces (own address, XRootD origin, optional caches), joined "
        "through a WAN namespace by veth links shaped with tbf; toxiproxy in front of every site's "
        "storage adds the WAN latency and injects faults. docs/federation.md.",
    )
    parser.set_defaults(func=usage_handler(parser))
    fs = parser.add_subparsers(dest="federation_command", metavar="ACTION")

    def links_opt(p: argparse.ArgumentParser) -> None:
        p.add_argument("--links", help="the link file (default: the running federation's, else "
                       "testbed/afkit_testbed/templates/federation/links.yaml)")  # fmt: skip

    p = fs.add_parser("up", help="create the namespaces, links, toxiproxy and every site's storage")
    links_opt(p)
    p.add_argument("--guarded", action="store_true",
                   help="as WLCG sites: TLS (the federation's CA) and WLCG tokens (the federation's "
                   "issuer) on every origin and cache; anonymous requests refused")  # fmt: skip
    p.set_defaults(func=cmd_up)
    p = fs.add_parser("down", help="stop the daemons and delete the namespaces (not an error when down)")
    links_opt(p)
    p.set_defaults(func=cmd_down)
    p = fs.add_parser("status", help="per site: address, link state, tbf qdisc, URLs (JSON lines)")
    p.set_defaults(func=cmd_status)
    p = fs.add_parser("urls", help="the running federation: addresses, storage and cache URLs (JSON)")
    p.set_defaults(func=cmd_urls)
    p = fs.add_parser("exec", help="run a command in a site's (or a client node's) network namespace")
    p.add_argument("site", help="a site, or a site's client node (SITE-nK)")
    p.add_argument("cmd", nargs=argparse.REMAINDER, help="-- CMD...")
    p.set_defaults(func=cmd_exec)
    p = fs.add_parser("link", help="change a site's WAN link (or a client node's link to its site): rate, "
                      "partition (down/up), reset to the file")  # fmt: skip
    p.add_argument("site", help="a site, or a site's client node (SITE-nK)")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--rate", help="new tbf rate of both directions, e.g. 2mbit")
    g.add_argument("--down", action="store_true", help="partition the site (its WAN link down)")
    g.add_argument("--up", action="store_true", help="reconnect the site")
    g.add_argument("--reset", action="store_true", help="rate, latency and link state from the link file")
    p.set_defaults(func=cmd_link)
    p = fs.add_parser("toxic", help="toxics on the proxy in front of a site's storage (toxiproxy API)")
    p.add_argument("site")
    p.add_argument("action", choices=["show", "add", "remove", "disable", "enable", "reset"])
    p.add_argument("--type", help="add: latency, bandwidth, reset_peer, timeout, slow_close, limit_data, ...")
    p.add_argument("--name", help="toxic name (add: default the type; remove: required)")
    p.add_argument("--stream", choices=["downstream", "upstream"], default="downstream")
    p.add_argument("--attr", action="append", metavar="NAME=INT", help="toxic attribute (repeatable)")
    p.set_defaults(func=cmd_toxic)
    p = fs.add_parser("measure", help="same-site, remote, cold and warm cache read rates vs the WAN rate")
    p.add_argument("--size", default="32MiB", help="size of each file read (default 32MiB)")
    p.add_argument("--json", action="store_true", help="print the measurements as JSON (default: a table)")
    p.add_argument("--figure", metavar="PNG",
                   help="also plot Gbit/s over time per site and cache scenario into PNG")  # fmt: skip
    p.set_defaults(func=cmd_measure)
    p = fs.add_parser("token", help="a WLCG token of the guarded federation's issuer into a file "
                      "(mode 0600): what an experiment's IAM gives its users")  # fmt: skip
    p.add_argument("--scope", action="append", required=True, metavar="SCOPE",
                   help="storage.read:/PATH, storage.create:/PATH or storage.modify:/PATH "
                   "(repeatable)")  # fmt: skip
    p.add_argument("--lifetime", type=int, default=3600, help="seconds it is valid (default 3600)")
    p.add_argument("--owner", metavar="USER", help="the user the file is given to (default: yours)")
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="the token file to write")
    p.set_defaults(func=cmd_token)
    p = fs.add_parser("usercert", help="a grid certificate of the guarded federation's CA into a "
                      "folder, as ~/.globus holds one (usercert.pem mode 0644, userkey.pem mode 0600): for "
                      "xrdgsiproxy init")  # fmt: skip
    p.add_argument("--owner", metavar="USER", help="the user it is for and given to (default: you)")
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="the folder to write, e.g. ~/.globus")
    p.set_defaults(func=cmd_usercert)
    p = fs.add_parser("password", help="the guarded federation's registry password into a file (mode "
                      "0600), for apptainer registry login --password-stdin")  # fmt: skip
    p.add_argument("--owner", metavar="USER", help="the user the file is given to (default: yours)")
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="the file to write")
    p.set_defaults(func=cmd_password)
    p = fs.add_parser("figure", help="draw the sites and links of a link file (SVG or PNG)")
    links_opt(p)
    p.add_argument("output", help="the image to write (.svg or .png)")
    p.set_defaults(func=cmd_figure)
