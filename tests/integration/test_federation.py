"""The federation in the testbed (sites as network namespaces, tbf-shaped WAN links, toxiproxy):
read rates across sites and through caches, and five network faults seen by the read benchmark.

Needs the federation up (``scripts/run-tests`` runs ``scripts/testbed federation up``; by hand:
``scripts/testbed federation up``). Every test reads its own files (gsi's origin, read from
frankfurt) and puts the links back as the link file says. Rates are compared as ratios against
the link rate with generous bounds, never as absolute times.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from itsupport import afkit, fed_cache_file, ok, sh, xcache_holds
from waitsupport import wait_until

SIZE = 24 << 20  # 24 MiB: about 1 s over the default 200 Mbit/s WAN link
SLOW = "50mbit"  # the fault tests' link rate: a read lasts about 4 s, the fault hits its middle


@pytest.fixture(scope="module")
def fed() -> dict[str, Any]:
    proc = sh("afkit federation urls")
    if proc.returncode != 0:
        pytest.fail(f"the federation is not up: {proc.stderr.strip()} (run: scripts/testbed federation up)")
    return json.loads(proc.stdout)


@pytest.fixture
def files(fed: dict[str, Any]) -> Iterator[tuple[str, list[str]]]:
    """(directory name, file names): new random files in gsi's origin."""
    name = f"fed-it-{uuid.uuid4().hex[:8]}"
    outdir = Path(fed["sites"]["gsi"]["data"]) / name
    ok(afkit("bench", "gen", "random", "--size", str(SIZE), "--copies", "4", "--outdir", str(outdir)))
    shutil.chown(outdir, "xrootd", "xrootd")
    try:
        yield name, sorted(p.name for p in outdir.iterdir())
    finally:
        shutil.rmtree(outdir)
        for site in fed["sites"]:
            ok(afkit("federation", "link", site, "--reset"))


def records(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


def bench_cmd(site: str, url: str, *opts: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "afkit",
        "federation",
        "exec",
        site,
        "--",
        sys.executable,
        "-m",
        "afkit",
        "bench",
        "read",
        "--no-monitor",
        *opts,
        url,
    ]


def read(site: str, url: str, *opts: str) -> tuple[int, list[dict[str, Any]]]:
    proc = subprocess.run(
        bench_cmd(site, url, *opts), capture_output=True, text=True, timeout=180, check=False
    )
    return proc.returncode, records(proc.stdout)


def summary(recs: list[dict[str, Any]]) -> dict[str, Any]:
    return next(r for r in recs if r.get("type") == "summary")


def read_during(
    site: str,
    url: str,
    fault: str,
    undo: str | None,
    hold: float,
    *opts: str,
    env: dict[str, str] | None = None,
) -> tuple[int, list[dict[str, Any]], str]:
    """Read URL at SITE over gsi's link slowed to SLOW; after the first interval record apply FAULT
    (a command line), HOLD s later UNDO (a fault of HOLD seconds is the scenario: time itself)."""
    ok(afkit("federation", "link", "gsi", "--rate", SLOW))
    proc = subprocess.Popen(
        bench_cmd(site, url, *opts),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )
    assert proc.stdout is not None
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if '"interval"' in line:
            break
    ok(sh(fault))
    time.sleep(hold)  # the fault lasts HOLD seconds: the scenario itself, not a wait for something
    if undo:
        ok(sh(undo))
    out, err = proc.communicate(timeout=180)
    return proc.returncode, records("".join(lines) + out), err


def wan_gbps(fed: dict[str, Any], *sites: str) -> float:
    return min(fed["sites"][s]["rate_mbit"] for s in sites) / 1000


def test_remote_reads_are_capped_near_the_wan_rate_and_warm_caches_read_at_local_speed(
    fed: dict[str, Any], tmp_path: Path
) -> None:
    # as make demo-federation runs it, with its figure of Gbit/s over time
    table = ok(sh("afkit federation measure --figure rates.png", cwd=tmp_path, timeout=300))
    assert (tmp_path / "rates.png").read_bytes()[:4] == b"\x89PNG"
    wan = float(re.search(r"WAN link ([\d.]+) Mbit/s", table).group(1)) / 1000  # type: ignore[union-attr]
    rates = {m[0]: float(m[1]) for m in re.findall(r"^\| ([^|]+?) \| \w+ \| ([\d.]+) \|", table, re.M)}
    remote = rates["remote (no cache)"]
    assert 0.4 * wan < remote < 1.3 * wan, f"remote no-cache read {remote} Gbit/s, WAN {wan}"
    assert rates["same-site (no cache)"] > 4 * remote, rates
    for scenario in ("xcache", "xcache-dca", "dcotf"):
        assert rates[f"{scenario} cold"] < 1.3 * wan, f"{scenario}: cold read above the WAN rate: {rates}"
        assert rates[f"{scenario} warm"] > 4 * remote, f"{scenario}: warm read not at local speed: {rates}"


def test_latency_spike_shows_as_a_gap_in_the_intervals(
    fed: dict[str, Any], files: tuple[str, list[str]]
) -> None:
    d, names = files
    url = f"{fed['sites']['gsi']['storage_url']}//{d}/{names[0]}"
    rc, recs, err = read_during(
        "frankfurt",
        url,
        "afkit federation toxic gsi add --type latency --name spike --attr latency=2500",
        "afkit federation toxic gsi remove --name spike",
        2.5,
        "--block",
        "1MiB",
    )
    assert rc == 0, err
    assert summary(recs)["bytes"] == SIZE
    intervals = [r for r in recs if r["type"] == "interval"]
    assert any(r["bytes"] == 0 and r["covered"] == 1.0 for r in intervals), f"no empty second: {intervals}"


def test_bandwidth_collapse_shows_in_the_interval_rates(
    fed: dict[str, Any], files: tuple[str, list[str]]
) -> None:
    d, names = files
    url = f"{fed['sites']['gsi']['storage_url']}//{d}/{names[0]}"
    rc, recs, err = read_during(
        "frankfurt",
        url,
        "afkit federation link gsi --rate 5mbit",
        f"afkit federation link gsi --rate {SLOW}",
        2.5,
        "--block",
        "1MiB",
    )
    assert rc == 0, err
    assert summary(recs)["bytes"] == SIZE
    full = [r["mbps"] for r in recs if r["type"] == "interval" and r["covered"] == 1.0]
    assert min(full) < 0.25 * max(full), f"no collapse in the per-second rates {full}"


def test_connection_reset_mid_read_is_recorded_and_the_read_recovers(
    fed: dict[str, Any], files: tuple[str, list[str]]
) -> None:
    d, names = files
    url = f"{fed['sites']['gsi']['storage_url']}//{d}/{names[0]}"
    rc, recs, err = read_during(
        "frankfurt",
        url,
        "afkit federation toxic gsi add --type reset_peer --name reset --attr timeout=0",
        "afkit federation toxic gsi remove --name reset",
        1.0,
        "--block",
        "1MiB",
        "--reconnect-timeout",
        "20",
    )
    assert rc == 0, err
    errors = [r for r in recs if r["type"] == "error"]
    gaps = [r for r in recs if r["type"] == "gap"]
    assert errors and gaps and all(g["recovered"] for g in gaps), recs
    assert summary(recs)["gaps"] == gaps


def test_origin_down_warm_cache_still_serves_and_uncached_files_fail_clearly(
    fed: dict[str, Any], files: tuple[str, list[str]]
) -> None:
    d, names = files
    cache = fed["sites"]["frankfurt"]["caches"]["xcache"]
    rc, _ = read("frankfurt", f"{cache}//{d}/{names[0]}")
    assert rc == 0
    cached = fed_cache_file("frankfurt", "xcache", f"{d}/{names[0]}")
    wait_until(lambda: xcache_holds(cached), 30, 0.2, what=f"frankfurt's xcache to hold {cached}")
    ok(sh("afkit federation toxic gsi disable"))  # gsi's storage unreachable from the WAN
    rc, recs = read("frankfurt", f"{cache}//{d}/{names[0]}")
    assert rc == 0 and summary(recs)["bytes"] == SIZE, "the cached file was not served with the origin down"
    proc = subprocess.run(
        bench_cmd("frankfurt", f"{cache}//{d}/{names[1]}", "--reconnect-timeout", "2"),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert proc.returncode != 0
    assert "afkit: error:" in proc.stderr
    # the documented undo; the cache reaches gsi again at once, also after a reset that cut its
    # established connection (XrdCl's 30 min stream error window: ReconnectWait in xcache.cfg.j2)
    for name in names[1:3]:
        ok(sh("afkit federation link gsi --reset"))
        rc, recs = read("frankfurt", f"{cache}//{d}/{name}")
        assert rc == 0 and summary(recs)["bytes"] == SIZE, f"{name}: the cache refuses gsi, which is back"


def test_partitioned_site_ends_the_read_with_a_clear_error(
    fed: dict[str, Any], files: tuple[str, list[str]]
) -> None:
    d, names = files
    url = f"{fed['sites']['gsi']['storage_url']}//{d}/{names[0]}"
    rc, recs, err = read_during(
        "frankfurt",
        url,
        "afkit federation link gsi --down",
        None,
        0.1,
        "--block",
        "1MiB",
        "--reconnect-timeout",
        "3",
        env={"XRD_STREAMTIMEOUT": "5", "XRD_REQUESTTIMEOUT": "8"},
    )
    assert rc == 1, err
    s = summary(recs)
    assert s["status"] == "failed" and s["error"], s
    assert 0 < s["bytes"] < SIZE
    assert s["gaps"] and not s["gaps"][-1]["recovered"]
    assert "failed" in err and "(error)" in err, err


def test_documented_link_commands_run_as_written(fed: dict[str, Any]) -> None:
    """docs/federation.md: `afkit federation up` on a running federation, link changes and resets."""
    try:
        up = ok(sh("afkit federation up"))
        assert json.loads(up)["sites"].keys() == fed["sites"].keys()
        ok(sh("afkit federation link gsi --rate 50mbit"))
        status = [json.loads(line) for line in ok(sh("afkit federation status")).splitlines()]
        assert "50Mbit" in next(s for s in status if s["site"] == "gsi")["qdisc"]
    finally:
        ok(sh("afkit federation link gsi --reset"))
    status = [json.loads(line) for line in ok(sh("afkit federation status")).splitlines()]
    assert "200Mbit" in next(s for s in status if s["site"] == "gsi")["qdisc"]
