"""The build pipeline against a fake apptainer: interrupted or failed builds leave no SIF behind."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from waitsupport import wait_until

from afkit.errors import ExitCode

TAG = "AliPhysics/vAN-20201018_ROOT6-1"
NAME = "AliPhysics_vAN-20201018_ROOT6-1"

FAKE = """#!/bin/bash
# A stand-in for apptainer: 'build' writes a partial target, then behaves as MODE says.
set -u
[[ $1 == build ]] || exit 99
target=${@: -2:1}
printf 'partial' >"$target"
echo "$*" >"$AFKIT_FAKE_DIR/args"
case $AFKIT_FAKE_MODE in
  fail) exit 1 ;;
  # hang: a build that runs until it is interrupted (the test waits for 'started', not for a time)
  hang) trap 'exit 130' INT; touch "$AFKIT_FAKE_DIR/started"; while :; do sleep 0.1; done ;;
  ok) exit 0 ;;
esac
"""


@pytest.fixture
def fake(tmp_path: Path) -> dict[str, str]:
    bindir = tmp_path / "fakebin"
    bindir.mkdir()
    script = bindir / "apptainer"
    script.write_text(FAKE)
    script.chmod(0o755)
    base = tmp_path / "base"
    (base / "bin").mkdir(parents=True)
    return {"AFKIT_APPTAINER": str(script), "AFKIT_FAKE_DIR": str(tmp_path), "BASE": str(base)}


def _start(
    on_fixture: Path, fake: dict[str, str], out: Path, mode: str, *extra: str
) -> subprocess.Popen[str]:
    env = {**os.environ, **fake, "AFKIT_FAKE_MODE": mode, "AFKIT_CVMFS_ROOT": str(on_fixture.parent)}
    cmd = [sys.executable, "-m", "afkit", "image", "build", "--profile", "alice", "-t", TAG]
    cmd += ["-o", str(out), "-y", "--base", f"localimage:{fake['BASE']}", *extra]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_failed_build_leaves_no_sif(on_fixture: Path, fake: dict[str, str], tmp_path: Path) -> None:
    out = tmp_path / "work"
    proc = _start(on_fixture, fake, out, "fail", "--compression", "zstd")
    _stdout, err = proc.communicate(timeout=120)
    assert proc.returncode == ExitCode.FAILURE, err
    assert "apptainer build failed" in err
    assert not (out / f"{NAME}.sif").exists() and not (out / f".{NAME}.sif.partial").exists()
    assert (out / f"{NAME}.def").is_file()  # kept for a retry
    args = (tmp_path / "args").read_text()
    assert "--notest" in args and "--mksquashfs-args -comp zstd" in args


def test_interrupted_build_leaves_no_sif(on_fixture: Path, fake: dict[str, str], tmp_path: Path) -> None:
    out = tmp_path / "work"
    proc = _start(on_fixture, fake, out, "hang")
    wait_until((tmp_path / "started").exists, 60, what="the fake build to run", proc=proc)
    proc.send_signal(signal.SIGINT)
    _stdout, err = proc.communicate(timeout=120)
    assert proc.returncode == ExitCode.INTERRUPTED, err
    assert not (out / f"{NAME}.sif").exists() and not (out / f".{NAME}.sif.partial").exists()
    index = json.loads((out / ".data" / "index.json").read_text())
    assert len(index["files"]) >= 30  # the store is complete and usable
    assert list((out / ".data" / "tmp").iterdir()) == []


def test_build_without_validation_writes_sif_and_manifest(
    on_fixture: Path, fake: dict[str, str], tmp_path: Path
) -> None:
    out = tmp_path / "work"
    proc = _start(on_fixture, fake, out, "ok", "--no-validate", "--name", "mytag")
    stdout, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    sif = out / "mytag.sif"
    assert stdout.strip().splitlines()[-1] == str(sif)
    manifest = json.loads((out / "mytag.json").read_text())
    assert manifest["sif"] == "mytag.sif" and manifest["validated"] is None
    assert manifest["tag"] == TAG and manifest["arch"] == "el9-x86_64"
    assert manifest["closure_files"] == manifest["stage"]["files"] > 0
    import hashlib

    assert manifest["sif_sha256"] == hashlib.sha256(sif.read_bytes()).hexdigest()
    info = json.loads((out / "rootfs" / ".afkit" / "image.json").read_text())
    assert info["tag"] == TAG and any(e["path"].endswith("bin/aliphysics-check") for e in info["elf"])
    definition = (out / "mytag.def").read_text()
    assert f"From: {fake['BASE']}" in definition and "org.afkit.tag " + TAG in definition


def test_not_enough_space_stops_before_staging(
    on_fixture: Path, fake: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    from afkit.errors import PrereqError
    from afkit.image.build import build

    monkeypatch.setenv("AFKIT_APPTAINER", fake["AFKIT_APPTAINER"])
    monkeypatch.setattr(shutil, "disk_usage", lambda _p: shutil._ntuple_diskusage(1 << 30, 1 << 30, 4096))  # type: ignore[attr-defined]
    out = tmp_path / "work"
    with pytest.raises(PrereqError) as exc:
        build(
            profile_name="alice", tag_text=TAG, output=out, yes=True, base_spec=f"localimage:{fake['BASE']}"
        )
    assert exc.value.code == ExitCode.PREREQ and "have 0.0 MiB" in str(exc.value)
    assert not (out / "rootfs").exists() and not (out / "rootfs.partial").exists()


def test_an_interrupt_while_the_build_starts_stops_it(
    fake: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C (SIGINT) that arrives as apptainer build is being started, before afkit waits for
    it, stops the build (its own session: no terminal's Ctrl-C reaches it) and removes its
    partial target, as one that arrives later does."""
    from afkit.image import apptainer, build

    real_popen = subprocess.Popen
    children: list[subprocess.Popen[bytes]] = []

    def popen_then_interrupt(*args: object, **kwargs: object) -> subprocess.Popen[bytes]:
        child = real_popen(*args, **kwargs)  # type: ignore[call-overload]
        children.append(child)
        os.kill(os.getpid(), signal.SIGINT)
        return child

    for key, value in {**fake, "AFKIT_FAKE_MODE": "hang"}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(build.subprocess, "Popen", popen_then_interrupt)
    target, definition = tmp_path / "out.sif", tmp_path / "out.def"
    definition.write_text("Bootstrap: localimage\n")
    try:
        with pytest.raises(KeyboardInterrupt):
            build.run_build(apptainer.Runtime(fake["AFKIT_APPTAINER"], "root"), definition, target, tmp_path,
                            None)  # fmt: skip
        [child] = children
        assert child.poll() is not None and not apptainer._group(child.pid)  # the build is stopped
        assert not target.exists() and not (tmp_path / ".tmp").exists()
    finally:
        for child in children:  # a build left running by a failure above
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGKILL)


def test_a_base_not_understood_is_refused_before_the_tag_is_resolved(
    on_fixture: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A wrong --base is a usage error (exit 2) whatever the tag: said before resolving it, not
    after a resolution that may take long or fail on its own (here: a tag that does not exist)."""
    from afkit import cli

    out = tmp_path / "work"
    tag = "AliPhysics/vAN-20991231_ROOT6-1"
    args = ["image", "build", "--profile", "alice", "-t", tag, "-o", str(out), "-y"]
    assert cli.main([*args, "--base", "foo:bar"]) == ExitCode.USAGE
    assert "base image 'foo:bar' is not understood" in capsys.readouterr().err
    assert not out.exists()
    assert cli.main(args) == ExitCode.NOT_FOUND  # the same tag with the default base: not found
