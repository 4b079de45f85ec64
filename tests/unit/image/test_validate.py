"""Validation logic without Apptainer: environment comparison, ELF report parsing, JUnit."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

from afkit.image import validate
from afkit.image.model import EnvVar


class FakeRunner:
    """Answers like 'apptainer exec' would, from canned outputs."""

    def __init__(self, env: dict[str, str], ldso: str = "") -> None:
        self.env, self.ldso = env, ldso
        self.image = Path("/img.sif")

    def run(self, *cmd: str) -> subprocess.CompletedProcess[str]:
        if cmd[:2] == ("env", "-0"):
            out = "".join(f"{k}={v}\0" for k, v in self.env.items())
            return subprocess.CompletedProcess(cmd, 0, out, "")
        return subprocess.CompletedProcess(cmd, 0, self.ldso, "")


def test_env_checks() -> None:
    runner: Any = FakeRunner({"ROOTSYS": "/r", "PATH": "/r/bin:/usr/bin", "BASEDIR": "/b"})
    env = [EnvVar("ROOTSYS", "/r"), EnvVar("PATH", "/r/bin", inherit=True), EnvVar("ALICE_PHYSICS", "/a")]
    checks = {c.name: c for c in validate.check_env(runner, env, ["BASEDIR", "LOADEDMODULES"])}
    assert checks["ROOTSYS"].ok and checks["PATH"].ok and checks["BASEDIR"].ok
    assert not checks["ALICE_PHYSICS"].ok and "expected '/a'" in checks["ALICE_PHYSICS"].message
    assert not checks["LOADEDMODULES"].ok


def test_elf_missing_library_names_the_provider(tmp_path: Path) -> None:
    root = "/cvmfs/alice.cern.ch"
    ldso = (
        f"@@ {root}/el9/Packages/AliPhysics/v1/bin/check\n"
        "\tlibCore.so => not found\n\tlibc.so.6 => /lib64/libc.so.6 (0x1)\n"
        f"@@ {root}/el9/Packages/ROOT/v6/lib/libCore.so\n\tlibc.so.6 => /lib64/libc.so.6 (0x1)\n"
    )
    src = tmp_path / "alice.cern.ch"
    (src / "el9/Packages/ROOT/v6/lib").mkdir(parents=True)
    (src / "el9/Packages/ROOT/v6/lib/libCore.so").write_text("")
    info = {
        "repository": "alice.cern.ch",
        "elf": [
            {"path": "el9/Packages/AliPhysics/v1/bin/check"},
            {"path": "el9/Packages/ROOT/v6/lib/libCore.so"},
        ],
        "units": [
            {"rel": "el9/Packages/AliPhysics/v1", "label": "AliPhysics/v1"},
            {"rel": "el9/Packages/ROOT/v6", "label": "ROOT/v6"},
        ],
    }
    runner: Any = FakeRunner({}, ldso)
    checks = {c.name: c for c in validate.check_elf(runner, info, src, ["el9/Packages/*/*"])}
    assert checks["ROOT/v6"].ok
    bad = checks["AliPhysics/v1"]
    assert not bad.ok
    assert "needs libCore.so: provided by el9/Packages/ROOT/v6" in bad.message


def test_junit_report(tmp_path: Path) -> None:
    checks = [
        validate.Check("env", "ROOTSYS", True),
        validate.Check("proof", "aliroot", True, "not here", skipped=True),
        validate.Check("elf", "ROOT/v6", False, "lib/x needs libz.so: nowhere"),
    ]
    out = tmp_path / "r" / "validate.xml"
    validate.write_junit(out, Path("/x/img.sif"), checks)
    suite = ET.parse(out).getroot()
    assert suite.get("tests") == "3" and suite.get("failures") == "1" and suite.get("skipped") == "1"
    failure = suite.find("testcase[@name='ROOT/v6']/failure")
    assert failure is not None and "libz.so" in (failure.text or "")


def test_provider_without_the_repository() -> None:
    assert "not mounted" in validate.provider("libx.so", None, ["*/*"])
