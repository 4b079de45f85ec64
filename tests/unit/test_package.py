"""afkit as an installable package: its wheel carries every data file, an installed copy finds them
outside the checkout, and a data file missing from an installation is a clear error (exit 3).

The wheel is built here from the files a build reads (pyproject.toml, README.md, LICENSE, src/) and
the testbed's distribution beside them (testbed/, which must stay out of it), copied, so the checkout
gets no build/ folder; pip wheel with --no-build-isolation (the dev extra's setuptools) and
--no-index: no network.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from wheelsupport import build_wheel

REPO = Path(__file__).resolve().parents[2]
PKG = REPO / "src" / "afkit"
BUILD_INPUTS = ("pyproject.toml", "README.md", "LICENSE", "src", "testbed")
TESTBED_PACKAGE = "afkit_testbed"  # testbed/: the federation in the box, a distribution of its own


def _is_compiled(rel: Path) -> bool:
    return "__pycache__" in rel.parts or rel.suffix == ".pyc"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """afkit's wheel, built from a copy of the checkout's build inputs."""
    src = tmp_path_factory.mktemp("checkout")
    for name in BUILD_INPUTS:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, src / name, ignore=shutil.ignore_patterns("*.egg-info"))
        else:
            shutil.copy2(REPO / name, src / name)
    return build_wheel(src, tmp_path_factory.mktemp("wheel"), "afkit")


@pytest.fixture
def installed(wheel: Path, tmp_path: Path) -> Iterator[Path]:
    """The wheel unpacked as site-packages would hold it (a folder on PYTHONPATH), outside the checkout."""
    site = tmp_path / "site-packages"
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(site)
    yield site


def _afkit(site: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m afkit ARGS`` importing afkit from SITE (PYTHONPATH comes before the dev venv's
    editable checkout), in CWD."""
    env = {**os.environ, "PYTHONPATH": str(site)}
    return subprocess.run([sys.executable, "-m", "afkit", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, check=False, timeout=120)  # fmt: skip


def test_the_wheel_holds_every_file_of_the_package_and_no_compiled_one(wheel: Path) -> None:
    names = {n for n in zipfile.ZipFile(wheel).namelist() if n.startswith("afkit/")}
    # the package's files as git sees them (committed or new, not ignored: no .snakemake/ of a run)
    git = ["git", "ls-files", "--cached", "--others", "--exclude-standard", "src/afkit"]
    listed = subprocess.run(git, cwd=REPO, capture_output=True, text=True, check=True).stdout.split("\n")
    want = {
        str(Path("afkit") / Path(p).relative_to("src/afkit"))
        for p in listed
        if p and (REPO / p).is_file() and not _is_compiled(Path(p))
    }
    assert want - names == set()  # every module and every data file ships (a glob in pyproject.toml)
    assert names - want == set()  # nothing else: no __pycache__, no build leftovers
    for data in ("workflows/Snakefile", "workflows/schemas/campaign.schema.yaml",
                 "workflows/report/campaign.html.j2", "images/alice/profile.yaml",
                 "templates/apptainer/image.def.j2", "workflows/config/demo.yaml"):  # fmt: skip
        assert f"afkit/data/{data}" in names


def test_the_wheel_holds_no_module_or_file_of_the_testbed(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    testbed = sorted(p.relative_to(REPO / "testbed").as_posix() for p in (REPO / "testbed").rglob("*.py"))
    assert f"{TESTBED_PACKAGE}/federation/cli.py" in testbed  # what is looked for is there to find
    assert [n for n in names if n.startswith(f"{TESTBED_PACKAGE}/") or n in testbed] == []
    assert [n for n in names if "federation" in Path(n).parts] == []  # no afkit/federation, no templates


def test_the_job_wrapper_stays_executable_in_the_wheel(wheel: Path) -> None:
    info = zipfile.ZipFile(wheel).getinfo("afkit/data/workflows/scripts/htcondor-sandbox-job")
    assert (info.external_attr >> 16) & 0o111


def test_an_installed_afkit_finds_its_data_outside_the_checkout(installed: Path, tmp_path: Path) -> None:
    work = tmp_path / "elsewhere"
    work.mkdir()
    code = "from afkit import paths; print(paths.data_dir()); print(paths.workflow_files().snakefile)"
    env = {**os.environ, "PYTHONPATH": str(installed)}
    proc = subprocess.run([sys.executable, "-c", code], cwd=work, env=env, capture_output=True, text=True,
                          check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    data, snakefile = proc.stdout.split()
    assert data == str(installed / "afkit" / "data")
    assert Path(snakefile).is_file() and Path(snakefile).is_relative_to(installed)
    # a command that reads package data (the image profile) from there, in a directory of its own
    proc = _afkit(installed, work, "image", "name", "AliPhysics/vAN-20201018_ROOT6-1")
    assert proc.returncode == 0, proc.stderr
    assert "AliPhysics" in proc.stdout


def test_a_data_file_missing_from_an_installation_is_one_clear_error_and_exit_3(
    installed: Path, tmp_path: Path
) -> None:
    schema = installed / "afkit" / "data" / "workflows" / "schemas" / "campaign.schema.yaml"
    schema.unlink()
    proc = _afkit(installed, tmp_path, "campaign", "config-doc", "--check")
    assert proc.returncode == 3, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith(f"afkit: error: afkit's data file {schema} is missing")
    assert "reinstall" in proc.stderr


def test_a_missing_data_folder_is_one_clear_error_and_exit_3(installed: Path, tmp_path: Path) -> None:
    shutil.rmtree(installed / "afkit" / "data")
    proc = _afkit(installed, tmp_path, "campaign", "config-doc", "--check")
    assert proc.returncode == 3, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "afkit's data folder" in proc.stderr and "is missing" in proc.stderr
