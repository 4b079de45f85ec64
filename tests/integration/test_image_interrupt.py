"""Ctrl-C during a real image build (inside the testbed): nothing of Apptainer's is left behind.

afkit runs ``apptainer build`` with APPTAINER_TMPDIR=<work>/.tmp, where Apptainer makes its
``build-temp-*`` bundle (apptainer/apptainer internal/pkg/build/build.go). The build is
interrupted as a terminal's Ctrl-C does it (SIGINT to afkit's process group) once Apptainer's
temporary appears, as root and as the testbed's ordinary user (a --fakeroot build). Before
afkit stopped the whole build and removed what is left, both went wrong: as root a SIGINT before
Apptainer's handler is installed, or one that races its copy of the base into the bundle
("Could not remove bundle: … directory not empty"), left build-temp-* behind (3 runs of 5); as
the ordinary user the SIGINT reached only the outer apptainer, and the build in its user
namespace went on to "Build complete". The base holds many small files so that the build is
still copying when the interrupt lands.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_image_build import make_base
from waitsupport import wait_until

TAG = "AliPhysics/vAN-20201018_ROOT6-1"
MANY = 20000  # small files in the base (about a second of copying)


def _processes_naming(text: str) -> list[str]:
    """Command lines of the processes that name TEXT."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmdline:
            found.append(f"{entry.name}: {cmdline}")
    return found


@pytest.fixture(params=["root", "afkit"])
def top(request: pytest.FixtureRequest) -> Iterator[tuple[Path, list[str]]]:
    """A directory for the build and the command prefix of the user who builds there."""
    path = Path(tempfile.mkdtemp(prefix="afkit-interrupt-", dir="/tmp"))
    many = make_base(path / "base") / "usr" / "share" / "many"
    for i in range(MANY):
        sub = many / f"d{i % 100:02d}"
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"f{i}").write_bytes(b"afkit\n")
    prefix: list[str] = []
    if request.param != "root":
        user = pwd.getpwnam(request.param)
        for entry in [path, *path.rglob("*")]:
            os.lchown(entry, user.pw_uid, user.pw_gid)
        prefix = ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--init-groups"]
    try:
        yield path, prefix
    finally:
        shutil.rmtree(path)


def test_ctrl_c_leaves_no_apptainer_temporary(top: tuple[Path, list[str]]) -> None:
    path, prefix = top
    work = path / "work"
    cmd = [*prefix, "python3", "-m", "afkit", "image", "build", "--profile", "alice", "-t", TAG]
    cmd += ["-o", str(work), "--base", f"localimage:{path / 'base'}", "--no-validate"]
    env = {**os.environ, "HOME": str(path)}
    # its own process group, like a shell's job: the SIGINT below reaches it as Ctrl-C would
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=path, process_group=0
    )
    try:
        # mid-way: Apptainer has made its bundle (and starts copying the base into it)
        # (polled every 5 ms: the copy it must interrupt lasts about a second)
        wait_until(lambda: any(work.glob(".tmp/build-temp-*")), 300, 0.005,
                   what="Apptainer's build-temp-* bundle", proc=proc)  # fmt: skip
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C on afkit's terminal sends
        _out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, err[-3000:]
    assert "Build complete" not in err  # the interrupt stopped the build
    left = sorted(str(p.relative_to(work)) for p in work.rglob("*") if "build-temp-" in p.name)
    tmp = sorted(p.name for p in (work / ".tmp").iterdir()) if (work / ".tmp").exists() else []
    assert (left, tmp) == ([], []), err[-3000:]
    assert _processes_naming(str(work)) == []  # nothing of the build runs on
    assert not list(work.glob("*.sif*"))
