"""The single ``afkit`` entry point.

Each area registers its own subcommand from ``afkit.<area>.cli.register(subparsers)``;
the handler it sets with ``parser.set_defaults(func=...)`` gets the parsed namespace and
returns an exit code (``afkit.errors.ExitCode``) or raises ``AfkitError``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from afkit import __version__
from afkit.errors import AfkitError, ExitCode

AREAS: tuple[str, ...] = ("image", "bench", "storage", "campaign")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="afkit",
        description="Analysis Facility toolkit: CVMFS tags to Apptainer images, "
        "storage benchmarks and Snakemake benchmark campaigns.",
    )
    parser.add_argument("--version", action="version", version=f"afkit {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for area in AREAS:
        module = importlib.import_module(f"afkit.{area}.cli")
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except AfkitError as err:
        print(f"afkit: error: {err}", file=sys.stderr)
        if err.hint:
            print(f"afkit: hint: {err.hint}", file=sys.stderr)
        return int(err.code)
    except KeyboardInterrupt:
        print("afkit: interrupted", file=sys.stderr)
        return int(ExitCode.INTERRUPTED)


if __name__ == "__main__":
    raise SystemExit(main())
