"""Building a wheel in tests: ``pip wheel`` of a source tree, offline, its one wheel returned.

Shared by the unit tests of afkit's wheel (tests/unit/test_package.py) and of the testbed's
(tests/unit/test_plugin_commands.py); ``pythonpath = ["tests"]`` puts this folder on ``sys.path``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def build_wheel(src: Path, out: Path, distribution: str) -> Path:
    """The wheel of the source tree SRC, built into OUT without network or build isolation; the
    one file there named DISTRIBUTION-*.whl (pip's error on failure)."""
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index",
         "-w", str(out), str(src)],
        capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    [whl] = out.glob(f"{distribution}-*.whl")
    return whl
