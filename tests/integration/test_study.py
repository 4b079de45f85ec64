"""Studies on the federation in the box, at a tiny scale: every figure drawn, every claim evaluated.

``afkit study run NAME`` as docs/studies.md writes it, with ``--scale`` and ``--set`` making it
small (a full run is minutes: its numbers are in docs/studies.md). Needs the federation up.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import itsupport
import pytest
from itsupport import FED_XRD_ENV, ok, processes_of

from afkit.study import model

pytestmark = pytest.mark.testbed

STATUSES = {"pass", "fail", "not judgeable"}


@pytest.fixture
def workdir(bench_sif: Path) -> Iterator[Path]:
    if itsupport.afkit("federation", "urls").returncode != 0:
        pytest.fail("the federation is not up (run: scripts/testbed federation up)")
    d = Path(tempfile.mkdtemp(prefix="afkit-study-", dir="/tmp"))
    (d / "build").mkdir()
    (d / "build" / "bench.sif").symlink_to(bench_sif)
    yield d
    shutil.rmtree(d, ignore_errors=True)
    urls = json.loads(ok(itsupport.afkit("federation", "urls")))
    for site in urls["sites"].values():
        shutil.rmtree(Path(site["data"]) / "afkit" / "study", ignore_errors=True)


def run(line: str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        shlex.split(line),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **FED_XRD_ENV},
        check=False,
    )


@contextlib.contextmanager
def users_study(name: str, sites: dict[str, Any], storages: Iterable[str]) -> Iterator[Path]:
    """/home/afkit/NAME of user afkit holding SITES as my-sites.yaml, as a user writes it, and the
    user's area on each of STORAGES (a site gives its users a writable directory: the study's
    prefix afkit/study, owned by afkit); all removed afterwards."""
    import yaml

    home = Path("/home/afkit") / name
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    (home / "my-sites.yaml").write_text(yaml.safe_dump(sites))
    shutil.chown(home, "afkit", "afkit")
    shutil.chown(home / "my-sites.yaml", "afkit", "afkit")
    areas = [Path(str(SITES["storage"][s]["path"])) / "afkit" / "study" for s in storages]  # type: ignore[index]
    for area in areas:
        area.mkdir(parents=True, exist_ok=True)
        shutil.chown(area, "afkit", "afkit")
    try:
        yield home
    finally:
        shutil.rmtree(home, ignore_errors=True)
        for area in areas:
            shutil.rmtree(area, ignore_errors=True)


def as_afkit(line: str, home: Path) -> subprocess.CompletedProcess[str]:
    """LINE as user afkit in HOME, with afkit from this checkout."""
    env = {**os.environ, **FED_XRD_ENV, "HOME": "/home/afkit", "USER": "afkit", "LOGNAME": "afkit",
           "PYTHONPATH": str(itsupport.REPO / "src")}  # fmt: skip
    cmd = ["setpriv", "--reuid=afkit", "--regid=afkit", "--init-groups", *shlex.split(line)]
    return subprocess.run(cmd, cwd=home, env=env, capture_output=True, text=True, timeout=900, check=False)


def every_claim(verdicts: dict[str, Any], study: str) -> dict[str, dict[str, Any]]:
    """The claims of a study page's verdicts by id, checked to be exactly STUDY's claims."""
    got = {c["id"]: c for c in verdicts["claims"]}
    assert set(got) == {c.id for c in model.load(study).claims}
    return got


def test_gsi_trains_runs_in_the_box_and_judges_every_claim(workdir: Path) -> None:
    dry = run("afkit study run gsi-trains --dry-run", workdir)  # docs/studies.md, as written
    assert dry.returncode == 0 and dry.stdout.strip().endswith("it fits"), dry.stdout + dry.stderr
    assert "/srv/federation/gsi/data/afkit/study" in dry.stdout and "MB free" in dry.stdout
    assert not (workdir / "studies").exists() and not (workdir / "results").exists()  # nothing written
    proc = run("afkit study run gsi-trains --scale 0.25 --set repetitions=1", workdir)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    page = Path(proc.stdout.strip().splitlines()[-1])
    page = page if page.is_absolute() else workdir / page
    assert page.name == "index.html" and page.is_file()
    verdicts = json.loads((page.parent / "verdicts.json").read_text())
    got = every_claim(verdicts, "gsi-trains")
    assert all(c["status"] in STATUSES and c["measured"] for c in got.values())
    # judged in the box: the server's knee, all servers, the extrapolation (a tiny run may fail them,
    # but never leave them unjudged); no target below a server in the box
    for claim in ("server-knee", "all-linear", "extrapolation-original", "extrapolation-measured"):
        assert got[claim]["status"] != "not judgeable", got[claim]
    assert got["target-knee"]["status"] == "not judgeable"
    for figure in ("fig4-server.png", "fig5-all.png", "per-job.png"):
        assert (page.parent / figure).stat().st_size > 1000, figure
    html = page.read_text()
    assert "2100 MB/s at 200 jobs" in html  # the original's number beside afkit's
    assert "repetitions" in html and "set repetitions" in html  # the run's parameters, as changed
    # the machine it ran on: cores, memory, kernel and the load while the campaign ran
    on = verdicts["machine"]
    assert on["run"] == "ended" and on["cores"] >= 1 and on["kernel"] and on["load1"]["samples"] >= 2
    assert f"{on['cores']} cores" in html and "load during the run" in html
    # resuming as docs/studies.md says: nothing failed, so retry has nothing to do; the page again
    retry = run("afkit campaign retry studies/gsi-trains/campaign.yaml --failed", workdir)
    assert retry.returncode == 0 and "nothing to retry" in retry.stdout, retry.stderr
    before = page.stat().st_mtime_ns
    again = run("afkit study page gsi-trains", workdir)
    assert again.returncode == 0, again.stderr
    assert page.stat().st_mtime_ns > before
    assert json.loads((page.parent / "verdicts.json").read_text())["claims"] == verdicts["claims"]


def test_study_page_again_from_the_records(workdir: Path) -> None:
    """afkit study page remakes the page from the records a run left (here none: a clear error)."""
    proc = run("afkit study page gsi-trains", workdir)
    assert proc.returncode == 5, proc.stderr
    assert "has not been run here" in proc.stderr


# docs/studies.md, "At your sites": a sites file as a user writes it, here the testbed federation's
# own batch sites: gsi's SLURM partition and frankfurt's HTCondor execute node (the campaign keys of
# workflows/config/federation-workers.yaml), with small parameters of the user's own
SITES = {
    "image": {"sif": "IMAGE"},
    "sites": {
        "gsi": {"executor": "slurm", "partition": "gsi", "storage": "gsi", "apptainer_args": ["--userns"]},
        "frankfurt": {
            "executor": "htcondor",
            "requirements": 'AFKIT_SITE == "frankfurt"',
            "storage": "frankfurt",
            "apptainer_args": ["--userns"],
        },
    },
    "storage": {
        "gsi": {"url": "root://10.77.1.1:1094", "path": "/srv/federation/gsi/data"},
        "frankfurt": {"url": "root://10.77.2.1:1094", "path": "/srv/federation/frankfurt/data"},
        "alpes": {"url": "root://10.77.3.1:1094", "path": "/srv/federation/alpes/data"},
    },
    "params": {"server_jobs": [1, 2], "all_jobs": [2], "repetitions": 1, "file_mb": 4, "demand": "2MB/s"},
}


@pytest.mark.parametrize(
    ("workers", "server", "servers"),
    [("gsi", "frankfurt", ["frankfurt", "alpes"]), ("frankfurt", "gsi", ["gsi", "alpes"])],
)
def test_gsi_trains_runs_at_the_users_slurm_and_htcondor_sites(
    workdir: Path, bench_sif: Path, workers: str, server: str, servers: list[str]
) -> None:

    sites = json.loads(json.dumps(SITES))
    sites["image"]["sif"] = str(bench_sif.resolve())
    sites["roles"] = {"workers": workers, "server": server, "servers": servers}
    with users_study(f"study-{workers}", sites, SITES["storage"]) as home:  # type: ignore[arg-type]
        proc = as_afkit("afkit study run gsi-trains --sites my-sites.yaml", home)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        page = home / proc.stdout.strip().splitlines()[-1]
        verdicts = json.loads((page.parent / "verdicts.json").read_text())
        assert verdicts["where"] == "my-sites.yaml" and verdicts["scaled"] is False
        every_claim(verdicts, "gsi-trains")
        jobs = (page.parent.parent / "aggregate" / "jobs.csv").read_text()
        executor = SITES["sites"][workers]["executor"]  # type: ignore[index]
        assert f",{executor}," in jobs  # the jobs ran on the site's batch system


def test_fr_alpes_runs_at_the_users_sites_and_judges_every_claim(workdir: Path, bench_sif: Path) -> None:
    """fr-alpes with a sites file as a user writes it (docs/studies.md, fr-alpes): two worker-node
    sites on their batch systems (gsi's SLURM, frankfurt's HTCondor), two dataset sites, tiny
    parameters of the user's own: 2 x 2 pairs, 16 steps jobs and 4 busy waves of 2."""

    sites = json.loads(json.dumps(SITES))
    sites["image"]["sif"] = str(bench_sif.resolve())
    sites["roles"] = {"workers": ["gsi", "frankfurt"], "data": ["gsi", "alpes"]}
    sites["params"] = {"sim_file_mb": 0.4, "sim_demand": "0.4MB/s", "reco_file_mb": 4, "reco_demand": "6MB/s",
                       "busy_jobs": [2], "repetitions": 1}  # fmt: skip
    with users_study("study-fr-alpes", sites, ("gsi", "alpes")) as home:
        proc = as_afkit("afkit study run fr-alpes --sites my-sites.yaml", home)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        page = home / proc.stdout.strip().splitlines()[-1]
        verdicts = json.loads((page.parent / "verdicts.json").read_text())
        got = every_claim(verdicts, "fr-alpes")
        # every claim judged (a tiny run may fail one, never leave it unjudged: no job failed)
        assert all(c["status"] in {"pass", "fail"} and c["measured"] for c in got.values()), got
        for figure in ("table1.png", "table2.png", "pairs-sim.png", "pairs-reco.png", "copy-variation.png"):
            assert (page.parent / figure).stat().st_size > 1000, figure
        assert "LAPP 100-1000 s" in page.read_text()  # the original's cell beside afkit's
        jobs = (page.parent.parent / "aggregate" / "jobs.csv").read_text()
        assert ",slurm," in jobs and ",htcondor," in jobs


# dcotf-xcache in the box, small: one client node, the four scenarios (every cache endpoint of the
# box read through), both strides, one client, 4 MB AOD and ESD files, one repetition (16 jobs; the
# claims on warm caches say that no warm read ran). The full run that judges every claim takes
# 17 minutes: its numbers are docs/studies.md's.
SMALL_DCOTF = ("--set nodes=[1] --set repetitions=1 --set micro_duration=1 --set micro_file_mb=4 "
               "--set micro_files=1 --set analysis_clients=[1] --set aod_mb=4 --set esd_mb=4")  # fmt: skip
WARM_CLAIMS = ("warm-caches-above-wan", "dca-dcotf-similar", "xcache-lower", "stride0-above-random",
               "analysis-dcotf-dca", "analysis-no-cache-slowest")  # fmt: skip


def test_dcotf_xcache_runs_in_the_box_small_and_judges_what_it_measured(
    workdir: Path, alice_root_sif: Path
) -> None:
    (workdir / "build" / "alice-root.sif").symlink_to(alice_root_sif)  # what make demo links
    proc = run(f"afkit study run dcotf-xcache {SMALL_DCOTF}", workdir, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    page = workdir / proc.stdout.strip().splitlines()[-1]
    verdicts = json.loads((page.parent / "verdicts.json").read_text())
    got = every_claim(verdicts, "dcotf-xcache")
    assert all(c["status"] in STATUSES and c["measured"] for c in got.values()), got
    # judged on what ran (a small run may fail one, never leave it unjudged): the no-cache cap and
    # ESD against AOD; the claims on warm caches name the one repetition as their reason
    for claim in ("no-cache-wan-cap", "esd-vs-aod"):
        assert got[claim]["status"] in {"pass", "fail"}, got[claim]
    for claim in WARM_CLAIMS:
        assert got[claim]["status"] == "not judgeable", got[claim]
        assert "one repetition, so no warm read" in got[claim]["measured"], got[claim]
    assert got["container-similar"]["status"] == "not judgeable"
    for figure in ("micro.png", "analysis-aod.png", "analysis-esd.png"):
        assert (page.parent / figure).stat().st_size > 1000, figure
    html = page.read_text()
    assert "490 Mbit/s" in html  # the original's number beside afkit's
    assert "set repetitions" in html  # the run's parameters, as changed
    jobs = (page.parent.parent / "aggregate" / "jobs.csv").read_text()
    for scenario in ("origin", "xcache", "xcache-dca", "dcotf"):
        assert f",{scenario}," in jobs, scenario


def test_dcotf_xcache_runs_at_the_users_htcondor_site(workdir: Path, alice_root_sif: Path) -> None:
    """dcotf-xcache with a sites file as a user writes it (docs/studies.md, "At your sites"): the
    client nodes are frankfurt's HTCondor execute node, the data gsi's, read directly and through
    frankfurt's DCOTF (the cache's directory bound into the jobs, as a site mounts its cache file
    system); tiny parameters of the user's own, one repetition (so no warm read: those claims say
    why they are not judged)."""
    sites = json.loads(json.dumps(SITES))
    sites["image"]["sif"] = str(alice_root_sif.resolve())
    cache_dir = "/srv/federation/frankfurt/storage"
    sites["sites"]["frankfurt"]["apptainer_args"] += ["--bind", f"{cache_dir}:{cache_dir}:ro"]
    sites["storage"]["gsi"]["caches"] = {"dcotf": "root://10.77.2.10:1097"}
    sites["roles"] = {"workers": "frankfurt", "origin": "gsi"}
    sites["params"] = {"scenarios": ["origin", "dcotf"], "strides": ["0"], "nodes": [1], "micro_clients": 1,
                       "micro_duration": 2, "micro_file_mb": 4, "micro_files": 1, "analysis_clients": [1],
                       "aod_mb": 4, "esd_mb": 4, "repetitions": 1}  # fmt: skip
    with users_study("study-dcotf", sites, ("gsi",)) as home:
        data = Path(str(sites["storage"]["gsi"]["path"]))
        boxs = data / "afkit" / "study" / "dcotf-xcache" / "blob-0000.dat"  # a box run's file there
        boxs.parent.mkdir(parents=True, exist_ok=True)
        boxs.write_bytes(b"the box run's")
        box_mtime = boxs.stat().st_mtime_ns
        dry = as_afkit("afkit study run dcotf-xcache --sites my-sites.yaml --dry-run", home)
        assert dry.returncode == 0 and dry.stdout.strip().endswith("it fits"), dry.stdout + dry.stderr
        listed = re.findall(r"dataset \S+: (\d+) file\(s\) of ([\d.]+) MB on gsi \((\S+)-\*\)", dry.stdout)
        assert len(listed) == 3, dry.stdout  # the micro benchmark's blobs, the AOD and the ESD file
        proc = as_afkit("afkit study run dcotf-xcache --sites my-sites.yaml", home)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        for count, mb, prefix in listed:  # the dry run listed what the run then wrote
            written = sorted(data.glob(f"{prefix}-*"))
            assert len(written) == int(count), (prefix, written)
            assert all(0.5 <= f.stat().st_size / (float(mb) * 1e6) <= 1.5 for f in written), prefix
        page = home / proc.stdout.strip().splitlines()[-1]
        verdicts = json.loads((page.parent / "verdicts.json").read_text())
        assert verdicts["where"] == "my-sites.yaml" and verdicts["scaled"] is False
        got = every_claim(verdicts, "dcotf-xcache")
        assert all(c["status"] in STATUSES and c["measured"] for c in got.values()), got
        assert got["esd-vs-aod"]["status"] in {"pass", "fail"}, got["esd-vs-aod"]  # no warm read needed
        jobs = (page.parent.parent / "aggregate" / "jobs.csv").read_text()
        assert ",htcondor," in jobs and ",failed," not in jobs
        assert boxs.read_bytes() == b"the box run's" and boxs.stat().st_mtime_ns == box_mtime
        # docs/studies.md: afkit study clean removes what this run wrote, and nothing else
        clean = as_afkit("afkit study clean dcotf-xcache --sites my-sites.yaml", home)
        assert clean.returncode == 0, clean.stderr
        assert [f for _, _, prefix in listed for f in data.glob(f"{prefix}-*")] == []
        assert not page.parent.parent.exists() and list((home / "studies").iterdir()) == []
        assert boxs.read_bytes() == b"the box run's" and boxs.stat().st_mtime_ns == box_mtime


def files_of(results: Path) -> dict[str, int]:
    return {str(p): p.stat().st_mtime_ns for p in results.rglob("*") if p.is_file()}


# each campaign study's tiny box run, with the signal it is sent (SIGINT or SIGTERM, to its process
# alone, as `kill PID` sends it)
INTERRUPTED = {
    "gsi-trains": ("afkit study run gsi-trains --scale 0.25 --set repetitions=1", signal.SIGINT),
    "dcotf-xcache": (f"afkit study run dcotf-xcache {SMALL_DCOTF}", signal.SIGTERM),
    "fr-alpes": ("afkit study run fr-alpes --set repetitions=1", signal.SIGTERM),
}
MOMENTS = (r"rule dataset", r"rule (job|wave_\w+):")  # writing the datasets, running the jobs


@pytest.mark.parametrize("study", list(INTERRUPTED))
def test_an_interrupted_study_stops_everything_it_started(
    workdir: Path, study: str, request: pytest.FixtureRequest
) -> None:
    """SIGINT or SIGTERM to the process of `afkit study run` alone at a random moment while its
    campaign writes the datasets or runs the jobs (the moment's marker in its log, then 0-2 s):
    exit 130 once its campaign run has stopped snakemake; no process of the study is left and
    nothing is written after."""
    import random

    from waitsupport import wait_until

    if study == "dcotf-xcache":  # its AO2D and ESD files are the image's ROOT's
        (workdir / "build" / "alice-root.sif").symlink_to(request.getfixturevalue("alice_root_sif"))
    line, sig = INTERRUPTED[study]
    chance = random.Random()
    marker, delay = chance.choice(MOMENTS), chance.uniform(0.0, 2.0)
    moment = f"{sig.name} {delay:.1f} s after {marker!r}"
    log = workdir / "stderr.txt"
    with log.open("w") as err:
        proc = subprocess.Popen(shlex.split(line), cwd=workdir, stdout=subprocess.DEVNULL, stderr=err,
                                env={**os.environ, **FED_XRD_ENV}, start_new_session=True)  # fmt: skip
    try:
        wait_until(lambda: re.search(marker, log.read_text()), 300, what=f"{marker!r} in the study's log",
                   proc=proc)  # fmt: skip
        with contextlib.suppress(subprocess.TimeoutExpired):  # the random moment, unless it ends first
            proc.wait(timeout=delay)
        assert proc.poll() is None, f"the study ended before {moment}: " + log.read_text()[-2000:]
        proc.send_signal(sig)
        code = proc.wait(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert code == 130, f"{moment}: " + log.read_text()[-3000:]
    assert processes_of(workdir) == [], f"{moment}: " + log.read_text()[-2000:]
    results = workdir / "results"
    written = files_of(results)
    # nothing of the study runs any more (local sites: every job was a process of the study), so
    # nothing can write a record: the results as they were at the exit
    assert processes_of(workdir) == [] and files_of(results) == written, moment
    on = json.loads((results / f"study-{study}-v1" / "machine.json").read_text())
    assert on["run"] == "interrupted", moment  # the machine's record says the run did not end
