"""afkit.bench.units: the one formatter of byte sizes (benchmarks and the image builder's plan)."""

from __future__ import annotations

import pytest

from afkit.bench.units import human_bytes


@pytest.mark.parametrize(
    ("nbytes", "text"),
    [(512, "512 B"), (1536, "1.5 KiB"), (5 << 20, "5.0 MiB"), (3 << 30, "3.0 GiB"), (2 << 40, "2.0 TiB")],
)
def test_sizes_are_shown_in_binary_units(nbytes: int, text: str) -> None:
    assert human_bytes(nbytes) == text
