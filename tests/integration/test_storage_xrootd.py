"""afkit storage scenarios with real xrootd daemons: origin, XCache, XCache+DCA, DCOTF.

Every test starts its own origin (scenario 'origin', our log) so it can tell whether a read
reached the origin, and stops exactly what it started. Runs inside the testbed.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import itsupport
import pytest
from itsupport import ok, xcache_holds
from waitsupport import running, wait_until

DATA = Path(os.environ.get("AFKIT_XROOTD_DATA", "/srv/xrootd/data"))
BASE = "12094"  # clear of the testbed origin (1094) and of the default scenario ports
SIZE = 16 << 20
ENV = {**os.environ, "AFKIT_STORAGE_BASE_PORT": BASE}


def afkit(*args: str) -> subprocess.CompletedProcess[str]:
    return itsupport.afkit(*args, env={"AFKIT_STORAGE_BASE_PORT": BASE})


def origin_opens(state: Path, name: str) -> int:
    log = state / "origin" / "origin" / "xrootd.log"
    return sum(
        1 for line in log.read_text(errors="replace").splitlines() if "ofs_open" in line and name in line
    )


FILES = {"xcache": "/random-001.bin", "xcache-dca": "/random-002.bin", "dcotf": "/random-003.bin"}


@pytest.fixture(scope="module")
def site() -> Iterator[tuple[Path, Path, str]]:
    """(state dir, data dir, file for the restart test) with the origin scenario up.

    One origin for the module; each cache scenario reads its own file, so the origin's log
    tells which scenario's read reached it.
    """
    assert DATA.is_dir(), f"{DATA} is missing: is the testbed up?"
    state = Path(tempfile.mkdtemp(prefix="afkit-storage-it-", dir="/tmp"))
    state.chmod(0o755)  # the daemons run as the xrootd user
    data = DATA / f"afkit-storage-it-{uuid.uuid4().hex[:8]}"
    ok(afkit("bench", "gen", "random", "--size", str(SIZE), "--copies", "4", "--outdir", str(data)))
    shutil.chown(data, "xrootd", "xrootd")
    ok(afkit("storage", "up", "origin", "--state-dir", str(state), "--data", str(data)))
    try:
        yield state, data, "/random-000.bin"
    finally:
        afkit("storage", "down", "all", "--state-dir", str(state))
        shutil.rmtree(data)
        shutil.rmtree(state)


def read(url: str) -> dict:
    out = ok(afkit("bench", "read", "--no-monitor", url))
    return json.loads(out.splitlines()[-1])


@pytest.mark.parametrize("scenario", ["xcache", "xcache-dca", "dcotf"])
def test_second_read_is_served_from_the_cache(site: tuple[Path, Path, str], scenario: str) -> None:
    state, data, _ = site
    path = FILES[scenario]
    ok(afkit("storage", "up", scenario, "--state-dir", str(state), "--origin", f"127.0.0.1:{BASE}"))
    url = ok(afkit("storage", "url", scenario, path)).strip()
    first = read(url)
    assert first["bytes"] == SIZE
    opens_after_first = origin_opens(state, path)
    assert opens_after_first >= 1, "the first read did not reach the origin"
    cached = state / scenario / "cache" / path.lstrip("/")
    wait_until(lambda: xcache_holds(cached), 30, 0.2, what=f"{scenario} to hold the whole file ({cached})")
    assert cached.read_bytes() == (data / path.lstrip("/")).read_bytes(), (
        "cache file differs from the origin's"
    )
    second = read(url)
    assert second["bytes"] == SIZE
    assert origin_opens(state, path) == opens_after_first, "the second read touched the origin"
    ok(afkit("storage", "down", scenario, "--state-dir", str(state)))


def test_status_and_down_stop_exactly_what_was_started(site: tuple[Path, Path, str]) -> None:
    state, _data, _path = site
    ok(afkit("storage", "up", "dcotf", "--state-dir", str(state), "--origin", f"127.0.0.1:{BASE}"))
    recs = [
        json.loads(x) for x in ok(afkit("storage", "status", "dcotf", "--state-dir", str(state))).splitlines()
    ]
    assert [r["daemon"] for r in recs] == ["dcotf-cache", "dcotf-redirector"]
    assert all(r["running"] and r["listening"] for r in recs)
    pids = [r["pid"] for r in recs]
    ok(afkit("storage", "down", "dcotf", "--state-dir", str(state)))
    assert not [pid for pid in pids if running(pid)]
    assert afkit("storage", "status", "dcotf", "--state-dir", str(state)).returncode == 1
    assert afkit("storage", "status", "origin", "--state-dir", str(state)).returncode == 0, (
        "origin was stopped too"
    )


def test_up_on_a_busy_port_is_refused_naming_the_program_there(site: tuple[Path, Path, str]) -> None:
    state, _data, _url = site  # the origin of that state listens on the port
    pid = int((state / "origin" / "origin" / "xrootd.pid").read_text())
    other = Path(tempfile.mkdtemp(prefix="afkit-storage-it-", dir="/tmp"))
    other.chmod(0o755)  # the daemons run as the xrootd user
    try:
        proc = afkit("storage", "up", "origin", "--state-dir", str(other), "--data", str(DATA))
        assert proc.returncode == 3 and "already in use" in proc.stderr
        assert f"pid {pid} (" in proc.stderr and "xrootd" in proc.stderr, proc.stderr
    finally:
        shutil.rmtree(other)


def written(directory: Path, text: str) -> bool:
    """Has the `afkit bench read -o DIRECTORY/run.jsonl` written a record with TEXT (to its .part
    file while it runs, to run.jsonl when it has ended)?"""
    for path in (*directory.glob(".run.jsonl.*.part"), directory / "run.jsonl"):
        with contextlib.suppress(OSError):  # renamed into place meanwhile, or not there yet
            if text in path.read_text(encoding="utf-8"):
                return True
    return False


def test_server_restart_during_a_read_is_recorded(site: tuple[Path, Path, str], tmp_path: Path) -> None:
    state, data, path = site
    trace = tmp_path / "trace.csv"
    trace.write_text("".join(f"{(i * 4096) % SIZE},4096\n" for i in range(400_000)))
    out = tmp_path / "run.jsonl"
    url = f"root://127.0.0.1:{BASE}/{path}"
    cmd = [sys.executable, "-m", "afkit", "bench", "read", "--no-monitor", "--replay", str(trace)]
    cmd += ["--duration", "8", "--reconnect-timeout", "15", "-o", str(out), url]
    proc = subprocess.Popen(cmd, env=ENV, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: written(tmp_path, '"type":"interval"'), 30, what="the first measured second",
                   proc=proc)  # fmt: skip
        ok(afkit("storage", "down", "origin", "--state-dir", str(state)))
        # the read has met the server's absence before it comes back
        wait_until(lambda: written(tmp_path, '"type":"error"'), 30, what="the read's error record", proc=proc)
        ok(afkit("storage", "up", "origin", "--state-dir", str(state), "--data", str(data)))
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    recs = [json.loads(x) for x in out.read_text().splitlines()]
    kinds = [r["type"] for r in recs]
    assert "error" in kinds and "gap" in kinds, err
    assert kinds.index("interval") < kinds.index("error"), "intervals before the failure were lost"
    summary = recs[-1]
    assert summary["type"] == "summary"
    if summary["status"] == "ok":  # recovered: the run went on after the gap
        assert proc.returncode == 0 and summary["gaps"][0]["recovered"] is True
        last_error = max(i for i, k in enumerate(kinds) if k == "gap")
        assert any(r["type"] == "interval" and r["bytes"] > 0 for r in recs[last_error:])
    else:
        assert proc.returncode == 1 and summary["error"]


@contextlib.contextmanager
def documented_origin(command: str, port: int, size: int) -> Iterator[tuple[dict[str, str], str]]:
    """COMMAND (a documented `afkit storage up origin ...`) run as written, as root with every default
    (data $AFKIT_XROOTD_DATA, state /var/lib/afkit/storage) on PORT; yields (its environment, the
    name of a SIZE-byte file in its data); takes the origin, the file and a state it made down."""
    env = {k: v for k, v in os.environ.items() if k != "AFKIT_STORAGE_STATE"}
    env["AFKIT_STORAGE_BASE_PORT"] = str(port)
    state = Path("/var/lib/afkit/storage")
    # what this test makes it takes away, nothing else: another test (a host study) may be using
    # /var/lib/afkit/study meanwhile
    made, parent_made = not state.exists(), not state.parent.exists()
    name = f"afkit-storage-doc-{uuid.uuid4().hex[:8]}.bin"
    (DATA / name).write_bytes(os.urandom(size))
    try:
        up = subprocess.run(["bash", "-c", command], env=env, capture_output=True, text=True, check=False,
                            timeout=120)  # fmt: skip
        assert up.returncode == 0, up.stderr
        yield env, name
    finally:
        subprocess.run(["afkit", "storage", "down", "origin"], env=env, capture_output=True, check=False)
        (DATA / name).unlink()
        if made:
            shutil.rmtree(state)  # /var/lib/afkit/storage, made by this test
        if parent_made:
            with contextlib.suppress(OSError):  # /var/lib/afkit, when nothing else is in it now
                state.parent.rmdir()


def read_summary(url: str, env: dict[str, str]) -> dict[str, Any]:
    """The summary of `afkit bench read URL`, which must succeed."""
    got = subprocess.run(["afkit", "bench", "read", "--no-monitor", url], env=env, capture_output=True,
                         text=True, check=False, timeout=120)  # fmt: skip
    assert got.returncode == 0, got.stderr
    summary: dict[str, Any] = json.loads(got.stdout.splitlines()[-1])
    return summary


def test_origin_up_as_documented_serves_the_testbeds_data() -> None:
    """docs/federation.md's `afkit storage up origin`, on ports of its own."""
    with documented_origin("afkit storage up origin", 13094, 1 << 20) as (env, name):
        assert Path("/var/lib/afkit/storage/origin/origin/xrootd.log").is_file()
        url = subprocess.run(["afkit", "storage", "url", "origin", f"/{name}"], env=env, capture_output=True,
                             text=True, check=True).stdout.strip()  # fmt: skip
        assert url == f"root://127.0.0.1:13094//{name}"
        assert read_summary(url, env)["bytes"] == 1 << 20


def test_throttled_origin_as_documented_serves_at_most_its_rate() -> None:
    """docs/gitlab-ci.md's `afkit storage up origin --throttle 4MB` (a slow endpoint on purpose):
    a 16 MiB read through it lasts seconds instead of milliseconds.

    XRootD's throttle hands out its allowance per 1 s interval (src/XrdThrottle/XrdThrottleManager.cc:
    every user starts with a whole interval's allowance and RecomputeInternal refills it once per
    interval), so a read that starts just before a refill gets two intervals' worth at once: SIZE
    bytes at RATE take at least SIZE/RATE - 2 s, not SIZE/RATE (8 MiB once took 1.15 s)."""
    size, rate = 16 << 20, 4e6
    with documented_origin("afkit storage up origin --throttle 4MB", 13194, size) as (env, name):
        summary = read_summary(f"root://127.0.0.1:13194//{name}", env)
        assert summary["bytes"] == size
        least = size / rate - 2
        took = summary["seconds"]
        assert took >= least, f"{took:.2f} s < {least:.2f} s through a 4 MB/s throttle"
