"""afkit installed as a package (README, "Installing afkit"): in a fresh venv outside the checkout,
``pip install '.[workflow]'`` of the checkout, then ``afkit campaign run`` on a copy of the demo
campaign in another directory gives the same jobs.csv columns and report as the checkout's afkit.

Runs inside the testbed (scripts/testbed run). The testbed's network namespace reaches no package
index, so pip installs with ``--no-index --no-build-isolation``: it builds afkit's wheel from the
checkout's build inputs (copied, so the checkout gets no build/ folder) and installs it into the new
venv, not editable; afkit's dependencies come from the testbed venv, whose site folders a ``.pth``
file adds *after* the new venv's own site-packages (the testbed venv's editable afkit is not
activated: .pth files of an added folder are not read). The campaign is the installed package's
``workflows/config/demo.yaml``, cut down to one job per benchmark: the installed afkit builds its
image from the CVMFS fixture's tag on the bench base, as the demo does (templates and image profile
from the installation); the checkout's run takes that image as a SIF (an image build is ~40 s).
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import site
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from itsupport import REPO, ok, origin_dataset, require_env, sh

pytestmark = pytest.mark.testbed

ROOT = Path("/tmp/afkit-install")  # the README's DIR is ROOT/venv
VENV = ROOT / "venv"
BUILD_INPUTS = ("pyproject.toml", "README.md", "LICENSE", "src")  # what building the wheel reads
# README.md, "Installing afkit", as run here
CREATE = "python3 -m venv /tmp/afkit-install/venv"
INSTALL = "/tmp/afkit-install/venv/bin/pip install --no-index --no-build-isolation '.[workflow]'"
RUN = "/tmp/afkit-install/venv/bin/afkit campaign run C.yaml"
XRD_ENV = {"XRD_CONNECTIONRETRY": "1", "XRD_REQUESTTIMEOUT": "20"}


@pytest.fixture(scope="module")
def venv() -> Iterator[Path]:
    """A fresh venv under /tmp with afkit pip-installed from (a copy of) the checkout."""
    shutil.rmtree(ROOT, ignore_errors=True)
    checkout = ROOT / "afkit"
    checkout.mkdir(parents=True)
    for name in BUILD_INPUTS:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, checkout / name,
                            ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))  # fmt: skip
        else:
            shutil.copy2(REPO / name, checkout / name)
    ok(sh(CREATE, cwd=ROOT))
    [purelib] = VENV.glob("lib/python3*/site-packages")
    (purelib / "testbed-dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    ok(sh(INSTALL, cwd=checkout, timeout=300))
    try:
        yield purelib
    finally:
        shutil.rmtree(ROOT, ignore_errors=True)  # the directory this fixture created


def installed_python(code: str) -> str:
    """What CODE prints, run by the new venv's python outside the checkout."""
    proc = subprocess.run([str(VENV / "bin" / "python"), "-c", code], cwd=ROOT, capture_output=True,
                          text=True, check=False, env={**os.environ, "PYTHONPATH": ""})  # fmt: skip
    return ok(proc).strip()


def demo_campaign(demo: Path, base: Path, data: str, scratch: Path) -> dict[str, Any]:
    """DEMO (the demo campaign) with its image built on the bench sandbox BASE, the testbed's origin
    as its storage (no cache), small datasets and one job per benchmark."""
    raw: dict[str, Any] = yaml.safe_load(demo.read_text(encoding="utf-8"))
    raw["image"]["build"]["base"] = f"localimage:{base}"
    raw["sites"]["local"]["scratch"] = str(scratch)
    origin = raw["storage"]["origin"]
    origin.update(url=require_env("AFKIT_XROOTD_URL"), path=require_env("AFKIT_XROOTD_DATA"))
    origin.pop("caches")
    raw["datasets"]["hzz"]["files"] = [f"{data}/uproot-HZZ.root"]
    raw["datasets"]["blobs"]["generate"] = {"count": 1, "size_mb": 8, "prefix": f"{data}/blob"}
    sweeps = {"read": {"scenario": ["origin"], "clients": [1], "block_size": ["4M"]},
              "analysis": {"clients": [1], "access": ["direct"]}, "train": {"jobs": [1]},
              "steps": {"access": ["direct"]}}  # fmt: skip
    assert {b["name"] for b in raw["benchmarks"]} == set(sweeps)  # the demo's benchmarks, each kept
    for bench in raw["benchmarks"]:
        bench["sweep"] = sweeps[bench["name"]]
        if bench["name"] == "read":
            bench["duration"] = 1
    return raw


def results_of(work: Path) -> Path:
    [results] = list((work / "results").iterdir())
    return results


def columns_and_rows(results: Path) -> tuple[list[str], list[dict[str, str]]]:
    with (results / "aggregate" / "jobs.csv").open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        return list(reader.fieldnames or []), list(reader)


def sections(results: Path) -> list[str]:
    """The report's section titles (its <h2> headings), in order."""
    html = (results / "report" / "report.html").read_text(encoding="utf-8")
    return re.findall(r"<h2>(.*?)</h2>", html)


def test_installed_afkit_runs_the_demo_campaign_elsewhere_as_the_checkout_does(
    venv: Path, bench_sandbox: Path
) -> None:
    # the installed afkit is the venv's, its data in the venv, and it binds that package into the jobs
    afkit_dir = Path(installed_python("import afkit; print(afkit.__path__[0])"))
    assert afkit_dir == venv / "afkit"
    bound = installed_python("from afkit.campaign.job import package_dir; print(package_dir())")
    assert bound == str(afkit_dir)
    workflows = installed_python("from afkit.paths import workflows_dir; print(workflows_dir())")
    demo = Path(workflows) / "config" / "demo.yaml"
    assert demo.is_relative_to(afkit_dir)
    with origin_dataset("afkit-install-it", ("uproot-HZZ.root",)) as data:
        raw = demo_campaign(demo, bench_sandbox, data, ROOT / "scratch")
        raw_tag = raw["image"]["build"]["tag"]
        runs: dict[str, Path] = {}
        for who in ("installed", "checkout"):
            work = ROOT / who
            work.mkdir()
            if who == "checkout":  # the image the installed afkit built
                image = json.loads((runs["installed"] / "image" / "image.json").read_text(encoding="utf-8"))
                raw["image"] = {"sif": image["path"]}
            (work / "C.yaml").write_text(yaml.safe_dump(raw), encoding="utf-8")
            # the checkout's afkit: the testbed venv's (editable) one, as docs/campaigns.md runs it
            line = RUN if who == "installed" else "afkit campaign run C.yaml"
            proc = sh(line, cwd=work, timeout=600, env=XRD_ENV, unset=("PYTHONPATH",))
            assert proc.returncode == 0, (who, proc.stderr[-4000:])
            runs[who] = results_of(work)
    cols, rows = columns_and_rows(runs["installed"])
    ref_cols, ref_rows = columns_and_rows(runs["checkout"])
    assert cols == ref_cols
    benches = sorted(["read", "analysis", "train", "steps"])  # one job each
    assert sorted(r["bench"] for r in rows) == sorted(r["bench"] for r in ref_rows) == benches
    for r in rows:
        assert r["status"] == "ok", (r["bench"], r["error"])
        assert r["image_tag"] == raw_tag  # the demo's tag, built by the installed afkit
    assert sections(runs["installed"]) == sections(runs["checkout"])
    assert "Cells" in sections(runs["installed"])
    records = sorted((runs["installed"] / "job").glob("*/*.json"))
    assert len(records) == len(benches)
    for path in records:  # the installed afkit, bound at /afkit
        rec = json.loads(path.read_text(encoding="utf-8"))
        assert rec["engine"].endswith("(/afkit)"), (path.name, rec)
