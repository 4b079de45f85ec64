"""Real image builds from the CVMFS fixture with the real Apptainer (inside the testbed, as root).

A throwaway base (a sandbox directory with bash, coreutils and glibc copied from the testbed)
stands in for docker://almalinux:9, which no registry here can serve. Builds are few and small:
one alice tag through scripts/singularity_alice.sh, two adjacent dailies (incremental), one LCG
view, and one deliberately broken image for the validator.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import pytest

REPO = Path(__file__).resolve().parents[2]
CVMFS = Path(os.environ.get("AFKIT_CVMFS_ROOT", "/cvmfs"))
TOOLS = (
    "bash",
    "sh",
    "env",
    "printenv",
    "cat",
    "ls",
    "true",
    "dirname",
    "basename",
    "pwd",
    "id",
    "test",
    "readlink",
)
TAG = "AliPhysics/vAN-20201018_ROOT6-1"
NAME = "AliPhysics_vAN-20201018_ROOT6-1"
# README.md's and docs/image-builder.md's build, as written (run in the repository, as root)
DOC_BUILD = "sudo ./scripts/singularity_alice.sh -t AliPhysics/vAN-20201018_ROOT6-1 -o /scratch/images -y"
DOC_SIF = Path("/scratch/images/AliPhysics_vAN-20201018_ROOT6-1.sif")
# sudo resets the environment and PATH: the offline testbed's base (no registry serves
# docker://almalinux:9) and its afkit venv (not the checkout's .venv, made on the host) reach the
# script as a site keeps variables through sudo (docs/image-builder.md)
SUDOERS = Path("/etc/sudoers.d/afkit-docs-test")


def _ldd_libs(path: str) -> list[str]:
    out = subprocess.run(["ldd", path], capture_output=True, text=True, check=False).stdout
    return re.findall(r"(/\S+) \(0x", out)


def make_base(dest: Path) -> Path:
    """A minimal sandbox base image: the TOOLS and the libraries they need, no device nodes."""
    for sub in ("usr/bin", "etc", "tmp", "proc", "sys", "dev", "root", "home", "var/tmp", "cvmfs"):
        (dest / sub).mkdir(parents=True, exist_ok=True)
    (dest / "bin").symlink_to("usr/bin")
    libs: set[str] = set()
    for tool in TOOLS:
        found = shutil.which(tool)
        if found is None:
            continue
        shutil.copy2(os.path.realpath(found), dest / "usr/bin" / tool)
        libs.update(_ldd_libs(found))
    for lib in libs:
        target = dest / lib.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(os.path.realpath(lib), target)
    (dest / "etc/passwd").write_text("root:x:0:0:root:/root:/bin/bash\n")
    (dest / "etc/group").write_text("root:x:0:\n")
    return dest


def afkit(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["python3", "-m", "afkit", *args], capture_output=True, text=True, check=False, env=env, cwd=REPO
    )


def in_image(image: Path, *cmd: str, verb: str = "exec") -> subprocess.CompletedProcess[str]:
    """Run in the image contained, with a clean environment and no configured bind paths."""
    args = ["apptainer", verb, "--userns", "--contain", "--cleanenv", "--no-mount", "bind-paths", str(image)]
    return subprocess.run([*args, *cmd], capture_output=True, text=True, check=False)


def manifest(sif: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(sif.with_suffix(".json").read_text())
    return data


@pytest.fixture(scope="session")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_base(tmp_path_factory.mktemp("base") / "rootfs")


@pytest.fixture(scope="session")
def alice_image(base: Path) -> Iterator[tuple[Path, str, str]]:
    """The script's main use, as the docs write it (WORKDIR: /scratch/images, made here)."""
    assert not Path("/scratch").exists(), "/scratch is in the way (left by an earlier run?)"
    env = {**os.environ, "AFKIT_BASE_IMAGE": f"localimage:{base}", "AFKIT_VENV": "/opt/afkit/venv"}
    SUDOERS.write_text('Defaults env_keep += "AFKIT_BASE_IMAGE AFKIT_VENV"\n')
    SUDOERS.chmod(0o440)
    try:
        proc = subprocess.run(["bash", "-c", DOC_BUILD], cwd=REPO, capture_output=True, text=True,
                              check=False, env=env)  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-3000:]
        yield DOC_SIF, proc.stdout, proc.stderr
    finally:
        SUDOERS.unlink()
        shutil.rmtree("/scratch", ignore_errors=True)  # made by this build


def test_script_builds_sif_and_manifest(alice_image: tuple[Path, str, str]) -> None:
    sif, stdout, stderr = alice_image
    assert stdout.strip().splitlines()[-1] == str(sif)
    assert "as root" in stderr  # it said which privilege it uses
    data = manifest(sif)
    assert data["validated"] is True and data["tag"] == TAG and data["arch"] == "el9-x86_64"
    digest = subprocess.run(["sha256sum", str(sif)], capture_output=True, text=True, check=True).stdout
    assert data["sif_sha256"] == digest.split()[0]
    labels = {u["label"] for u in data["units"]}
    # reached only through the toolchain's indirections (Toolchain/GCC-v13.2.0 -> the newest
    # GCC-Toolchain revision, which loads grid-base-packages/default -> v1-1, which loads jq)
    assert {"GCC-Toolchain/v13.2.0-alice1-2", "grid-base-packages/v1-1", "jq/v1.6-3"} <= labels
    assert not list(sif.parent.glob(".*.partial"))
    report = ET.parse(sif.parent / f"{NAME}.validate.xml").getroot()
    assert report.get("failures") == "0" and int(report.get("tests") or 0) > 20


def test_the_documented_build_says_what_the_docs_show(alice_image: tuple[Path, str, str]) -> None:
    """docs/image-builder.md's quick start shows the build's first lines: the same as it prints."""
    _sif, _stdout, stderr = alice_image
    doc = (REPO / "docs/image-builder.md").read_text()
    shown = re.findall(r"^afkit: (?:\S+ resolves on|staging) .*$", doc, flags=re.MULTILINE)
    assert len(shown) == 2, shown
    for line in shown:
        assert line in stderr.splitlines(), f"docs show {line!r}; the build said:\n{stderr[:600]}"


def test_the_documented_image_runs_and_validates(alice_image: tuple[Path, str, str], tmp_path: Path) -> None:
    """docs/image-builder.md: apptainer run, afkit image validate IMAGE [--junit report.xml]."""
    run = subprocess.run(
        ["bash", "-c", "apptainer run /scratch/images/AliPhysics_vAN-20201018_ROOT6-1.sif root-config --version"],  # noqa: E501
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert run.returncode == 0 and run.stdout.strip() == "6.20/08", run.stderr
    for line in (
        "afkit image validate /scratch/images/AliPhysics_vAN-20201018_ROOT6-1.sif --junit report.xml",
        "afkit image validate /scratch/images/AliPhysics_vAN-20201018_ROOT6-1.sif",
    ):
        proc = subprocess.run(["bash", "-c", line], cwd=tmp_path, capture_output=True, text=True, check=False)
        assert proc.returncode == 0, f"{line}: {proc.stderr[-3000:]}"
    report = ET.parse(tmp_path / "report.xml").getroot()
    assert report.get("failures") == "0" and int(report.get("tests") or 0) > 20


def test_tags_lists_the_published_tags_matching_the_text() -> None:
    """docs/gitlab-ci.md, adding a tag: check it exists."""
    proc = subprocess.run(["bash", "-c", "afkit image tags --profile alice vAN-2025"], capture_output=True,
                          text=True, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "AliPhysics/vAN-20250401_ROOT6-1\tel9-x86_64",
        "AliPhysics/vAN-20250402_ROOT6-1\tel9-x86_64",
        "AliPhysics/vAN-20251120_O2-1\tel9-x86_64",
        "AliPhysics/vAN-20251126_ROOT6-1\tel9-x86_64",
    ]


def test_program_needing_five_packages_runs_contained(alice_image: tuple[Path, str, str]) -> None:
    sif = alice_image[0]
    proc = in_image(sif, "aliphysics-check")
    assert proc.returncode == 0, proc.stderr
    assert "all 7 libraries answered" in proc.stdout
    for pkg in ("AliPhysics", "AliRoot", "ROOT"):
        assert pkg in proc.stdout
    # the C++ runtime comes from the revision Toolchain/GCC-v13.2.0 points to, as under alienv
    assert "libgcctoolchain.so: GCC-Toolchain/v13.2.0-alice1-2" in proc.stdout


def test_environment_labels_and_runscript(alice_image: tuple[Path, str, str]) -> None:
    sif = alice_image[0]
    proc = in_image(sif, "printenv", "ROOTSYS", verb="run")
    assert proc.stdout.strip() == "/cvmfs/alice.cern.ch/el9-x86_64/Packages/ROOT/v6-20-08-alice1-1"
    assert in_image(sif, "root-config", "--version", verb="run").stdout.strip() == "6.20/08"
    inspect = subprocess.run(["apptainer", "inspect", "--json", str(sif)], capture_output=True, text=True)
    labels = json.loads(inspect.stdout)["data"]["attributes"]["labels"]
    assert labels["org.afkit.tag"] == TAG and labels["org.afkit.profile"] == "alice"
    assert labels["org.afkit.closure-sha256"] == manifest(sif)["closure_sha256"]


def test_image_does_not_see_host_cvmfs(alice_image: tuple[Path, str, str]) -> None:
    sif = alice_image[0]
    geant4 = "/cvmfs/alice.cern.ch/el9-x86_64/Packages/Geant4"
    assert (CVMFS / "alice.cern.ch/el9-x86_64/Packages/Geant4").is_dir()  # on the build host
    assert in_image(sif, "test", "-e", geant4).returncode == 1  # not in the image
    assert in_image(sif, "test", "-x", "/cvmfs/alice.cern.ch/bin/alienv").returncode == 0


def test_validator_names_the_missing_library_and_its_package(
    alice_image: tuple[Path, str, str], tmp_path: Path
) -> None:
    sif = alice_image[0]
    work = sif.parent
    good = afkit("image", "validate", str(sif), "--junit", str(tmp_path / "ok.xml"))
    assert good.returncode == 0, good.stderr
    broken_root = tmp_path / "rootfs"
    shutil.copytree(work / "rootfs", broken_root, symlinks=True)
    for lib in broken_root.glob("cvmfs/alice.cern.ch/el9-x86_64/Packages/jq/*/lib/libjq.so"):
        lib.unlink()
    definition = (work / f"{NAME}.def").read_text().replace(str(work / "rootfs"), str(broken_root))
    (tmp_path / "broken.def").write_text(definition)
    broken = tmp_path / "broken.sif"
    build = subprocess.run(
        ["apptainer", "build", "--notest", str(broken), str(tmp_path / "broken.def")],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "APPTAINER_TMPDIR": str(tmp_path)},
    )
    assert build.returncode == 0, build.stderr[-2000:]
    bad = afkit("image", "validate", str(broken), "--junit", str(tmp_path / "bad.xml"))
    assert bad.returncode == 6, bad.stderr
    assert "libjq.so: provided by el9-x86_64/Packages/jq/v1.6-3" in bad.stderr
    failures = ET.parse(tmp_path / "bad.xml").getroot().findall(".//failure")
    assert any("libjq.so" in (f.text or "") for f in failures)


def test_adjacent_daily_builds_incrementally(base: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    common = ["image", "build", "--profile", "alice", "-o", str(work), "-y", "--base", f"localimage:{base}"]
    first = afkit(*common, "-t", "AliPhysics/vAN-20250401_ROOT6-1", "--no-validate")
    assert first.returncode == 0, first.stderr[-3000:]
    one = manifest(Path(first.stdout.strip().splitlines()[-1]))["stage"]
    second = afkit(*common, "-t", "AliPhysics/vAN-20250402_ROOT6-1", "--compression", "zstd")
    assert second.returncode == 0, second.stderr[-3000:]
    sif = Path(second.stdout.strip().splitlines()[-1])
    two = manifest(sif)["stage"]
    assert one["reused_files"] == 0 and one["copied_files"] == one["files"]
    assert two["reused_files"] > 0 and two["copied_bytes"] < one["copied_bytes"] / 2
    assert not (work / "AliPhysics_vAN-20250401_ROOT6-1.sif").exists()  # -y cleaned the earlier build
    run = in_image(sif, "aliphysics-check")
    assert run.returncode == 0 and "vAN-20250402_ROOT6-1" in run.stdout


def test_lcg_view_image(base: Path, tmp_path: Path) -> None:
    work = tmp_path / "lcg"
    proc = afkit(
        "image", "build", "--profile", "lcg", "-t", "LCG_105", "-o", str(work), "--base", f"localimage:{base}"
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    sif = Path(proc.stdout.strip().splitlines()[-1])
    assert manifest(sif)["validated"] is True
    run = in_image(sif, "hepfixture-analysis")
    assert run.returncode == 0, run.stderr
    assert in_image(sif, "root-config", "--version").stdout.startswith("6.30")
    link = in_image(sif, "readlink", "/cvmfs/sft.cern.ch/lcg/views/LCG_105/x86_64-el9-gcc13-opt/bin/root.exe")
    # the view stays a farm of absolute links into the hashed installs, as lcgcmake writes it
    assert link.returncode == 0 and link.stdout.startswith("/cvmfs/sft.cern.ch/lcg/releases/ROOT/6.30.02-")
    rootsys = in_image(sif, "printenv", "ROOTSYS").stdout.strip()
    assert rootsys.startswith("/cvmfs/sft.cern.ch/lcg/releases/ROOT/6.30.02-")  # setup.sh's readlink
    # the view's generator runs; the package the view blacklists and the generator's other
    # platform are not in the image; both manifests are
    assert in_image(sif, "pythia8-fixture").returncode == 0
    releases = "/cvmfs/sft.cern.ch/lcg/releases"
    assert in_image(sif, "test", "-e", f"{releases}/hepmc3").returncode == 1
    platforms = in_image(sif, "bash", "-c", f"cd {releases}/MCGenerators/pythia8/*/ && ls").stdout.split()
    assert platforms == ["x86_64-el9-gcc13-opt"]
    manifests = set(in_image(sif, "ls", f"{releases}/LCG_105").stdout.split())
    assert {f"LCG_{kind}_x86_64-el9-gcc13-opt.txt" for kind in ("externals", "generators")} <= manifests


def test_unprivileged_user_builds_with_fakeroot() -> None:
    """The testbed's ordinary user 'afkit' builds through a root-mapped user namespace."""
    import pwd
    import tempfile

    user = pwd.getpwnam("afkit")
    top = Path(tempfile.mkdtemp(prefix="afkit-fakeroot-", dir="/tmp"))
    try:
        base = make_base(top / "base")
        for path in [top, *top.rglob("*")]:
            os.lchown(path, user.pw_uid, user.pw_gid)
        as_user = ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--init-groups"]
        env = {**os.environ, "HOME": str(top)}
        cmd = [*as_user, "python3", "-m", "afkit", "image", "build", "--profile", "alice"]
        cmd += [
            "-t",
            "AliPhysics/vAN-20201018_ROOT6-1",
            "-o",
            str(top / "work"),
            "--base",
            f"localimage:{base}",
        ]
        proc = subprocess.run([*cmd, "--no-validate"], capture_output=True, text=True, env=env, cwd="/tmp")
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert "as fakeroot" in proc.stderr
        sif = Path(proc.stdout.strip().splitlines()[-1])
        assert sif.stat().st_uid == user.pw_uid
        run = subprocess.run(
            [*as_user, "apptainer", "exec", "--contain", "--cleanenv", str(sif), "aliphysics-check"],
            capture_output=True,
            text=True,
            env=env,
            cwd="/tmp",
        )
        assert run.returncode == 0 and "all 7 libraries answered" in run.stdout, run.stderr
    finally:
        shutil.rmtree(top)
