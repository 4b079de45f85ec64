"""``afkit federation measure``: the federation's read rates, the relations its demo shows.

For a site with caches (frankfurt) in front of another site's storage (gsi): the same-site read at
the storage's site, the remote no-cache read over the WAN, and a cold then a warm read through
each cache scenario, each of its own new file. Every read is ``afkit bench read`` run in the
reading site's network namespace; rates are compared with the WAN link rate.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TypedDict

from afkit.bench.intervals import IntervalRecord
from afkit.bench.readbench import ReadSummary
from afkit.errors import AfkitError, PrereqError
from afkit_testbed.federation import control, guard, net
from afkit_testbed.federation.links import Federation, Site


class ReadOutput(ReadSummary):
    """``afkit bench read``'s output: its summary record, its interval records added."""

    intervals: list[IntervalRecord]


class MeasuredRead(TypedDict):
    """A row of ``afkit federation measure --json``."""

    read: str
    scenario: str
    phase: str
    site: str
    url: str
    gbps: float
    seconds: float
    bytes: int
    vs_wan: float
    timeline: list[list[float]]  # [seconds since the first read, Gbit/s] per interval


class Measurement(TypedDict):
    """``afkit federation measure --json``."""

    wan_gbps: float
    size: int
    reader: str
    storage: str
    rows: list[MeasuredRead]


def reader(fed: Federation) -> Site:
    site = next((s for s in fed.sites.values() if s.cache_origin and s.caches), None)
    if site is None:
        raise PrereqError(
            "no site of the federation has caches", hint="give a site 'caches' in the link file"
        )
    return site


def bench_read(site: str, url: str, env: dict[str, str] | None = None) -> ReadOutput:
    """``afkit bench read URL`` in SITE's namespace (with ENV: a guarded federation's token and CA
    bundle, paths only): its summary, with its interval records as ``intervals``."""
    cmd = net.in_ns(site, sys.executable, "-m", "afkit", "bench", "read", "--no-monitor", url)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False, env=env)
    summary = parse_read(proc.stdout)
    if proc.returncode != 0 or summary is None:
        raise AfkitError(f"afkit bench read {url} at {site} failed: {proc.stderr.strip()[-500:]}")
    return summary


def parse_read(stdout: str) -> ReadOutput | None:
    """The summary record of ``afkit bench read``'s JSON lines, its interval records added as
    ``intervals``; None without a summary."""
    lines = [json.loads(x) for x in stdout.splitlines() if x.startswith("{")]
    summary: ReadOutput | None = next((r for r in lines if r.get("type") == "summary"), None)
    if summary is not None:
        summary["intervals"] = [r for r in lines if r.get("type") == "interval"]
    return summary


def _epoch(stamp: str) -> float:
    return dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


# a first or last interval shorter than this (seconds) is merged into its neighbour: its rate is
# a few buffered blocks over a few milliseconds, not the read's rate
MIN_PART = 0.25


def timeline(summary: ReadOutput, t0: float) -> list[list[float]]:
    """[seconds since T0, Gbit/s] per interval of a read: each interval (a wall-clock second,
    its bytes over the part of it the read ran) placed at the middle of that part; a first or
    last part shorter than MIN_PART joins the interval next to it."""
    start, end = _epoch(summary["start"]), _epoch(summary["end"])
    parts = []  # [lo, hi, bytes, seconds]
    for rec in summary["intervals"]:
        t = float(rec["t"])
        lo, hi = max(t, start), min(t + 1.0, max(end, start))
        parts.append([lo, hi, float(rec["bytes"]), float(rec.get("covered", hi - lo))])
    for first in (True, False):
        if len(parts) > 1 and parts[0 if first else -1][3] < MIN_PART:
            short = parts.pop(0 if first else -1)
            near = parts[0 if first else -1]
            near[:] = [min(near[0], short[0]), max(near[1], short[1]), near[2] + short[2], near[3] + short[3]]
    return [[round((lo + hi) / 2 - t0, 3), round(nbytes * 8 / 1e9 / sec, 6) if sec > 0 else 0.0]
            for lo, hi, nbytes, sec in parts]  # fmt: skip


@contextlib.contextmanager
def client_env() -> Iterator[dict[str, str] | None]:
    """The readers' environment: for a guarded federation a read token of its issuer (a file in a
    folder of this process's, removed afterwards) and its CA bundle; else None (this process's)."""
    state = control.load_state()
    if not control.is_guarded(state):
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="afkit-measure-") as tmp:
        token = guard.issue_token(
            control.root_dir(), ["storage.read:/"], Path(tmp) / "read.token", 3600, None
        )
        yield {**os.environ, "BEARER_TOKEN_FILE": str(token), "X509_CERT_FILE": state["guard"]["ca_bundle"]}


def measure(fed: Federation, size: int) -> Measurement:
    with client_env() as env:
        return _measure(fed, size, env)


def _measure(fed: Federation, size: int, env: dict[str, str] | None) -> Measurement:
    client = reader(fed)
    guarded = env is not None
    home = fed.site(client.cache_origin or "")
    wan_gbps = min(client.link.rate_bit, home.link.rate_bit) / 1e9
    name = f"measure-{uuid.uuid4().hex[:8]}"
    outdir = control.data_dir(home.name) / name
    copies = 1 + len(client.caches)
    gen = [sys.executable, "-m", "afkit", "bench", "gen", "random", "--size", str(size),
           "--copies", str(copies), "--outdir", str(outdir)]  # fmt: skip
    net.run(gen)
    shutil.chown(outdir, "xrootd", "xrootd")
    files = sorted(p.name for p in outdir.iterdir())
    rows: list[MeasuredRead] = []
    t0 = time.time()

    def row(scenario: str, phase: str, site: str, url: str) -> None:
        url = guard.scheme(url, guarded)
        s = bench_read(site, url, env)
        rows.append({"read": f"{scenario} {phase}", "scenario": scenario, "phase": phase, "site": site,
                     "url": url, "gbps": s["gbps"], "seconds": s["seconds"], "bytes": s["bytes"],
                     "vs_wan": round(s["gbps"] / wan_gbps, 2), "timeline": timeline(s, t0)})  # fmt: skip

    try:
        row("same-site", "(no cache)", home.name, f"{home.local_url}//{name}/{files[0]}")
        row("remote", "(no cache)", client.name, f"{home.storage_url}//{name}/{files[0]}")
        for scenario, f in zip(client.caches, files[1:], strict=True):
            url = f"{control.cache_url(client, scenario)}//{name}/{f}"
            row(scenario, "cold", client.name, url)
            time.sleep(1)  # the cache finishes writing the file
            row(scenario, "warm", client.name, url)
    finally:
        shutil.rmtree(outdir)
    return {"wan_gbps": wan_gbps, "size": size, "reader": client.name, "storage": home.name, "rows": rows}


def table(result: Measurement) -> str:
    lines = [
        f"reads of {result['size'] >> 20} MiB files of {result['storage']}'s storage; "
        f"WAN link {result['wan_gbps'] * 1000:g} Mbit/s",
        "",
        "| read | at site | Gbit/s | x WAN rate |",
        "| --- | --- | ---: | ---: |",
    ]
    lines += [f"| {r['read']} | {r['site']} | {r['gbps']:.3f} | {r['vs_wan']:.2f} |" for r in result["rows"]]
    return "\n".join(lines)
