"""Shared fixtures of the bench unit tests."""

from __future__ import annotations

from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[2] / "data"


@pytest.fixture
def data_dir() -> Path:
    assert DATA.is_dir(), f"test data missing: {DATA}"
    return DATA


@pytest.fixture
def pattern_file(tmp_path: Path) -> Path:
    """A 1 MiB + 123 byte file whose every 4-byte word holds its own offset/4 (checkable reads)."""
    import numpy as np

    path = tmp_path / "pattern.bin"
    words = np.arange((1 << 20) // 4, dtype="<u4")
    path.write_bytes(words.tobytes() + b"x" * 123)
    return path
