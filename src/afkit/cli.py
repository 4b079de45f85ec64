"""The single ``afkit`` entry point.

Each area registers its own subcommand from ``afkit.<area>.cli.register(subparsers)``;
the handler it sets with ``parser.set_defaults(func=...)`` gets the parsed namespace and
returns an exit code (``afkit.errors.ExitCode``) or raises ``AfkitError``.

Only the area being run is imported: ``afkit bench`` inside a lean job image must not need the
report's plotting libraries, and every call starts faster.

A command that another distribution provides (``PLUGINS``: ``afkit federation``, the testbed's, from
``testbed/``) is found through the entry point group ``afkit.commands`` (an entry point
``NAME = "module:register"``), only when that command is run. When its distribution is not
installed, running it is a clear error naming what to install (exit 3, prerequisite missing).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NoReturn

from afkit import __version__
from afkit.errors import AfkitError, ExitCode, PrereqError

AREAS: dict[str, str] = {
    "image": "build and validate Apptainer images from CVMFS environment tags",
    "bench": "benchmark clients: read, multi-client, analysis, disk, data generators",
    "storage": "XRootD storage scenarios: origin, XCache, direct cache access, DCOTF",
    "campaign": "Snakemake benchmark campaigns: validate, locations, jobs, run, retry, report, extrapolate",
    "study": "published facility studies rerun at your sites or in the box: list, show, run, page",
}
PLUGIN_GROUP = "afkit.commands"  # entry points NAME = "module:register" of the PLUGINS' distributions


@dataclass(frozen=True)
class Plugin:
    """A command of another distribution: its summary, its distribution, how to install that."""

    summary: str
    distribution: str
    install: str


PLUGINS: dict[str, Plugin] = {
    "federation": Plugin(
        summary="testbed federation: sites as network namespaces, shaped WAN links, toxiproxy faults",
        distribution="afkit-testbed",
        install="install it from afkit's checkout: pip install -e testbed (make venv and the testbed's "
        "venv do; docs/federation.md)",
    ),
}
COMMANDS = [*AREAS, *PLUGINS]  # as `afkit --help` lists them


def usage_handler(parser: argparse.ArgumentParser) -> Callable[[argparse.Namespace], int]:
    """The handler of an area named without a subcommand: print the area's help, exit 2 (usage)."""

    def handler(_args: argparse.Namespace) -> int:
        parser.print_help()
        return int(ExitCode.USAGE)

    return handler


def selected_area(argv: Sequence[str]) -> str | None:
    """The area named by the first non-option argument, if it is one."""
    for arg in argv:
        if not arg.startswith("-"):
            return arg if arg in COMMANDS else None
    return None


def plugin_register(name: str) -> Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None]:
    """The ``register`` of the plugin command NAME (its entry point in ``afkit.commands``); exit 3
    naming what to install when its distribution is not installed or cannot be imported."""
    from importlib import metadata  # here: a tenth of every other command's start-up

    plugin = PLUGINS[name]
    found = metadata.entry_points(group=PLUGIN_GROUP, name=name)
    if not found:
        raise PrereqError(
            f"'afkit {name}' is provided by the {plugin.distribution} package, which is not installed "
            f"(no entry point '{name}' in the group {PLUGIN_GROUP})",
            hint=plugin.install,
        )
    entry = next(iter(found))
    try:
        register: Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None] = entry.load()
    except ImportError as err:
        raise PrereqError(
            f"'afkit {name}': its entry point {entry.value} cannot be imported: {err}", hint=plugin.install
        ) from err
    return register


class Parser(argparse.ArgumentParser):
    """argparse's parser, whose usage errors end as afkit's others do: one ``afkit: error:`` line
    (naming the command), exit 2. Its subcommands' parsers are of its class (argparse's
    ``add_subparsers`` makes them so)."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        command = self.prog.removeprefix("afkit").strip()
        self.exit(int(ExitCode.USAGE), f"afkit: error: {command + ': ' if command else ''}{message}\n")


def build_parser(area: str | None = None) -> argparse.ArgumentParser:
    """The parser; the full subcommand tree only for ``area`` (the others are listed by name)."""
    parser: argparse.ArgumentParser = Parser(
        prog="afkit",
        description="Analysis Facility toolkit: CVMFS tags to Apptainer images, "
        "storage benchmarks and Snakemake benchmark campaigns.",
    )
    parser.add_argument("--version", action="version", version=f"afkit {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name, summary in AREAS.items():
        if name == area:
            importlib.import_module(f"afkit.{name}.cli").register(sub)
        else:
            sub.add_parser(name, help=summary, description=summary)
    for name, plugin in PLUGINS.items():
        if name == area:
            plugin_register(name)(sub)
        else:
            sub.add_parser(name, help=plugin.summary, description=plugin.summary)
    return parser


def print_error(err: AfkitError) -> int:
    """afkit's message for ERR on stderr (``afkit: error: ...``, then ``afkit: hint: ...``); its exit code."""
    print(f"afkit: error: {err}", file=sys.stderr)
    if err.hint:
        print(f"afkit: hint: {err.hint}", file=sys.stderr)
    return int(err.code)


def guarded(call: Callable[[], int]) -> int:
    """CALL's exit code, as the ``afkit`` command ends: an AfkitError printed and its code, Ctrl-C 130."""
    try:
        return int(call())
    except AfkitError as err:
        return print_error(err)
    except KeyboardInterrupt:
        print("afkit: interrupted", file=sys.stderr)
        return int(ExitCode.INTERRUPTED)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        parser = build_parser(selected_area(argv))
    except AfkitError as err:  # a plugin command whose distribution is missing
        return print_error(err)
    args = parser.parse_args(argv)
    return guarded(lambda: int(args.func(args)))


if __name__ == "__main__":
    raise SystemExit(main())
