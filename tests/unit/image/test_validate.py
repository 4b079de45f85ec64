"""Validation logic without Apptainer: environment comparison, ELF report parsing, JUnit."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

from afkit.errors import last_lines
from afkit.image import profile, validate
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


class HostRunner:
    """Runs the validator's commands on this host (its /etc/os-release, its libraries)."""

    image = Path("/img.sif")

    def run(self, *cmd: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(cmd), capture_output=True, text=True, check=False)


def _req(item: str, **kw: Any) -> profile.BaseRequirement:
    packages = {"rhel": "afkit-el-pkg", "debian": "afkit-deb-pkg"}
    if item.startswith("/"):
        return profile.BaseRequirement("for a test", packages, path=item, **kw)
    return profile.BaseRequirement("for a test", packages, library=item, **kw)


def test_a_base_lacking_a_library_is_named_with_its_package(tmp_path: Path) -> None:
    runner: Any = HostRunner()
    checks, hints = validate.check_base(runner, [_req("libafkit-nowhere.so.9"), _req("libc.so.6")])
    missing, present = checks
    assert not missing.ok and present.ok
    assert missing.message.startswith("the base image lacks libafkit-nowhere.so.9 (for a test): install ")
    assert "afkit-deb-pkg (debian)" in missing.message  # this host is Debian
    assert hints == {"libafkit-nowhere.so.9": "install afkit-deb-pkg (debian)"}


def test_a_base_requirement_holds_only_where_it_applies(tmp_path: Path) -> None:
    runner: Any = HostRunner()
    (tmp_path / "here").write_text("")
    reqs = [
        _req(str(tmp_path / "absent.h"), applies_if=str(tmp_path / "no-libCling.so")),
        _req(str(tmp_path / "absent.h"), applies_if=str(tmp_path / "here")),
        _req(str(tmp_path / "here")),
    ]
    skipped, failed, ok = validate.check_base(runner, reqs)[0]
    assert skipped.ok and skipped.skipped
    assert not failed.ok and ok.ok


class ProofRunner:
    """'apptainer exec' of an image whose ROOT interpreter is dead; records the commands."""

    image = Path("/img.sif")

    def __init__(self) -> None:
        self.commands: list[tuple[str, ...]] = []

    def run(self, *cmd: str) -> subprocess.CompletedProcess[str]:
        self.commands.append(cmd)
        if cmd[0] == "root.exe":
            err = (
                "ERROR in cling::CIFactory::createCI(): cannot extract standard library include paths!\n"
                "Invoking:\n  LC_ALL=C c++ -xc++ -E -v /dev/null\n"
                "input_line_1:1:10: fatal error: 'new' file not found\n"
            )
            return subprocess.CompletedProcess(cmd, 1, "", err)
        return subprocess.CompletedProcess(cmd, 0, "afkit-proof: events 2421 entries", "")


MACRO = profile.Proof(
    "root-macro",
    ("root.exe", "-b", "-q", "-l", 'read_tree.C("{file}")'),
    expect="afkit-proof",
    applies_if="/x",
)


def test_a_dead_interpreter_fails_quoting_the_first_cling_error() -> None:
    runner: Any = ProofRunner()
    (check,) = validate.check_proofs(runner, [MACRO])
    assert not check.ok
    first = check.message.splitlines()[0]
    assert first == (
        "ROOT's interpreter failed: ERROR in cling::CIFactory::createCI(): cannot extract standard library "
        "include paths!"
    )
    assert ("root.exe", "-b", "-q", "-l", 'read_tree.C("/.afkit/proof/HZZ.root")') in runner.commands


def test_reading_proofs_also_read_every_url() -> None:
    runner: Any = ProofRunner()
    reader = profile.Proof("compiled-reader", ("sh", "compile_reader.sh", "{file}"), expect="afkit-proof")
    version = profile.Proof("root-config", ("root-config", "--version"))
    checks = validate.check_proofs(runner, [reader, version], ["root://o//f.root", "root://c//f.root"])
    names = ["compiled-reader", "compiled-reader root://o//f.root", "compiled-reader root://c//f.root"]
    assert [c.name for c in checks] == [*names, "root-config"]
    assert all(c.ok for c in checks)
    assert ("sh", "compile_reader.sh", "root://c//f.root") in runner.commands


UNKNOWN = "Error in <TTree::SetBranchAddress>: unknown branch -> NMuon"
NO_BRANCH = "afkit-proof: no Int_t branch NMuon"


class FailingReader:
    """'apptainer exec' of a reading proof that fails after a long first line (ROOT echoes the
    macro call with its URL) and two short ones."""

    image = Path("/img.sif")

    def run(self, *cmd: str) -> subprocess.CompletedProcess[str]:
        if cmd[0] == "sh":  # command -v
            return subprocess.CompletedProcess(cmd, 0, "", "")
        out = 'Processing /.afkit/proof/read_tree.C("root://' + "x" * 280 + '//f.root")...\n'
        return subprocess.CompletedProcess(cmd, 1, out, f"{UNKNOWN}\n{NO_BRANCH}\n")


def test_a_failing_proof_quotes_whole_lines_of_its_output() -> None:
    """The message ends with the last lines of the output, cut between lines, not inside one."""
    runner: Any = FailingReader()
    (check,) = validate.check_proofs(runner, [MACRO])
    assert not check.ok
    said = check.message.split(" exited 1: ", 1)[1]
    assert said == f"{UNKNOWN}\n{NO_BRANCH}"


def test_a_last_line_longer_than_the_limit_keeps_its_end() -> None:
    assert last_lines("first\n" + "a" * 50 + "b" * 300, 300) == "..." + "b" * 297
    assert last_lines("", 300) == ""


class NoCompilerRunner(ProofRunner):
    """The image of a tag whose toolchain and base have no C++ compiler: no ``c++`` on its PATH."""

    def run(self, *cmd: str) -> subprocess.CompletedProcess[str]:
        if cmd == ("sh", "-c", "command -v c++"):
            self.commands.append(cmd)
            return subprocess.CompletedProcess(cmd, 127, "", "")
        return super().run(*cmd)


NO_CXX = "no `c++` on PATH: the tag's toolchain or the base must provide a compiler and C++ headers"


def test_cling_without_the_standard_library_names_the_missing_compiler() -> None:
    (check,) = validate.check_proofs(NoCompilerRunner(), [MACRO])
    assert not check.ok
    assert check.message.splitlines()[1] == NO_CXX


def test_cling_with_a_compiler_that_gives_no_headers_names_it() -> None:
    (check,) = validate.check_proofs(ProofRunner(), [MACRO])  # `command -v c++` succeeds: there is one
    cause = check.message.splitlines()[1]
    assert cause.startswith("`c++` on PATH (") and cause.endswith(
        ") gave cling no C++ standard library include paths: the tag's toolchain or the base must provide "
        "a compiler and C++ headers"
    )


def test_the_validation_hint_gives_the_compiler_cause(monkeypatch: Any, tmp_path: Path) -> None:
    import pytest

    from afkit.errors import InvalidError

    image = tmp_path / "img.sif"
    image.write_bytes(b"")
    monkeypatch.setattr(validate, "Runner", lambda *_: NoCompilerRunner())
    info = {"profile": "alice", "arch": "el9-x86_64", "env": []}
    monkeypatch.setattr(validate, "read_info", lambda _: info)
    monkeypatch.setattr(validate, "check_env", lambda *_: [])
    monkeypatch.setattr(validate, "check_base", lambda *_: ([], {}))
    monkeypatch.setattr(validate, "check_elf", lambda *_: [])
    monkeypatch.setattr(validate, "check_testscript", lambda _: validate.Check("test", "%test", True))
    with pytest.raises(InvalidError) as err:
        validate.validate(image, None, None, runtime=object())  # type: ignore[arg-type]  # alice's proofs
    assert err.value.hint == f"{NO_CXX}; see the lines above"
