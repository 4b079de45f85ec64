"""A campaign whose image is built from a CVMFS tag (``image: {build: ...}``), end to end.

Runs inside the testbed (scripts/testbed run): the workflow's image rule runs ``afkit image build
--profile alice --tag AliPhysics/vAN-20201018_ROOT6-1 --output <results>/image --base
localimage:<bench sandbox> -y`` against the CVMFS fixture at /cvmfs with the real Apptainer, then two
jobs (local executor) run in the built SIF and read a ROOT file from the testbed's XRootD origin.
Checks that the jobs ran in that image: the tag and the manifest's sha256 in the aggregated table,
and the tag's environment (ALICE_PHYSICS ...) present inside the jobs. The base is the bench
sandbox (`scripts/mkbase --sandbox bench`, built on the host; or $AFKIT_BENCH_SANDBOX).
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
ROOT_DATA = REPO / "tests" / "data"  # scikit-hep-testdata files, BSD-3
TAG = "AliPhysics/vAN-20201018_ROOT6-1"
pytestmark = pytest.mark.testbed


def _env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        pytest.fail(f"${name} is not set: run this inside the testbed (scripts/testbed run)")
    return value


@pytest.fixture(scope="module")
def bench_sandbox() -> Path:
    given = os.environ.get("AFKIT_BENCH_SANDBOX")
    if given:
        path = Path(given)
    else:
        proc = subprocess.run(
            [str(REPO / "scripts" / "mkbase"), "--sandbox", "bench"],
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            pytest.fail(
                f"scripts/mkbase --sandbox bench failed (build it on the host first):\n{proc.stderr[-2000:]}"
            )
        path = Path(proc.stdout.strip().splitlines()[-1])
    assert (path / "opt" / "afkit" / "bin" / "python3").exists(), f"no bench sandbox at {path}"
    return path


@pytest.fixture(scope="module")
def data_dir() -> Iterator[str]:
    """A directory in the origin's namespace with one real ROOT file."""
    root = Path(_env("AFKIT_XROOTD_DATA"))
    name = f"afkit-image-build-it-{uuid.uuid4().hex[:8]}"
    d = root / name
    d.mkdir()
    shutil.copyfile(ROOT_DATA / "uproot-HZZ.root", d / "uproot-HZZ.root")
    for p in (d, *d.iterdir()):
        os.chmod(p, 0o775 if p.is_dir() else 0o644)
    yield name
    shutil.rmtree(d)  # the directory this fixture created


def test_campaign_runs_in_image_built_from_tag(bench_sandbox: Path, data_dir: str) -> None:
    assert (Path("/cvmfs/alice.cern.ch") / "el7-x86_64").is_dir(), "the CVMFS fixture is not at /cvmfs"
    work = Path(tempfile.mkdtemp(prefix="afkit-campaign-build-", dir="/tmp"))
    try:
        raw = {
            "name": "it-build",
            "image": {"build": {"profile": "alice", "tag": TAG, "base": f"localimage:{bench_sandbox}"}},
            "sites": {"wn": {"executor": "local", "storage": "origin", "scratch": str(work / "scratch"),
                             "apptainer_args": ["--userns"],
                             "resources": {"cores": 1, "mem_mb": 1, "runtime": 10}}},
            "storage": {"origin": {"url": _env("AFKIT_XROOTD_URL"), "export": "/"}},
            "datasets": {"hzz": {"storage": "origin", "files": [f"{data_dir}/uproot-HZZ.root"]}},
            "benchmarks": [{"name": "steps", "type": "steps", "sites": ["wn"], "datasets": ["hzz"],
                            "sweep": {"access": ["direct", "copy"]}}],
        }  # fmt: skip
        cfile = work / "campaign.yaml"
        cfile.write_text(yaml.safe_dump(raw), encoding="utf-8")
        profile = REPO / "workflows" / "profiles" / "local"
        cmd = [sys.executable, "-m", "snakemake", "-s", str(REPO / "workflows" / "Snakefile"),
               "--configfile", str(cfile), "--profile", str(profile)]  # fmt: skip
        env = {**os.environ, "XRD_CONNECTIONRETRY": "1", "XRD_REQUESTTIMEOUT": "20"}
        env.pop("AFKIT_BASE_IMAGE", None)
        proc = subprocess.run(
            cmd, cwd=work, env=env, capture_output=True, text=True, check=False, timeout=600
        )
        [results] = list((work / "results").iterdir())
        image_dir = results / "image"
        log = (
            (image_dir / "image.log").read_text(encoding="utf-8")
            if (image_dir / "image.log").exists()
            else ""
        )
        assert proc.returncode == 0, proc.stderr[-3000:] + "\n--- image.log ---\n" + log[-3000:]

        # the builder was called as documented and its working directory is <results>/image
        first = log.splitlines()[0]
        assert " image build --profile alice --tag " + TAG in first
        assert f"--output {image_dir} --base localimage:{bench_sandbox} -y" in first
        assert (image_dir / ".afkit-workdir").is_file()
        sif = image_dir / "AliPhysics_vAN-20201018_ROOT6-1.sif"
        manifest = json.loads(sif.with_suffix(".json").read_text(encoding="utf-8"))
        digest = hashlib.sha256(sif.read_bytes()).hexdigest()
        assert manifest["sif_sha256"] == digest
        info = json.loads((image_dir / "image.json").read_text(encoding="utf-8"))
        assert info["path"] == str(sif) and info["sha256"] == digest and info["tag"] == TAG
        assert info["source"] == "build" and info["base"] == manifest["base"]

        with (results / "aggregate" / "jobs.csv").open() as fh:
            rows = list(csv.DictReader(fh))
        assert len(rows) == 2
        assert {r["access"] for r in rows} == {"direct", "copy"}
        for r in rows:
            assert r["status"] == "ok", r["error"]
            assert r["image_tag"] == TAG
            assert r["image_sha256"] == manifest["sif_sha256"]
            assert r["image_path"] == str(sif)
            assert int(r["bytes"]) > 0

        # inside the jobs: the tag's environment, as the builder captured it
        env_names = {e["name"] for e in manifest["env"]}
        assert "ALICE_PHYSICS" in env_names
        for rec_path in (results / "job" / "steps").glob("*.json"):
            rec = json.loads(rec_path.read_text(encoding="utf-8"))
            software = rec["software_env"]
            assert software["tag"] == TAG
            assert software["vars"] == len(manifest["env"]) > 0
            assert software["missing"] == []
            assert software["required"]["ROOTSYS"], software

        # a second run finds everything done: the image is not rebuilt
        again = subprocess.run(
            cmd, cwd=work, env=env, capture_output=True, text=True, check=False, timeout=300
        )
        assert again.returncode == 0, again.stderr[-3000:]
        assert "Nothing to be done" in again.stdout + again.stderr
        assert hashlib.sha256(sif.read_bytes()).hexdigest() == digest
    finally:
        shutil.rmtree(work, ignore_errors=True)  # the directory this test made
