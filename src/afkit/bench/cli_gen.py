"""``afkit bench gen``."""

from __future__ import annotations

from typing import Any


def register(bsub: Any) -> None:
    pass
