"""Which bytes a read benchmark asks for, and in which order.

Every plan yields *requests*: a list of ``(offset, length)`` chunks that the client issues as
one call (one chunk: a plain read; several: a vector read). Plans never ask for the same byte
twice, so nothing a plan reads can be served from the client's own earlier reads.

numpy is imported only by the random orders: sequential plans (the campaign job's) need nothing
but the standard library.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

from afkit.errors import UsageError

Chunk = tuple[int, int]
Request = list[Chunk]

RANDOM = "random"
ROOT_MAX_READ = 2999  # "many small reads (< 3 kB)"
ROOT_MIN_READ = 100


@dataclass(frozen=True)
class BlockPlan:
    """Blocks of ``block`` bytes at ``start + (block + stride) * k``; ``stride=None`` means random."""

    block: int
    stride: int | None = 0
    start: int = 0
    seed: int = 0

    def __post_init__(self) -> None:
        if self.block <= 0:
            raise UsageError(f"block size must be positive, got {self.block}")
        if self.stride is not None and self.stride < 0:
            raise UsageError(f"stride must be 0, a positive size or 'random', got {self.stride}")
        if self.start < 0:
            raise UsageError(f"start offset must be >= 0, got {self.start}")

    def offsets(self, size: int) -> Iterator[int]:
        """The blocks' offsets. A random order is drawn here, when called, not at the first
        ``next()``: the benchmark asks for its plans before its clock starts, so drawing the
        order (and numpy.random's first import, ~10 ms) is never timed as reading."""
        if self.start >= size:
            return iter(())
        if self.stride is None:
            count = math.ceil((size - self.start) / self.block)
            import numpy as np

            order = np.random.default_rng(self.seed).permutation(count)
            return iter((self.start + self.block * order).tolist())
        return iter(range(self.start, size, self.block + self.stride))

    def requests(self, size: int) -> Iterator[Request]:
        block, last = self.block, size - self.block  # a full block fits at offsets up to `last`
        return ([(o, block)] if o <= last else [(o, size - o)] for o in self.offsets(size))


@dataclass(frozen=True)
class RootLikePlan:
    """ROOT-like access: small reads (< 3 kB) walking forward in several regions at once.

    The file is cut into ``regions`` equal slices (like the baskets of different branches);
    each request takes ``per_region`` consecutive small chunks from every region, separated by
    small gaps (other baskets), and is issued as one vector read.
    """

    regions: int = 8
    per_region: int = 4
    min_read: int = ROOT_MIN_READ
    max_read: int = ROOT_MAX_READ
    max_gap: int = 4096
    seed: int = 0

    def __post_init__(self) -> None:
        if self.regions < 1 or self.per_region < 1:
            raise UsageError("root-like pattern needs at least one region and one read per region")
        if not 0 < self.min_read <= self.max_read:
            raise UsageError(f"invalid read sizes {self.min_read}..{self.max_read}")

    def requests(self, size: int) -> Iterator[Request]:
        import numpy as np

        rng = np.random.default_rng(self.seed)
        bounds = [(size * r // self.regions, size * (r + 1) // self.regions) for r in range(self.regions)]
        cursors = [lo for lo, _hi in bounds]
        while True:
            request: Request = []
            for r, (_lo, hi) in enumerate(bounds):
                for _ in range(self.per_region):
                    pos = cursors[r]
                    if pos >= hi:
                        break
                    length = min(int(rng.integers(self.min_read, self.max_read + 1)), hi - pos)
                    request.append((pos, length))
                    cursors[r] = pos + length + int(rng.integers(0, self.max_gap + 1))
            if not request:
                return
            yield request


@dataclass(frozen=True)
class ReplayPlan:
    """A recorded trace of ``(offset, length)`` reads, grouped ``vector`` at a time."""

    chunks: tuple[Chunk, ...]
    vector: int = 1

    def requests(self, size: int) -> Iterator[Request]:
        group: Request = []
        for offset, length in self.chunks:
            if offset >= size:
                continue
            group.append((offset, min(length, size - offset)))
            if len(group) >= self.vector:
                yield group
                group = []
        if group:
            yield group


def parse_stride(text: str) -> int | None:
    """``"0"``, ``"1MiB"`` → bytes; ``"random"`` → ``None``."""
    from afkit.bench.units import parse_size

    if text.strip().lower() == RANDOM:
        return None
    return parse_size(text, what="stride")
