"""The coordinated-caches study (kit-htda) in the testbed, as root, at a tiny scale: two file servers
made as network namespaces behind tbf-shaped veth links with a real XRootD origin each, the node's
own disk, paced readers, a real XCache on the node for Figure 6; every claim judged but the RAID's
(pass or fail: the verdicts of a run beside other tests are not asserted), and everything the run
made taken away again, also after Ctrl-C."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from itsupport import processes_of
from waitsupport import interrupt_when

from afkit.storage import daemon
from afkit.storage.scenarios import entry_port, get_scenario

pytestmark = pytest.mark.testbed

CLAIMS = {
    "network-plateau",
    "starved-cpu-falls",
    "fast-stall-10x",
    "ssd-cpu-high",
    "raid-stall",
    "cache-speedup",
}
# the tiny scale (as the first test's command): the slow link holds 4 readers, the fast one 12 (8
# of them background), so both stall within the sweep; 6 jobs of 1 MB at once need more than the slow link
TINY = ("--set clients=[1,2,4,6,8] --set point_s=2 --set background=8 --set fast_mbit=48 --set file_mb=1 "
        "--set cache_jobs=6 --set cache_file_mb=1 --set cache_repetitions=1")  # fmt: skip
PLACE = Path("/var/lib/afkit/study/kit-htda")


@pytest.fixture
def workdir() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="afkit-kit-", dir="/var/tmp"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def run(line: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        shlex.split(line), cwd=cwd, capture_output=True, text=True, timeout=600, check=False
    )


def left_behind() -> list[str]:
    """Namespaces, links, daemons (the origins, the cache) and files of the study still there."""
    ns = [p.name for p in Path("/run/netns").glob("afkit-htda-*")] if Path("/run/netns").is_dir() else []
    shown = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, check=True).stdout
    links = [ln for ln in shown.splitlines() if ": afk" in ln]
    procs = [" ".join(p.info["cmdline"] or []) for p in psutil.process_iter(["cmdline"])
             if str(PLACE) in " ".join(p.info["cmdline"] or [])]  # fmt: skip
    return ns + links + procs + ([str(PLACE)] if PLACE.exists() else [])


def test_kit_htda_runs_its_file_servers_behind_shaped_links_and_judges_every_claim(workdir: Path) -> None:
    """docs/studies.md's `afkit study run kit-htda` in the box, tiny."""
    proc = run("afkit study run kit-htda --set clients=[1,2,4,6,8] --set point_s=2 --set background=8 --set fast_mbit=48 --set file_mb=1 --set cache_jobs=6 --set cache_file_mb=1 --set cache_repetitions=1", workdir)  # fmt: skip  # noqa: E501
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "point 15/15: ssd, 8 processes" in proc.stderr  # progress per point
    page = workdir / proc.stdout.strip().splitlines()[-1]
    assert page == workdir / "results/study-kit-htda-v1/study/index.html"
    verdicts = json.loads(page.with_name("verdicts.json").read_text())
    statuses = {c["id"]: c["status"] for c in verdicts["claims"]}
    assert set(statuses) == CLAIMS
    assert statuses.pop("raid-stall") == "not judgeable"
    assert set(statuses.values()) <= {"pass", "fail"}, verdicts["claims"]  # every other claim judged here
    data = page.parent.parent / "data"
    points = [json.loads(line) for line in (data / "points.jsonl").read_text().splitlines()]
    assert [(p["source"], p["clients"]) for p in points] == [
        (s, n) for s in ("slow", "fast", "ssd") for n in (1, 2, 4, 6, 8)
    ]
    assert all(p["errors"] == 0 for p in points)
    slow = {p["clients"]: p for p in points if p["source"] == "slow"}
    # the shaped link is the limit: 8 readers demand 4 MB/s of a 16 Mbit/s (2 MB/s) link
    assert 1.2 < slow[8]["rate_MBps"] < 2.3 and slow[8]["share"] < 0.6
    assert slow[1]["share"] > 0.9  # one reader gets its demand
    jobs = [json.loads(line) for line in (data / "jobs.jsonl").read_text().splitlines()]
    assert sorted({j["cache"] for j in jobs}) == ["disabled", "enabled"] and len(jobs) == 12
    for name in ("fig1.png", "fig6.png"):
        assert (page.parent / name).stat().st_size > 1000, name
    assert left_behind() == []
    assert not daemon.port_open(entry_port(get_scenario("xcache"), 14490 + 200))  # the node's XCache
    assert run("afkit study page kit-htda", workdir).returncode == 0  # the page again from the records


def test_kit_htda_at_your_node_reads_the_named_local_disk_and_takes_its_files_away(workdir: Path) -> None:
    """A sites file as docs/studies.md shows it, here with one local source (a directory the test
    made): the network claims and the cache's are not judgeable, saying why."""
    disk = workdir / "scratch"
    disk.mkdir()
    (disk / "mine.txt").write_text("the user's own file\n")
    (workdir / "my-node.yaml").write_text(
        f"params:\n  sources:\n    ssd: {{dir: {disk}}}\n  clients: [1, 2]\n  point_s: 2\n  file_mb: 1\n"
    )
    proc = run("afkit study run kit-htda --sites my-node.yaml", workdir)
    assert proc.returncode == 0, proc.stderr[-3000:]
    page = workdir / proc.stdout.strip().splitlines()[-1]
    claims = {c["id"]: c for c in json.loads(page.with_name("verdicts.json").read_text())["claims"]}
    assert claims["ssd-cpu-high"]["status"] in {"pass", "fail"}
    assert claims["network-plateau"]["status"] == "not judgeable"
    assert "no points of source 'slow'" in claims["network-plateau"]["measured"]
    assert "not run with and without the cache" in claims["cache-speedup"]["measured"]
    assert os.listdir(disk) == ["mine.txt"]  # afkit's files gone, the user's kept
    assert left_behind() == []


@pytest.mark.parametrize(
    ("sig", "group"), [(signal.SIGINT, True), (signal.SIGTERM, False)], ids=["ctrl-c", "kill"]
)
def test_an_interrupted_run_takes_away_its_namespaces_links_and_files(
    workdir: Path, sig: signal.Signals, group: bool
) -> None:
    """Ctrl-C (SIGINT to the process group, as a terminal sends it) in the middle of Figure 1's
    points: exit 130, nothing of the run left."""
    log = workdir / "stderr.txt"
    line = f"afkit study run kit-htda {TINY} --set port=14590"
    code = interrupt_when(shlex.split(line), workdir, log, "point 3/15:", "the third point", sig, group=group)
    assert code == 130, log.read_text()[-2000:]
    assert processes_of(workdir) == []  # no reader, generator or image of the run left
    assert left_behind() == []
