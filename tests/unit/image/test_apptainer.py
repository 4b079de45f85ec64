"""Which Apptainer and which privilege: root, --fakeroot, or a clear refusal (exit 3)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from afkit.errors import ExitCode, PrereqError
from afkit.image import apptainer, build, render
from afkit.storage.daemon import alive


def test_no_apptainer_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("AFKIT_APPTAINER", raising=False)
    with pytest.raises(PrereqError) as exc:
        apptainer.find_binary()
    assert exc.value.code == ExitCode.PREREQ and "apptainer" in str(exc.value)


def test_singularity_is_accepted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "singularity"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("AFKIT_APPTAINER", raising=False)
    assert apptainer.find_binary() == str(fake)


def test_root_builds_as_root(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(apptainer.os, "geteuid", lambda: 0)
    rt = apptainer.detect("/usr/bin/apptainer")
    assert rt.mode == "root" and rt.build_args() == []
    assert "as root" in capsys.readouterr().err


def test_user_without_userns_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(apptainer.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(
        apptainer.subprocess,
        "run",
        lambda *a, **k: subprocess.CompletedProcess(a, 1, "", "unshare: Operation not permitted"),
    )
    with pytest.raises(PrereqError) as exc:
        apptainer.detect("/usr/bin/apptainer")
    assert "--fakeroot cannot work" in str(exc.value) and "sudo" in (exc.value.hint or "")


def test_user_with_userns_uses_fakeroot(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(apptainer.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(
        apptainer.subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a, 0, "", "")
    )
    rt = apptainer.detect("/usr/bin/apptainer", say=False)
    assert rt.mode == "fakeroot" and rt.build_args() == ["--fakeroot"]


def _sandbox(tmp_path: Path) -> Path:
    base = tmp_path / "base"
    (base / "usr/bin").mkdir(parents=True)
    (base / "usr/bin/sh").write_text("")
    (base / "bin").symlink_to("usr/bin")
    return base


def test_a_fakeroot_build_refuses_a_base_directory_of_another_owner(tmp_path: Path) -> None:
    """apptainer build --fakeroot cannot copy a sandbox file of another owner ('FATAL: ... failed
    to Lchown ... for UID 65534': the namespace maps only the building user); say so before staging."""
    base = _sandbox(tmp_path)
    os.lchown(base / "bin", os.getuid() + 1, os.getgid())
    fakeroot = apptainer.Runtime("apptainer", "fakeroot")
    with pytest.raises(PrereqError) as exc:
        build.check_fakeroot_base(fakeroot, render.Base("localimage", str(base)))
    assert exc.value.code == ExitCode.PREREQ
    assert f"{base / 'bin'}" in str(exc.value) and f"uid {os.getuid() + 1}" in str(exc.value)
    assert "sudo" in (exc.value.hint or "")
    # as root every owner can be copied: nothing to check
    as_root = apptainer.Runtime("apptainer", "root")
    assert build.check_fakeroot_base(as_root, render.Base("localimage", str(base))) == 0


def test_a_fakeroot_build_takes_a_base_directory_of_its_own(tmp_path: Path) -> None:
    fakeroot = apptainer.Runtime("apptainer", "fakeroot")
    # base, usr, usr/bin, usr/bin/sh and the link bin: every entry checked, none refused
    assert build.check_fakeroot_base(fakeroot, render.Base("localimage", str(_sandbox(tmp_path)))) == 5
    assert build.check_fakeroot_base(fakeroot, render.Base("docker", "almalinux:9")) == 0  # no directory


def test_compression_args() -> None:
    assert apptainer.squashfs_args("zstd") == ["--mksquashfs-args", "-comp zstd"]
    assert apptainer.squashfs_args(None) == []


def test_cli_offers_the_engines_compressions() -> None:
    from afkit.image import cli

    assert cli.COMPRESSIONS == apptainer.COMPRESSIONS


def _only_singularity(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "singularity"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("AFKIT_APPTAINER", raising=False)


def test_exec_and_pull_fall_back_to_singularity(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _only_singularity(tmp_path, monkeypatch)
    assert apptainer.command_name() == "singularity"
    assert apptainer.exec_command("i.sif", ["true"])[:2] == ["singularity", "exec"]
    assert apptainer.pull_command("oras://r/a:b", Path("x.sif"))[:2] == ["singularity", "pull"]


def test_signing_commands_fall_back_to_singularity(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _only_singularity(tmp_path, monkeypatch)
    assert apptainer.sign_command("i.sif")[:2] == ["singularity", "sign"]
    assert apptainer.verify_command("i.sif")[:2] == ["singularity", "verify"]
    assert apptainer.key_import_command("k.asc")[:3] == ["singularity", "key", "import"]


def test_a_singularity_keyring_is_also_named_for_singularityce() -> None:
    assert apptainer.keysdir_env("/usr/bin/singularity", "/k") == {
        "APPTAINER_KEYSDIR": "/k",
        "SINGULARITY_SYPGPDIR": "/k",
    }
    assert apptainer.keysdir_env("/usr/bin/apptainer", "/k") == {"APPTAINER_KEYSDIR": "/k"}


def test_afkit_apptainer_names_the_binary_of_every_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _only_singularity(tmp_path, monkeypatch)
    monkeypatch.setenv("AFKIT_APPTAINER", "singularity")
    assert apptainer.exec_command("i.sif", ["true"], verb="test")[:2] == ["singularity", "test"]


def test_no_runtime_has_no_command_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("AFKIT_APPTAINER", raising=False)
    assert apptainer.command_name() is None


def test_exec_command_orders_options_binds_image_command() -> None:
    cmd = apptainer.exec_command(
        "/i.sif", ["python3", "x.py"], options=["--contain"], binds=["/a:/b:ro", "/c"], binary="apptainer"
    )
    assert cmd == [
        "apptainer", "exec", "--contain", "--bind", "/a:/b:ro", "--bind", "/c", "/i.sif", "python3", "x.py",
    ]  # fmt: skip


def test_build_command_has_notest_privilege_and_compression() -> None:
    rt = apptainer.Runtime("/usr/bin/apptainer", "fakeroot")
    cmd = rt.build_command(Path("/o/.x.sif.partial"), Path("/o/x.def"), "zstd")
    assert cmd == [
        "/usr/bin/apptainer", "build", "--notest", "--fakeroot", "--mksquashfs-args", "-comp zstd",
        "/o/.x.sif.partial", "/o/x.def",
    ]  # fmt: skip


def test_stop_group_stops_the_children_the_leader_does_not_signal() -> None:
    """Like apptainer's outer process under --fakeroot, the leader waits for a child; here both
    ignore SIGINT, so stop_group ends them with SIGKILL after the grace, and nothing runs on."""
    script = "trap '' INT; sleep 300 & child=$!; echo $child; wait $child"
    proc = subprocess.Popen(["bash", "-c", script], stdout=subprocess.PIPE, text=True, start_new_session=True)
    assert proc.stdout is not None
    child = int(proc.stdout.readline())
    assert apptainer.stop_group(proc, grace=0.5) == []
    assert proc.returncode is not None
    assert not alive(child)
