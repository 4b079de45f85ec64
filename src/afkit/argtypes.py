"""argparse types that every area's command line shares (a common module, below the areas).

Python's ``float()`` takes "nan", "inf" and "-inf": as ``--tolerance nan`` every comparison against
it is false, so every cell was "same". afkit's number options take finite numbers only, and say so
as argparse says any bad value (exit 2, ``argument --NAME: ...``).
"""

from __future__ import annotations

import argparse
import math


def finite(text: str) -> float:
    """A finite number (argparse type)."""
    try:
        value = float(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from err
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


def non_negative(text: str) -> float:
    """A finite number >= 0 (argparse type): a tolerance, a duration, a size."""
    value = finite(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is negative")
    return value


def positive(text: str) -> float:
    """A finite number > 0 (argparse type): a timeout, a scale."""
    value = finite(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not above 0")
    return value
