"""The federation campaign on the sites' own batch workers: ``workflows/config/federation-workers.yaml``.

gsi's jobs go to gsi's slurmd (partition ``gsi``), frankfurt's and alpes's to their HTCondor
execute nodes (requirements on ``AFKIT_SITE``); alpes has no shared filesystem with the submit
host (HTCondor file transfer, the image pulled on the worker from the federation's registry).
The bench image is pushed to the registry (``oras://10.77.0.10:5000/...``) under a tag of this
test's own; the campaign runs as user afkit (HTCondor refuses root's jobs) from a directory holding
its file. Checks, per job in ``jobs.csv``: it succeeded, on the batch system and the worker of its
site (AFKIT_SITE / partition, the site's address), and alpes's jobs had their files transferred and
got the image themselves, one pull into alpes's node-local image cache, the other jobs' hits
(the record came back by file transfer). Needs the federation up
(``scripts/testbed federation up``).
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import itsupport
import pytest
import yaml
from itsupport import REPO

pytestmark = pytest.mark.testbed

EXAMPLE = REPO / "workflows" / "config" / "federation-workers.yaml"
EXECUTOR = {"gsi": "slurm", "frankfurt": "htcondor", "alpes": "htcondor"}


@pytest.fixture(scope="module")
def state() -> dict[str, Any]:
    proc = itsupport.afkit("federation", "urls")
    if proc.returncode != 0:
        pytest.fail("the federation is not up (run: scripts/testbed federation up)")
    data: dict[str, Any] = json.loads(proc.stdout)
    return data


# what an afkit checkout holds that afkit reads: the package (with its data, src/afkit/data) and the
# links to the data folders that the documented lines use (workflows/config/...)
CHECKOUT_PARTS = ("src",)
CHECKOUT_LINKS = ("workflows", "templates", "images")


@pytest.fixture(scope="module")
def checkout(alice_root_sif: Path) -> Iterator[Path]:
    """afkit as a checkout under /tmp, which alpes's workers do not see (issue 21: a clone under
    /tmp once made every alpes job fail with "No module named 'afkit'"), with the demo's image
    (the ALICE tag with the real ROOT) as build/alice-root.sif, as `make demo` leaves it; the
    campaign runs with it."""
    root = Path(tempfile.mkdtemp(prefix="afkit-checkout-", dir="/tmp"))
    for part in CHECKOUT_PARTS:
        shutil.copytree(REPO / part, root / part, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for link in CHECKOUT_LINKS:
        (root / link).symlink_to(os.readlink(REPO / link))
    (root / "build").mkdir()
    (root / "build" / "alice-root.sif").symlink_to(alice_root_sif.resolve())
    for d in (root, root / "build"):
        os.chmod(d, 0o755)
    yield root
    shutil.rmtree(root, ignore_errors=True)  # the directory this fixture created


# docs/federation.md, "A 3-site campaign from the start": typed in the testbed as user afkit, from
# the repository
DOC_LINES = (
    "apptainer push build/alice-root.sif oras://10.77.0.10:5000/afkit/alice-root:federation",
    "afkit federation urls",
    "mkdir -p ~/federation && cp workflows/config/federation-workers.yaml ~/federation/C.yaml",
    "cd ~/federation && AFKIT_REGISTRY_INSECURE=1 afkit campaign run C.yaml",
)
WORK = Path("/home/afkit/federation")  # ~/federation of the documented lines
# the node-local image cache of alpes's jobs (afkit.campaign.imagecache: the default directory of
# the jobs' account, under /var/tmp, which alpes's mount namespace shares with the testbed)
IMAGE_CACHE = Path("/var/tmp/afkit-afkit/images")


@pytest.fixture(scope="module")
def run(state: dict[str, Any], checkout: Path) -> Iterator[tuple[list[dict[str, str]], Path]]:
    """The documented lines run once, with afkit from the checkout under /tmp, the campaign in a
    directory under /home/afkit: (rows of jobs.csv, results directory)."""
    assert state["registry"] == "10.77.0.10:5000"  # the registry the documented lines name
    raw: dict[str, Any] = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    shutil.rmtree(WORK, ignore_errors=True)  # a fresh directory, as a newcomer's
    shutil.rmtree(IMAGE_CACHE, ignore_errors=True)  # alpes's node has not pulled the image yet
    env = {**os.environ, "HOME": "/home/afkit", "USER": "afkit", "LOGNAME": "afkit",
           "PYTHONPATH": str(checkout / "src")}  # fmt: skip
    as_afkit = ["setpriv", "--reuid=afkit", "--regid=afkit", "--init-groups"]
    try:
        procs = [subprocess.run([*as_afkit, "bash", "-c", line], cwd=checkout, env=env, capture_output=True,
                                text=True, check=False, timeout=300) for line in DOC_LINES]  # fmt: skip
        for line, proc in zip(DOC_LINES, procs, strict=True):
            assert proc.returncode == 0, f"{line}: exit {proc.returncode}: {proc.stderr[-4000:]}"
        assert (
            json.loads(procs[1].stdout)["sites"]["frankfurt"]["caches"]["xcache"] == "root://10.77.2.10:1095"
        )
        # the checkout under /tmp ran it (its package's workflow)
        assert f"-s {checkout}/src/afkit/data/workflows/Snakefile" in procs[-1].stderr
        [results] = (WORK / "results").iterdir()
        with (results / "aggregate" / "jobs.csv").open(encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh))
        yield rows, results
    finally:
        for ds in raw["datasets"].values():
            store = raw["storage"][ds["storage"]]
            prefix = Path(ds["generate"]["prefix"]).parent
            shutil.rmtree(Path(store["path"]) / prefix, ignore_errors=True)  # the data made here
        shutil.rmtree(WORK, ignore_errors=True)  # the directory the documented lines made


def test_every_job_succeeds(run: tuple[list[dict[str, str]], Path]) -> None:
    rows, _ = run
    assert len(rows) == 9  # steps: 3 sites x 2 datasets; analysis: 3 sites x the AO2D dataset
    assert {r["status"] for r in rows} == {"ok"}, [(r["id"], r["error"]) for r in rows]


def test_the_analysis_reads_ao2d_that_the_images_root_wrote(run: tuple[list[dict[str, str]], Path]) -> None:
    """gsi-ao2d was written by the ROOT of the campaign's image (its dataset log's records); every
    site's analysis job read the O2track trees of every time frame with that ROOT."""
    rows, results = run
    log = (results / "dataset" / "gsi-ao2d.log").read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in log if line.startswith("{")]
    assert [(r["kind"], r["root_version"]) for r in records] == [("ao2d", "6.40.00")]
    analysis = [r for r in rows if r["type"] == "analysis"]
    assert sorted(r["site"] for r in analysis) == ["alpes", "frankfurt", "gsi"]
    for r in analysis:  # read by the image's ROOT (payload: root): its read counts are there
        assert int(r["events"]) > 0 and float(r["throughput_MBps"]) > 0, r["id"]
        assert int(r["root_bytes_read"]) > 0 and int(r["root_read_calls"]) > 0, r["id"]


def test_each_job_ran_on_its_sites_worker(
    run: tuple[list[dict[str, str]], Path], state: dict[str, Any]
) -> None:
    rows, _ = run
    for r in rows:
        site = r["site"]
        assert r["executor"] == EXECUTOR[site], r["id"]
        assert r["batch_job_id"], r["id"]
        assert r["wn_site"] == site, r["id"]  # AFKIT_SITE of the machine ad / the SLURM partition
        assert r["wn_address"] == state["sites"][site]["address"], r["id"]


def test_alpes_jobs_transfer_their_files_and_pull_the_image(run: tuple[list[dict[str, str]], Path]) -> None:
    rows, results = run
    for r in rows:
        if r["site"] == "alpes":
            assert r["submit_files"] == "transferred", r["id"]
            assert float(r["image_pull_s"]) >= 0, r["id"]
            # the image the job ran: alpes's node-local image cache, not the submit host's copy
            assert r["image_path"] == f"{IMAGE_CACHE}/{r['image_sha256']}.sif", r["image_path"]
            assert r["image_cache"] in ("hit", "miss"), r["id"]
        else:
            assert r["submit_files"] == "shared", r["id"]
            assert r["image_pull_s"] == "", r["id"]
            assert r["image_path"].startswith(str(results)), r["image_path"]
    shared = {r["image_sha256"] for r in rows}
    assert len(shared) == 1  # one image everywhere: the pull on the worker matched the campaign's
    # one pull per node and image: alpes's first job pulled it, the others (waiting for that pull
    # when they ran beside it) found it in the cache
    alpes = [r for r in rows if r["site"] == "alpes"]
    assert sorted(r["image_cache"] for r in alpes) == ["hit"] * (len(alpes) - 1) + ["miss"]
    alpes_records = sorted((results / "job").glob("*/alpes.*.json"))
    assert len(alpes_records) == 3  # transferred back to the submit directory


def _sees(site: str, path: Path) -> bool:
    """Whether the processes of SITE's HTCondor execute node see PATH (in their mount namespace)."""
    pid = (Path("/srv/federation") / site / "condor" / "master.pid").read_text().strip()
    cmd = ["nsenter", f"--target={pid}", "--mount", "--", "test", "-e", str(path)]
    return subprocess.run(cmd, check=False).returncode == 0


def test_alpes_workers_do_not_see_the_submit_hosts_files(state: dict[str, Any]) -> None:
    """alpes's execute node has empty /tmp and /home of its own; frankfurt's sees the submit host's."""
    home = Path("/home/afkit")
    with (
        tempfile.TemporaryDirectory(prefix="afkit-submit-", dir="/tmp") as in_tmp,
        tempfile.TemporaryDirectory(prefix="afkit-submit-", dir=home) as in_home,
    ):
        for submit in (Path(in_tmp), Path(in_home)):
            marker = submit / "C.yaml"
            marker.write_text("name: x\n", encoding="utf-8")
            assert _sees("frankfurt", marker)
            assert not _sees("alpes", marker)
    assert _sees("alpes", home)  # the user's home made again, empty
