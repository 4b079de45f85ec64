"""Commands of other distributions (afkit.cli PLUGINS): ``afkit federation`` comes from the testbed's
package (testbed/, ``afkit-testbed``) through its entry point in the group ``afkit.commands``; without
that package it is one clear error naming what to install (exit 3).

The testbed's wheel is built here from a copy of testbed/ (pip wheel --no-build-isolation --no-index:
no network) and unpacked as site-packages would hold it, so its entry point is the one its
pyproject.toml declares, found as an installed distribution's.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

import pytest
from wheelsupport import build_wheel

from afkit import cli
from afkit.errors import ExitCode

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src"
ACTIONS = ("up", "down", "status", "urls", "exec", "link", "toxic", "measure", "figure")


@pytest.fixture(scope="module")
def testbed_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The testbed's wheel (built from a copy of testbed/), unpacked into a site-packages folder."""
    src = tmp_path_factory.mktemp("testbed") / "testbed"
    shutil.copytree(REPO / "testbed", src, ignore=shutil.ignore_patterns("*.egg-info", "__pycache__"))
    whl = build_wheel(src, tmp_path_factory.mktemp("wheel"), "afkit_testbed")
    site = tmp_path_factory.mktemp("site-packages")
    with zipfile.ZipFile(whl) as zf:
        zf.extractall(site)
    return site


def _afkit(path: list[Path], *args: str, isolated: bool = False) -> subprocess.CompletedProcess[str]:
    """``afkit ARGS`` importing from PATH first; ISOLATED: PATH and the standard library only (python
    -S: no site-packages, so no installed distribution and no entry point of one)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, path))}
    flags = ["-S"] if isolated else []
    return subprocess.run([sys.executable, *flags, "-m", "afkit", *args], env=env, capture_output=True,
                          text=True, check=False, timeout=120)  # fmt: skip


def test_the_testbed_wheel_registers_afkit_federation(testbed_site: Path) -> None:
    [dist] = testbed_site.glob("afkit_testbed-*.dist-info")
    found = metadata.PathDistribution(dist).entry_points.select(group=cli.PLUGIN_GROUP)
    assert [(e.name, e.value) for e in found] == [("federation", "afkit_testbed.federation.cli:register")]
    assert (testbed_site / "afkit_testbed" / "templates" / "federation" / "links.yaml").is_file()


def test_without_the_testbed_package_afkit_federation_exits_3_naming_what_to_install() -> None:
    proc = _afkit([SRC], "federation", "urls", isolated=True)
    assert proc.returncode == ExitCode.PREREQ, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith("afkit: error: 'afkit federation' is provided by the afkit-testbed package")
    assert "afkit: hint: install it from afkit's checkout: pip install -e testbed" in proc.stderr


def test_without_the_testbed_package_afkit_still_lists_federation() -> None:
    proc = _afkit([SRC], "--help", isolated=True)
    assert proc.returncode == 0, proc.stderr
    assert cli.PLUGINS["federation"].summary in " ".join(proc.stdout.split())


def test_with_the_testbed_package_installed_afkit_federation_has_its_actions(testbed_site: Path) -> None:
    proc = _afkit([SRC, testbed_site], "federation", "--help")
    assert proc.returncode == 0, proc.stderr
    assert "usage: afkit federation [-h] ACTION" in proc.stdout
    for action in ACTIONS:
        assert f"    {action} " in proc.stdout
    link = _afkit([SRC, testbed_site], "federation", "figure", "--help")
    assert "testbed/afkit_testbed/templates/federation/links.yaml" in " ".join(link.stdout.split())


def test_afkit_federation_without_an_action_prints_its_help_and_exits_2(testbed_site: Path) -> None:
    proc = _afkit([SRC, testbed_site], "federation")
    assert proc.returncode == ExitCode.USAGE, proc.stderr
    assert "usage: afkit federation" in proc.stdout


def test_a_plugin_that_cannot_be_imported_exits_3_with_the_hint(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = metadata.EntryPoint("federation", "afkit_no_such_module.cli:register", cli.PLUGIN_GROUP)

    def entry_points(**select: str) -> metadata.EntryPoints:
        assert select == {"group": cli.PLUGIN_GROUP, "name": "federation"}
        return metadata.EntryPoints([broken])

    monkeypatch.setattr(metadata, "entry_points", entry_points)
    assert cli.main(["federation", "urls"]) == ExitCode.PREREQ
    err = capsys.readouterr().err
    assert "afkit_no_such_module.cli:register cannot be imported" in err
    assert "hint: install it from afkit's checkout: pip install -e testbed" in err


def test_the_plugin_registers_through_its_entry_point(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[object] = []

    def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
        seen.append(sub)
        sub.add_parser("federation").set_defaults(func=lambda _args: 0)

    class Entry:
        value = "tests:register"

        def load(self) -> object:
            return register

    monkeypatch.setattr(metadata, "entry_points", lambda **_select: [Entry()])
    assert cli.main(["federation"]) == ExitCode.OK
    assert len(seen) == 1
