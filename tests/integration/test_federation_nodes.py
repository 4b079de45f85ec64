"""A site's client nodes in the testbed federation (docs/federation.md, "Client nodes"): frankfurt's
nodes frankfurt-n1..n3, each a network namespace behind its own tbf-shaped link to frankfurt's
namespace (where its caches run), reach frankfurt's caches and gsi's storage across the WAN; a read
from a node is capped by the node's link; a campaign spreads each wave's jobs over the nodes.

Needs the federation up with the default link file (``scripts/testbed federation up``). Every test
reads its own new files of gsi's storage and puts the links back as the link file says.
"""

from __future__ import annotations

import csv
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import itsupport
import pytest
import yaml
from itsupport import FED_XRD_ENV, federation_work, ok, sh

from afkit.campaign.aggregate import wave_skews
from afkit.campaign.rows import read_jobs
from afkit_testbed.federation.measure import bench_read

pytestmark = pytest.mark.testbed

NODES = ["frankfurt-n1", "frankfurt-n2", "frankfurt-n3"]
SIZE = 24 << 20  # 24 MiB: about 2 s at the slowed node link below
NODE_SLOW = 0.1  # Gbit/s: the node's link while its rate is measured (below the WAN's 200 Mbit/s)


@pytest.fixture(scope="module")
def fed() -> dict[str, Any]:
    proc = sh("afkit federation urls")
    if proc.returncode != 0:
        pytest.fail(f"the federation is not up: {proc.stderr.strip()} (run: scripts/testbed federation up)")
    return json.loads(proc.stdout)


@pytest.fixture
def links_reset(fed: dict[str, Any]) -> Iterator[None]:
    """Every site's and node's link back as the link file says, afterwards."""
    try:
        yield
    finally:
        for ns in [*fed["sites"], *NODES]:
            ok(itsupport.afkit("federation", "link", ns, "--reset"))


@pytest.fixture
def files(fed: dict[str, Any], links_reset: None) -> Iterator[tuple[str, list[str]]]:
    """(directory name, file names): new random files in gsi's origin."""
    name = f"fed-nodes-{uuid.uuid4().hex[:8]}"
    outdir = Path(fed["sites"]["gsi"]["data"]) / name
    ok(sh(f"afkit bench gen random --size {SIZE} --copies 3 --outdir {outdir}"))
    shutil.chown(outdir, "xrootd", "xrootd")
    try:
        yield name, sorted(p.name for p in outdir.iterdir())
    finally:
        shutil.rmtree(outdir)


def in_node(node: str, *cmd: str) -> subprocess.CompletedProcess[str]:
    return itsupport.afkit("federation", "exec", node, "--", *cmd, timeout=60)


def test_urls_report_frankfurts_three_nodes_with_their_addresses_and_link_rate(fed: dict[str, Any]) -> None:
    nodes = fed["sites"]["frankfurt"]["nodes"]
    assert [n["namespace"] for n in nodes] == NODES
    assert [n["address"] for n in nodes] == ["10.77.2.21", "10.77.2.22", "10.77.2.23"]
    assert {n["rate_mbit"] for n in nodes} == {1000.0}
    assert all(not s["nodes"] for name, s in fed["sites"].items() if name != "frankfurt")


def test_each_node_has_its_own_address_and_both_ends_of_its_link_shaped(fed: dict[str, Any]) -> None:
    for node in fed["sites"]["frankfurt"]["nodes"]:
        addr = ok(in_node(node["namespace"], "ip", "-4", "-o", "addr", "show", "scope", "global"))
        assert f"inet {node['address']}/32" in addr, addr
        qdisc = ok(in_node(node["namespace"], "tc", "qdisc", "show", "dev", "lan0"))
        site_end = ok(in_node("frankfurt", "tc", "qdisc", "show", "dev", f"n{node['namespace'][-1]}"))
        for shown in (qdisc, site_end):
            assert "tbf" in shown and "rate 1Gbit" in shown, shown


@pytest.mark.parametrize("node", NODES)
def test_a_node_reaches_frankfurts_cache_port_and_gsis_storage(fed: dict[str, Any], node: str) -> None:
    frankfurt = fed["sites"]["frankfurt"]
    targets = [frankfurt["caches"]["xcache"], fed["sites"]["gsi"]["storage_url"]]
    for url in targets:
        host, port = url.removeprefix("root://").rsplit(":", 1)
        probe = f"import socket; socket.create_connection(({host!r}, {int(port)}), timeout=5).close()"
        proc = in_node(node, sys.executable, "-c", probe)
        assert proc.returncode == 0, f"{node} cannot reach {url}: {proc.stderr.strip()[-500:]}"


def test_a_node_reads_gsis_data_directly_and_through_each_cache(
    fed: dict[str, Any], files: tuple[str, list[str]]
) -> None:
    """A whole read, not just a connection: the daemons allow the node's address."""
    d, names = files
    urls = [fed["sites"]["gsi"]["storage_url"], *fed["sites"]["frankfurt"]["caches"].values()]
    for node, url in zip(NODES * 2, urls, strict=False):
        summary = bench_read(node, f"{url}//{d}/{names[0]}")
        assert summary["status"] == "ok" and summary["bytes"] == SIZE, (node, url, summary)


def test_a_warm_read_from_a_node_through_xcache_is_capped_near_the_nodes_link_rate(
    fed: dict[str, Any], files: tuple[str, list[str]]
) -> None:
    d, names = files
    url = f"{fed['sites']['frankfurt']['caches']['xcache']}//{d}/{names[1]}"
    assert bench_read("frankfurt", url)["status"] == "ok"  # cold: the cache fetches it from gsi
    time.sleep(1)  # the cache finishes writing the file (as afkit federation measure)
    warm_at_site = bench_read("frankfurt", url)["gbps"]  # the caching node itself: no node link
    ok(sh("afkit federation link frankfurt-n2 --rate 100mbit"))
    at_node = bench_read("frankfurt-n2", url)
    link = NODE_SLOW
    assert at_node["bytes"] == SIZE
    rate = at_node["gbps"]
    assert 0.4 * link < rate < 1.3 * link, f"read at the node {rate} Gbit/s, its link {link}"
    assert warm_at_site > 4 * rate, f"warm read at the site {warm_at_site} Gbit/s, at the node {rate}"
    ok(sh("afkit federation link frankfurt-n2 --reset"))
    again = bench_read("frankfurt-n2", url)["gbps"]
    assert again > 2 * rate, f"after the reset {again} Gbit/s at the node, slowed {rate}"


def test_a_node_link_down_cuts_the_node_only(fed: dict[str, Any], links_reset: None) -> None:
    cache = fed["sites"]["frankfurt"]["caches"]["xcache"].removeprefix("root://")
    host, port = cache.rsplit(":", 1)
    probe = f"import socket; socket.create_connection(({host!r}, {int(port)}), timeout=3).close()"
    ok(sh("afkit federation link frankfurt-n3 --down"))
    assert in_node("frankfurt-n3", sys.executable, "-c", probe).returncode != 0
    ok(in_node("frankfurt-n1", sys.executable, "-c", probe))
    ok(sh("afkit federation link frankfurt-n3 --reset"))
    ok(in_node("frankfurt-n3", sys.executable, "-c", probe))


@pytest.fixture
def nodes_campaign(bench_sif: Path) -> Iterator[tuple[Path, str]]:
    """The federation campaign cut down to a read benchmark through frankfurt's XCache with the
    nodes sweep [1, 3], frankfurt's jobs on its client nodes (node_netns)."""
    sweep = {"scenario": ["xcache"], "nodes": [1, 3], "block_size": ["1m"]}
    bench = {"name": "read", "type": "read", "payload": "afkit-bench", "sites": ["frankfurt"],
             "datasets": ["gsi-data"], "sweep": sweep}  # fmt: skip
    with federation_work(bench_sif, "fed-nodes", [bench]) as (cfile, prefix):
        raw = yaml.safe_load(cfile.read_text(encoding="utf-8"))
        frankfurt = raw["sites"]["frankfurt"]
        del frankfurt["netns"]
        frankfurt["node_netns"] = NODES
        cfile.write_text(yaml.safe_dump(raw), encoding="utf-8")
        yield cfile, prefix


def test_a_campaign_runs_each_wave_of_a_read_nodes_sweep_on_the_nodes_together(
    nodes_campaign: tuple[Path, str],
) -> None:
    cfile, _prefix = nodes_campaign
    proc = subprocess.run(shlex.split("afkit campaign run C.yaml"), cwd=cfile.parent, capture_output=True,
                          text=True, timeout=600, check=False, env={**os.environ, **FED_XRD_ENV})  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    results = Path(ok(itsupport.afkit("campaign", "results", str(cfile))).strip())
    with (results / "aggregate" / "jobs.csv").open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 1 + 3 and {r["status"] for r in rows} == {"ok"}, [r["error"] for r in rows]
    for r in rows:
        index = int(r["id"].rsplit(".i", 1)[1])
        assert r["wn_address"] == f"10.77.2.{21 + index}", (r["id"], r["wn_address"])
        assert r["executor"] == "local"
    skews = wave_skews(read_jobs(results / "aggregate" / "jobs.csv"))
    assert [s["wave_size"] for s in skews] == [3] and all(s["within_goal"] for s in skews), skews
