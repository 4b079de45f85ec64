"""The Apptainer definition: bootstrap from --base, the environment quoted, labels, %test."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from afkit.errors import NotFoundError, UsageError
from afkit.image import profile, render
from afkit.image.model import EnvVar, Resolution, Unit


def _res() -> Resolution:
    return Resolution(
        profile="alice",
        repository="alice.cern.ch",
        arch="el9-x86_64",
        tag="AliPhysics/vAN-1",
        items=["AliPhysics/vAN-1"],
        units=[Unit("el9-x86_64/Packages/ROOT/v6", "ROOT/v6")],
        env=[
            EnvVar("ROOTSYS", "/cvmfs/alice.cern.ch/el9-x86_64/Packages/ROOT/v6"),
            EnvVar("PATH", "/cvmfs/alice.cern.ch/el9-x86_64/Packages/ROOT/v6/bin", inherit=True),
            EnvVar("TRICKY", "it's $HOME `x`"),
        ],
    )


def _def(tmp_path: Path, base: str) -> str:
    prof = profile.load("alice")
    return render.render(
        prof, _res(), render.parse_base(base), tmp_path / "rootfs", "abc123", "2026-01-01T00:00:00Z"
    )


def test_docker_base(tmp_path: Path) -> None:
    text = _def(tmp_path, "docker://almalinux:9")
    assert "Bootstrap: docker\nFrom: almalinux:9\n" in text
    assert "org.afkit.tag AliPhysics/vAN-1" in text and "org.afkit.closure-sha256 abc123" in text
    assert "org.afkit.profile alice" in text and "org.afkit.version" in text
    assert f"cp -a {tmp_path}/rootfs/. " in text
    assert 'exec "$@"' in text


def test_localimage_and_debootstrap(tmp_path: Path) -> None:
    sif = tmp_path / "base.sif"
    sif.write_text("")
    assert f"Bootstrap: localimage\nFrom: {sif}\n" in _def(tmp_path, f"localimage:{sif}")
    text = _def(tmp_path, "debootstrap:trixie")
    assert "Bootstrap: debootstrap\nOSVersion: trixie\nMirrorURL: http" in text


@pytest.mark.parametrize(
    "bad", ["almalinux:9", "docker://a b", "debootstrap:Tri xie", "x;y", "localimage:$(id)"]
)
def test_bad_base(bad: str) -> None:
    with pytest.raises(UsageError):
        render.parse_base(bad)


def test_missing_local_base(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError):
        render.parse_base(f"localimage:{tmp_path}/nope.sif")


def test_base_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prof = profile.load("alice")
    monkeypatch.delenv("AFKIT_BASE_IMAGE", raising=False)
    assert render.choose_base(prof, "el7-x86_64", None).from_ == "registry.cern.ch/alisw/slc7-builder:latest"
    monkeypatch.setenv("AFKIT_BASE_IMAGE", "docker://debian:trixie")
    assert render.choose_base(prof, "el9-x86_64", None).from_ == "debian:trixie"
    assert render.choose_base(prof, "el9-x86_64", "docker://almalinux:9.4").from_ == "almalinux:9.4"


def _section(text: str, name: str) -> str:
    body = text.split(f"%{name}\n", 1)[1]
    return body.split("\n%", 1)[0]


def test_environment_section_is_valid_shell(tmp_path: Path) -> None:
    """Source %environment in sh and read the values back: quoting survives anything."""
    env_section = _section(_def(tmp_path, "docker://almalinux:9"), "environment")
    script = env_section + '\nprintf "%s\\n" "$ROOTSYS" "$PATH" "$TRICKY"\n'
    out = subprocess.run(
        ["sh", "-c", script], env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out[0] == "/cvmfs/alice.cern.ch/el9-x86_64/Packages/ROOT/v6"
    assert out[1] == "/cvmfs/alice.cern.ch/el9-x86_64/Packages/ROOT/v6/bin:/usr/bin:/bin"
    assert out[2] == "it's $HOME `x`"


def test_test_section_checks_the_environment(tmp_path: Path) -> None:
    """%test passes with the environment set and fails without it."""
    text = _def(tmp_path, "docker://almalinux:9")
    env_section, test_section = _section(text, "environment"), _section(text, "test")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "root-config").write_text("#!/bin/sh\necho 6.32/06\n")
    (bin_dir / "root-config").chmod(0o755)
    base_env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "BASEDIR": "x", "LOADEDMODULES": "y"}
    ok = subprocess.run(
        ["sh", "-c", env_section + test_section], env=base_env, capture_output=True, text=True
    )
    assert ok.returncode == 0, ok.stderr
    bad = subprocess.run(["sh", "-c", test_section], env=base_env, capture_output=True, text=True)
    assert bad.returncode != 0 and "ROOTSYS is not set as built" in bad.stderr


def test_test_section_skips_the_proofs_the_validator_ran_itself(tmp_path: Path) -> None:
    """%test runs the proofs (apptainer test); with AFKIT_TEST_PROOFS_CHECKED=1 (the validator,
    which ran them as checks of their own) only the environment checks."""
    text = _def(tmp_path, "docker://almalinux:9")
    env_section, test_section = _section(text, "environment"), _section(text, "test")
    base_env = {"PATH": "/usr/bin:/bin", "BASEDIR": "x", "LOADEDMODULES": "y"}  # no root-config
    script = env_section + test_section
    proofs = subprocess.run(["sh", "-c", script], env=base_env, capture_output=True, text=True)
    assert proofs.returncode != 0 and "'root-config' failed" in proofs.stderr
    checked = {**base_env, "AFKIT_TEST_PROOFS_CHECKED": "1"}
    env_only = subprocess.run(["sh", "-c", script], env=checked, capture_output=True, text=True)
    assert env_only.returncode == 0, env_only.stderr
