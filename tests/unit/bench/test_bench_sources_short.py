"""XRootDSource.read on short answers: read on to the requested length, never leave bytes out.

The stand-in is XRootD.client.File's read interface ((status, data) with status.ok/.message);
the real client against a real server runs in tests/integration (test_bench_xrootd.py,
test_federation_faults.py, where a bandwidth collapse made a server answer short).
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from afkit.bench.sources import ReadError, XRootDSource

SIZE = 1000


@dataclass
class Status:
    ok: bool = True
    message: str = ""


class ShortFile:
    """A file of SIZE bytes whose reads answer at most CAP bytes, and nothing from DEAD on."""

    def __init__(self, cap: int, dead: int = SIZE) -> None:
        self.cap, self.dead, self.calls = cap, dead, 0

    def read(self, offset: int, length: int, timeout: int = 0) -> tuple[Status, bytes]:
        self.calls += 1
        end = min(offset + length, SIZE, self.dead, offset + self.cap)
        return Status(), b"x" * max(0, end - offset)


def source(file: ShortFile) -> XRootDSource:
    src = XRootDSource.__new__(XRootDSource)
    src.url, src.size, src._file, src._last = "root://h//f", SIZE, file, None
    return src


def test_a_short_answer_is_read_on_to_the_whole_request() -> None:
    assert source(ShortFile(cap=300)).read(0, 800) == 800


def test_a_request_past_the_end_of_the_file_stops_at_the_end() -> None:
    file = ShortFile(cap=SIZE)
    assert source(file).read(900, 400) == 100
    assert file.calls == 1  # no extra round trip at the end of the file


def test_a_server_that_stops_answering_before_the_end_is_a_read_error() -> None:
    with pytest.raises(ReadError, match="ended at 600 of 1000 bytes"):
        source(ShortFile(cap=SIZE, dead=600)).read(512, 256)
