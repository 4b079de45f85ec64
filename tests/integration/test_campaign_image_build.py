"""A campaign whose image is built from a CVMFS tag (``image: {build: ...}``), end to end.

Runs inside the testbed (scripts/testbed run): the workflow's image rule calls the image builder as
``afkit image build --profile alice --tag AliPhysics/vAN-20201018_ROOT6-1 --output <results>/image
--base localimage:<bench sandbox> -y`` would, against the CVMFS fixture at /cvmfs with the real
Apptainer, then two jobs (local executor) run in the built SIF and read a ROOT file from the
testbed's XRootD origin.
Checks that the jobs ran in that image: the tag and the manifest's sha256 in the aggregated table,
and the tag's environment (ALICE_PHYSICS ...) present inside the jobs. The base is the bench
sandbox (`scripts/mkbase --sandbox bench`, built on the host; or $AFKIT_BENCH_SANDBOX).
"""

from __future__ import annotations

import csv
import hashlib
import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from itsupport import REPO, origin_dataset, sh, snakemake_local, steps_campaign, text_or_empty

TAG = "AliPhysics/vAN-20201018_ROOT6-1"
pytestmark = pytest.mark.testbed


@pytest.fixture(scope="module")
def data_dir() -> Iterator[str]:
    """A directory in the origin's namespace with one real ROOT file."""
    with origin_dataset("afkit-image-build-it", ("uproot-HZZ.root",)) as name:
        yield name


def test_campaign_runs_in_image_built_from_tag(bench_sandbox: Path, data_dir: str) -> None:
    assert (Path("/cvmfs/alice.cern.ch") / "el7-x86_64").is_dir(), "the CVMFS fixture is not at /cvmfs"
    work = Path(tempfile.mkdtemp(prefix="afkit-campaign-build-", dir="/tmp"))
    try:
        # lz4: what the test needs of the build is its path through the workflow, not gzip's minute
        build = {"profile": "alice", "tag": TAG, "base": f"localimage:{bench_sandbox}", "compression": "lz4"}
        image = {"build": build}
        cfile = steps_campaign(work, "it-build", image, data_dir, access=("direct", "copy"))
        cfile = cfile.rename(work / "C.yaml")
        (work / "workflows").symlink_to(REPO / "workflows")  # README.md's command, as written
        proc = sh(
            "snakemake -s workflows/Snakefile --configfile C.yaml --profile workflows/profiles/local",
            cwd=work, timeout=600, env={"XRD_CONNECTIONRETRY": "1", "XRD_REQUESTTIMEOUT": "20"},
            unset=("AFKIT_BASE_IMAGE",),
        )  # fmt: skip
        [results] = list((work / "results").iterdir())
        image_dir = results / "image"
        log = text_or_empty(image_dir / "image.log")
        assert proc.returncode == 0, proc.stderr[-3000:] + "\n--- image.log ---\n" + log[-3000:]

        # the builder was called as documented and its working directory is <results>/image
        first = log.splitlines()[0]
        assert " image build --profile alice --tag " + TAG in first
        assert f"--output {image_dir} --base localimage:{bench_sandbox} --compression lz4 -y" in first
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
        again = snakemake_local(work, cfile, unset=("AFKIT_BASE_IMAGE",))
        assert again.returncode == 0, again.stderr[-3000:]
        assert "Nothing to be done" in again.stdout + again.stderr
        assert hashlib.sha256(sif.read_bytes()).hexdigest() == digest
    finally:
        shutil.rmtree(work, ignore_errors=True)  # the directory this test made
