"""``afkit image`` subcommand (placeholder until the area lands)."""

from __future__ import annotations

import argparse
from typing import Any


def register(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser("image", help="image commands")
    parser.set_defaults(func=lambda _args: parser.print_help() or 0)
