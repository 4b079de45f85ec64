"""Progress bars for afkit's long steps (staging, squashfs layers), from tqdm.

Shown on a terminal only: when standard error is not a terminal (CI logs, pipes, tests) nothing
is printed, so logs hold the steps' one-line summaries and no bar redraws.
"""

from __future__ import annotations

import sys
from typing import Never

from tqdm import tqdm


def bar(total: int, what: str, *, quiet: bool = False) -> tqdm[Never]:
    """A byte-counting bar labelled ``afkit: WHAT`` (disabled when QUIET or not on a terminal);
    thread-safe ``update(n)``; use it as a context manager."""
    return tqdm(
        total=total,
        desc=f"afkit: {what}",
        unit="B",
        unit_scale=True,
        unit_divisor=1024,
        file=sys.stderr,
        disable=quiet or not sys.stderr.isatty(),
        leave=False,
        dynamic_ncols=True,
    )
