"""afkit bench against the testbed's real XRootD origin (root://127.0.0.1:1094).

Runs inside the testbed (``scripts/testbed run -- python3 -m pytest tests/integration``).
"""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from itsupport import REPO, afkit

ORIGIN = os.environ.get("AFKIT_XROOTD_URL", "root://127.0.0.1:1094")
DATA = Path(os.environ.get("AFKIT_XROOTD_DATA", "/srv/xrootd/data"))
SIZE = 24 << 20


def records(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[Path, str]]:
    """A directory of our own under the origin's export: (local dir, its root:// URL prefix)."""
    assert DATA.is_dir(), f"the testbed's XRootD data directory {DATA} is missing: is the testbed up?"
    name = f"afkit-bench-it-{uuid.uuid4().hex[:8]}"
    local = DATA / name
    proc = afkit("bench", "gen", "random", "--size", str(SIZE), "--copies", "3", "--outdir", str(local))
    assert proc.returncode == 0, proc.stderr
    for f in ("uproot-Zmumu.root", "uproot-HZZ-zstd.root"):
        shutil.copyfile(REPO / "tests" / "data" / f, local / f)
    shutil.chown(local, "xrootd", "xrootd")
    yield local, f"{ORIGIN}//{name}"
    shutil.rmtree(local)


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ([], SIZE),
        (["--stride", "random", "--block", "1MiB"], SIZE),
        (["--stride", "1MiB", "--block", "1MiB"], SIZE // 2),  # every other MiB
    ],
)
def test_bytes_read_over_root_equal_the_planned_bytes(
    served: tuple[Path, str], extra: list[str], expected: int
) -> None:
    _local, url = served
    proc = afkit("bench", "read", "--no-monitor", *extra, f"{url}/random-000.bin")
    assert proc.returncode == 0, proc.stderr
    summary = records(proc.stdout)[-1]
    assert summary["bytes"] == expected
    assert summary["files"][0]["size"] == SIZE
    assert sum(r["bytes"] for r in records(proc.stdout) if r["type"] == "interval") == expected


def test_root_like_pattern_uses_vector_reads(served: tuple[Path, str]) -> None:
    from afkit.bench.offsets import RootLikePlan

    _local, url = served
    proc = afkit("bench", "read", "--no-monitor", "--pattern", "root-like", f"{url}/random-001.bin")
    assert proc.returncode == 0, proc.stderr
    summary = records(proc.stdout)[-1]
    planned = [c for req in RootLikePlan().requests(SIZE) for c in req]
    assert summary["bytes"] == sum(n for _o, n in planned)
    assert summary["ops"] == len(planned)


def test_replay_over_root_with_vectors(served: tuple[Path, str], tmp_path: Path) -> None:
    _local, url = served
    trace = tmp_path / "t.csv"
    trace.write_text("offset,length\n" + "".join(f"{i * 100_000},{1000 + i}\n" for i in range(50)))
    proc = afkit(
        "bench", "read", "--no-monitor", "--replay", str(trace), "--vector", "8", f"{url}/random-002.bin"
    )
    assert proc.returncode == 0, proc.stderr
    assert records(proc.stdout)[-1]["bytes"] == sum(1000 + i for i in range(50))


def test_missing_file_on_the_server_is_exit_5(served: tuple[Path, str]) -> None:
    _local, url = served
    proc = afkit("bench", "read", "--no-monitor", f"{url}/no-such-file.bin")
    assert proc.returncode == 5, proc.stderr
    assert "no such file" in proc.stderr


def test_unreachable_server_is_exit_3_within_seconds() -> None:
    t0 = time.monotonic()
    proc = afkit("bench", "read", "--no-monitor", "root://127.0.0.1:1//x.bin", timeout=60)
    assert proc.returncode == 3, proc.stderr
    assert time.monotonic() - t0 < 20
    assert "cannot reach" in proc.stderr


def test_two_clients_over_root(served: tuple[Path, str], tmp_path: Path) -> None:
    _local, url = served
    out = tmp_path / "multi"
    proc = afkit(
        "bench", "multi", "-n", "2", "--outdir", str(out), f"{url}/random-000.bin", f"{url}/random-001.bin"
    )
    assert proc.returncode == 0, proc.stderr
    summed = [json.loads(x) for x in (out / "sum.jsonl").read_text().splitlines()]
    assert summed[-1]["bytes"] == 2 * SIZE and summed[-1]["clients_ok"] == 2


@pytest.mark.parametrize(
    ("name", "branch", "events"),
    [("uproot-Zmumu.root", "E1", 2304), ("uproot-HZZ-zstd.root", "Jet_Px", 2421)],
)
def test_analysis_over_root(served: tuple[Path, str], name: str, branch: str, events: int) -> None:
    _local, url = served
    proc = afkit("bench", "analysis", "--no-monitor", "-b", branch, f"{url}/{name}")
    assert proc.returncode == 0, proc.stderr
    summary = records(proc.stdout)[-1]
    assert summary["events"] == events and summary["bytes"] > 0


def test_analysis_of_a_non_root_file_over_root_is_exit_6(served: tuple[Path, str]) -> None:
    _local, url = served
    proc = afkit("bench", "analysis", "--no-monitor", "-b", "x", f"{url}/random-000.bin")
    assert proc.returncode == 6, proc.stderr


@pytest.mark.parametrize(
    ("option", "says", "lists"),
    [
        (["--tree", "nosuch", "-b", "E1"], "no tree 'nosuch'", "trees in the file: events"),
        (["-b", "NoSuchBranch"], "no branch 'NoSuchBranch' in tree 'events'", "branches: "),
    ],
    ids=["tree", "branch"],
)
def test_analysis_over_root_with_a_wrong_name_ends_with_what_the_file_holds(
    served: tuple[Path, str], option: list[str], says: str, lists: str
) -> None:
    """The uproot XRootD file opened before the name was found wrong is closed: the process exits
    (it hung at interpreter shutdown, its open XRootD handle keeping it alive), exit 5 naming what
    the file holds."""
    _local, url = served
    start = time.monotonic()
    proc = afkit("bench", "analysis", "--no-monitor", *option, f"{url}/uproot-Zmumu.root", timeout=120)
    assert proc.returncode == 5, proc.stderr
    assert says in proc.stderr and lists in proc.stderr
    assert time.monotonic() - start < 60  # afkit's start-up on a loaded machine; the error itself at once
