"""A campaign whose image is an ``oras://`` reference, end to end.

Runs inside the testbed (scripts/testbed run): a local OCI registry (Debian's docker-registry on
127.0.0.1, plain HTTP, no auth; as scripts/ci-local starts one), the bench SIF (`scripts/mkbase
bench`, built on the host; or $AFKIT_BENCH_SIF) pushed to it with `apptainer push`, then a one-job
campaign (local executor) with `image: {sif: oras://127.0.0.1:PORT/afkit/bench:TAG}`. Checks that
the image rule pulled exactly the pushed SIF, that its sha256 is the job's provenance in the
aggregated table, that a second run does not pull again (the registry is stopped by then), and that
a wrong reference fails with the reference and the registry's answer in the message, leaving no
image.json, no partial SIF, no job record and no aggregate behind.
"""

from __future__ import annotations

import csv
import json
import shutil
import socket
import subprocess
import tempfile
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from itsupport import origin_dataset, snakemake_local, steps_campaign, text_or_empty
from waitsupport import WaitTimeout, wait_until

from afkit.image.store import sha256_file

pytestmark = pytest.mark.testbed


class Registry:
    def __init__(self, port: int, proc: subprocess.Popen[bytes], log: Path) -> None:
        self.port, self.proc, self.log = port, proc, log

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def answers(port: int) -> bool:
    """Does the registry on 127.0.0.1:PORT answer its API's base endpoint (GET /v2/: 200)?"""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/", timeout=2) as r:
            return bool(r.status == 200)
    except (urllib.error.URLError, ConnectionError):
        return False


@pytest.fixture(scope="module")
def registry() -> Iterator[Registry]:
    """docker-registry on 127.0.0.1:PORT (the config of scripts/ci-local's start_registry, without auth)."""
    assert shutil.which("docker-registry"), "docker-registry is not installed in the testbed"
    d = Path(tempfile.mkdtemp(prefix="afkit-oras-registry-", dir="/tmp"))
    port = _free_port()
    (d / "config.yml").write_text(
        "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n"
        f"    rootdirectory: {d / 'store'}\nhttp:\n  addr: 127.0.0.1:{port}\n",
        encoding="utf-8",
    )
    log = d / "registry.log"
    with log.open("wb") as fh:
        proc = subprocess.Popen(["docker-registry", "serve", str(d / "config.yml")], stdout=fh, stderr=fh)
    reg = Registry(port, proc, log)
    try:
        try:
            wait_until(lambda: answers(port), 30, what=f"the registry on 127.0.0.1:{port}", proc=proc)
        except WaitTimeout as err:
            pytest.fail(f"{err}; its log:\n{log.read_text(encoding='utf-8', errors='replace')}")
        yield reg
    finally:
        reg.stop()
        shutil.rmtree(d, ignore_errors=True)  # the directory this fixture made


@pytest.fixture(scope="module")
def data_dir() -> Iterator[str]:
    """A directory in the origin's namespace with one real ROOT file."""
    with origin_dataset("afkit-oras-it", ("uproot-HZZ.root",)) as name:
        yield name


def _campaign(work: Path, name: str, ref: str, data_dir: str) -> Path:
    return steps_campaign(work, name, {"sif": ref}, data_dir)


def _snakemake(work: Path, cfile: Path) -> subprocess.CompletedProcess[str]:
    # apptainer falls back to HTTP for 127.0.0.1 by itself
    return snakemake_local(work, cfile, unset=("AFKIT_REGISTRY_INSECURE",))


def test_campaign_runs_in_image_pulled_from_oras(bench_sif: Path, registry: Registry, data_dir: str) -> None:
    tag = f"it-{uuid.uuid4().hex[:8]}"
    ref = f"oras://127.0.0.1:{registry.port}/afkit/bench:{tag}"
    pushed = sha256_file(bench_sif)
    push = subprocess.run(
        ["apptainer", "push", "--no-https", str(bench_sif), ref], capture_output=True, text=True, check=False
    )
    assert push.returncode == 0, push.stderr[-2000:]

    work = Path(tempfile.mkdtemp(prefix="afkit-campaign-oras-", dir="/tmp"))
    try:
        # a wrong reference (a tag the registry does not hold): a clear error, nothing half-written
        bad = _snakemake(work, _campaign(work, "it-oras-bad", ref + "-missing", data_dir))
        assert bad.returncode != 0
        assert f"cannot pull {ref}-missing" in bad.stderr, bad.stderr[-3000:]
        assert "manifest unknown" in bad.stderr.lower(), bad.stderr[-3000:]
        bad_results = [p for p in (work / "results").iterdir() if "bad" in p.name]
        assert len(bad_results) == 1, list((work / "results").iterdir())
        image_dir = bad_results[0] / "image"
        assert not (image_dir / "image.json").exists()
        assert not (image_dir / "image.sif").exists()
        assert not (image_dir / ".image.sif.part").exists()
        assert not (bad_results[0] / "job").exists() or not any((bad_results[0] / "job").rglob("*.json"))
        assert not (bad_results[0] / "aggregate").exists()

        # the right reference: pulled once, the pushed bytes, the jobs' provenance
        cfile = _campaign(work, "it-oras", ref, data_dir)
        proc = _snakemake(work, cfile)
        [results] = [p for p in (work / "results").iterdir() if p != bad_results[0]]
        image_dir = results / "image"
        log = text_or_empty(image_dir / "image.log")
        assert proc.returncode == 0, proc.stderr[-3000:] + "\n--- image.log ---\n" + log[-3000:]
        assert log.splitlines()[0].startswith("$ apptainer pull ") and log.splitlines()[0].endswith(" " + ref)
        sif = image_dir / "image.sif"
        assert sha256_file(sif) == pushed
        assert not (image_dir / ".image.sif.part").exists()
        info = json.loads((image_dir / "image.json").read_text(encoding="utf-8"))
        assert info["path"] == str(sif) and info["sha256"] == pushed and info["source"] == ref

        with (results / "aggregate" / "jobs.csv").open() as fh:
            rows = list(csv.DictReader(fh))
        assert len(rows) == 1
        [row] = rows
        assert row["status"] == "ok", row["error"]
        assert row["image_sha256"] == pushed
        assert row["image_path"] == str(sif)
        assert int(row["bytes"]) > 0

        # a second run does not pull again: the registry is gone and nothing is to be done
        registry.stop()
        mtime = sif.stat().st_mtime_ns
        again = _snakemake(work, cfile)
        assert again.returncode == 0, again.stderr[-3000:]
        assert "Nothing to be done" in again.stdout + again.stderr
        assert sif.stat().st_mtime_ns == mtime and sha256_file(sif) == pushed
        assert (image_dir / "image.log").read_text(encoding="utf-8") == log
    finally:
        shutil.rmtree(work, ignore_errors=True)  # the directory this test made
