"""Parse and format byte sizes and rates the same way in every benchmark.

The one size grammar of afkit: the bench options, the campaign's block sizes and strides (checked
when the campaign is validated, read by the job in the image), the extrapolation's rates.
Standard library only.
"""

from __future__ import annotations

import re

from afkit.errors import UsageError

_UNITS: dict[str, int] = {
    "": 1,
    "b": 1,
    "k": 1024,
    "kib": 1024,
    "m": 1024**2,
    "mib": 1024**2,
    "g": 1024**3,
    "gib": 1024**3,
    "t": 1024**4,
    "tib": 1024**4,
    "p": 1024**5,
    "pib": 1024**5,
    "kb": 1000,
    "mb": 1000**2,
    "gb": 1000**3,
    "tb": 1000**4,
    "pb": 1000**5,
}
_SIZE_RE = re.compile(r"^\s*(\d*\.?\d+)\s*([a-zA-Z]*)\s*$")


def parse_size(text: str, *, what: str = "size") -> int:
    """``"8MiB"`` → 8388608. ``K/M/G/T/P`` and ``KiB/MiB/…`` are binary, ``kB/MB/GB/TB/PB`` decimal."""
    match = _SIZE_RE.match(str(text))
    unit = match.group(2).lower() if match else ""
    if not match or unit not in _UNITS:
        raise UsageError(
            f"invalid {what} '{text}'",
            hint="give a number of bytes with an optional unit: 4096, 512k, 8MiB, 1GiB, 10MB",
        )
    value = float(match.group(1)) * _UNITS[unit]
    return int(value)


def gbit_per_s(nbytes: float, seconds: float) -> float:
    """Throughput in Gbit/s (10^9 bits per second); 0 for an empty interval."""
    return nbytes * 8 / 1e9 / seconds if seconds > 0 else 0.0


def mbit_per_s(nbytes: float, seconds: float) -> float:
    """Throughput in Mbit/s (10^6 bits per second)."""
    return nbytes * 8 / 1e6 / seconds if seconds > 0 else 0.0


def human_bytes(nbytes: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(nbytes) < 1024:
            return f"{nbytes:.1f} {unit}" if unit != "B" else f"{int(nbytes)} B"
        nbytes /= 1024
    return f"{nbytes:.1f} TiB"


_TIME = {"s": 1, "min": 60, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str) -> float:
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*(s|min|m|h|d)?\s*", text)
    if not m:
        raise UsageError(f"not a duration: {text!r}", hint="write e.g. 24h, 90min, 3600s, 2d")
    return float(m.group(1)) * _TIME[m.group(2) or "s"]


def parse_rate(text: str) -> float:
    """Bytes per second from '115GB/s', '12.5 MB/s' or '10PB/24h'."""
    if "/" not in text:
        raise UsageError(f"not a rate: {text!r}", hint="write e.g. 115GB/s or 10PB/24h")
    size, per = text.rsplit("/", 1)
    amount = parse_size(size, what="amount of data")
    return amount / parse_duration(per if re.match(r"\s*[0-9.]", per) else "1" + per.strip())
