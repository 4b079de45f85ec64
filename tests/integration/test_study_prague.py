"""The disk-server study (prague-diskserver) in the testbed, as root, at a tiny scale: a real loop
device with ext4 made and tuned, an XRootD origin on it, the image's real ROOT recording its reads;
every claim judged (pass or fail: the verdicts of a run beside other tests are not asserted), and
everything the run made taken away again. Also at "your server": a sites file naming a directory on
a filesystem the test made."""

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

import pytest
from itsupport import processes_of
from waitsupport import interrupt_when

from afkit.bench import blockdev
from afkit.storage import daemon

pytestmark = pytest.mark.testbed

CLAIMS = {"tuned-reads-faster", "small-reads", "few-regions", "cache-fewer-reads"}


@pytest.fixture
def workdir() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="afkit-prague-", dir="/var/tmp"))  # on a disk, not the testbed's tmpfs
    yield d
    shutil.rmtree(d, ignore_errors=True)


def run(line: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        shlex.split(line), cwd=cwd, capture_output=True, text=True, timeout=600, check=False
    )


def loops_over(backing: Path) -> str:
    return subprocess.run(["losetup", "--list", "--noheadings", "--associated", str(backing)],
                          capture_output=True, text=True, check=False).stdout.strip()  # fmt: skip


def test_prague_diskserver_runs_on_a_loop_device_and_judges_every_claim(
    workdir: Path, alice_root_sif: Path
) -> None:
    """docs/studies.md's `afkit study run prague-diskserver` in the box (its image: build/alice-root.sif,
    which make demo links), tiny."""
    (workdir / "build").mkdir()
    (workdir / "build" / "alice-root.sif").symlink_to(alice_root_sif)
    proc = run("afkit study run prague-diskserver --set files=2 --set file_mb=16 --set pattern_mb=8", workdir)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().splitlines()[-1] == "results/study-prague-diskserver-v1/study/index.html"
    page = workdir / "results/study-prague-diskserver-v1/study/index.html"
    verdicts = json.loads((page.parent / "verdicts.json").read_text())
    statuses = {c["id"]: c["status"] for c in verdicts["claims"]}
    assert set(statuses) == CLAIMS
    assert set(statuses.values()) <= {"pass", "fail"}, verdicts["claims"]  # every claim judged here
    data = page.parent.parent / "data"
    runs = [json.loads(line) for line in (data / "runs.jsonl").read_text().splitlines()]
    setup = json.loads((data / "setup.json").read_text())
    # the default: the scheduler the kernel gave the new loop device, whatever this kernel offers
    assert setup["before"]["scheduler"] in setup["offered"]
    settings = {"default": (128, setup["before"]["scheduler"]), "tuned": (1024, "none")}
    assert len(runs) == 10  # the box's 5 repetitions of each setting
    for rep in range(5):  # both settings per repetition, the order alternating against drift
        pair = [r for r in runs if r["rep"] == rep]
        assert [r["setting"] for r in pair] == (
            ["default", "tuned"] if rep % 2 == 0 else ["tuned", "default"]
        )
        assert all((r["read_ahead_kb"], r["scheduler"]) == settings[r["setting"]] for r in pair)
    assert all(r["files"] == 2 for r in runs)
    # every timed read starts cold: none of the files' pages left in the page cache
    assert [r["cached_bytes_before"] for r in runs] == [0] * 10
    assert runs[0]["bytes"] == runs[1]["bytes"] >= 2 * 16 * 10**6  # both read every file whole
    pattern = json.loads((data / "pattern.json").read_text())
    assert pattern["nocache"]["summary"]["root"]["version"] == "6.40.00"
    reads = (data / "pattern-nocache.jsonl").read_text().splitlines()
    assert len(reads) == pattern["nocache"]["summary"]["trace"]["reads"] > 100
    assert all(json.loads(r)["offset"] + json.loads(r)["length"] <= pattern["size"] for r in reads)
    for name in ("table2.png", "fig10-nocache.png", "fig11-nocache.png", "fig12-cache.png"):
        assert (page.parent / name).stat().st_size > 1000, name
    # taken away: the mount, the loop device, its backing file; the origin is down
    backing = Path("/var/lib/afkit/study/prague-diskserver/disk/disk.img")
    assert not backing.exists() and not (backing.parent / "mnt").exists()
    assert "disk.img" not in subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
    assert (
        run("afkit study page prague-diskserver", workdir).returncode == 0
    )  # the page again from the records


def test_prague_diskserver_at_your_server_tunes_the_given_directorys_device_and_sets_it_back(
    workdir: Path,
) -> None:
    """A sites file as a server's admin writes it (docs/studies.md): params.data_dir on the server's
    filesystem (here one the test made on a loop device of its own), no image (no read pattern)."""
    workdir.chmod(0o755)  # the origin's daemon (user xrootd) reads the data below it
    # a box run's records in the same folder: the sites run leaves them as they are
    box = workdir / "results" / "study-prague-diskserver-v1" / "data"
    box.mkdir(parents=True)
    (box / "runs.jsonl").write_text('{"type": "run"}\n')
    box_before = (box / "runs.jsonl").stat().st_mtime_ns
    with blockdev.loop_filesystem(workdir / "own.img", 96 << 20, workdir / "srv") as name:
        queue = Path(f"/sys/block/{name}/queue")
        (queue / "read_ahead_kb").write_text("512")
        before = blockdev.read(queue)
        (workdir / "srv" / "xrootd").mkdir()
        (workdir / "my-server.yaml").write_text(
            f"params:\n  data_dir: {workdir / 'srv' / 'xrootd'}\n  files: 2\n  file_mb: 8\n  repetitions: 1\n"
            "  port: 14294\n"
        )
        proc = run("afkit study run prague-diskserver --sites my-server.yaml", workdir)
        assert proc.returncode == 0, proc.stderr[-3000:]
        verdicts = json.loads(
            (workdir / proc.stdout.strip().splitlines()[-1]).with_name("verdicts.json").read_text()
        )
        statuses = {c["id"]: (c["status"], c["measured"]) for c in verdicts["claims"]}
        assert statuses["tuned-reads-faster"][0] in {"pass", "fail"}
        assert statuses["small-reads"][0] == "not judgeable" and "--image" in statuses["small-reads"][1]
        assert blockdev.read(queue) == before  # set back
        assert os.listdir(workdir / "srv" / "xrootd") == []  # its data directory is gone again
        # keyed by the sites file: its own results folder, the box's untouched (content and mtime)
        assert proc.stdout.strip().splitlines()[-1].startswith("results/study-prague-diskserver-my-server-")
        assert (box / "runs.jsonl").read_text() == '{"type": "run"}\n'
        assert (box / "runs.jsonl").stat().st_mtime_ns == box_before
    assert not loops_over(workdir / "own.img")


@pytest.mark.parametrize(
    ("sig", "group"), [(signal.SIGINT, True), (signal.SIGTERM, False)], ids=["ctrl-c", "kill"]
)
def test_an_interrupted_run_sets_the_device_back_and_takes_away_what_it_made(
    workdir: Path, sig: signal.Signals, group: bool, alice_root_sif: Path
) -> None:
    """Ctrl-C (SIGINT to the process group, as a terminal sends it) in the middle of the timed runs:
    exit 130, the loop device, its mount and backing file gone, the origin down."""
    (workdir / "build").mkdir()
    (workdir / "build" / "alice-root.sif").symlink_to(alice_root_sif)
    log = workdir / "stderr.txt"
    line = "afkit study run prague-diskserver --set file_mb=64 --set repetitions=20 --set port=14394"
    code = interrupt_when(
        shlex.split(line), workdir, log, "run 3/40:", "the third timed run", sig, group=group
    )
    assert code == 130, log.read_text()[-2000:]
    assert processes_of(workdir) == []  # no reader, generator or image of the run left
    backing = Path("/var/lib/afkit/study/prague-diskserver/disk/disk.img")
    assert not backing.exists() and not loops_over(backing)
    assert "prague-diskserver" not in Path("/proc/self/mountinfo").read_text()
    assert not daemon.port_open(14394)


def test_a_run_that_would_fill_the_servers_filesystem_is_exit_3_before_anything_is_written(
    workdir: Path,
) -> None:
    """A small filesystem (a 96 MB loop device): 2 files of 64 MB do not fit. The dry run says so,
    the run refuses with both numbers; neither writes a file there or changes the device."""
    workdir.chmod(0o755)
    with blockdev.loop_filesystem(workdir / "small.img", 96 << 20, workdir / "srv") as name:
        queue = Path(f"/sys/block/{name}/queue")
        before = blockdev.read(queue)
        (workdir / "srv" / "xrootd").mkdir()
        (workdir / "my-server.yaml").write_text(
            f"params:\n  data_dir: {workdir / 'srv' / 'xrootd'}\n  files: 2\n  file_mb: 64\n  port: 14494\n"
        )
        dry = run("afkit study run prague-diskserver --sites my-server.yaml --dry-run", workdir)
        assert dry.returncode == 3 and "it would be refused" in dry.stdout, dry.stdout + dry.stderr
        assert f"{workdir / 'srv' / 'xrootd' / 'afkit-prague-diskserver'}" in dry.stdout
        proc = run("afkit study run prague-diskserver --sites my-server.yaml", workdir)
        assert proc.returncode == 3, proc.stderr[-2000:]
        assert "would not fit" in proc.stderr and "134 MB there" in proc.stderr  # 2 x 64 MiB
        assert "MB are free" in proc.stderr
        assert os.listdir(workdir / "srv" / "xrootd") == [] and not (workdir / "results").exists()
        assert blockdev.read(queue) == before
