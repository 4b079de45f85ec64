"""Helpers shared by the integration tests (they run inside the testbed: scripts/testbed run)."""

from __future__ import annotations

import csv
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml
from waitsupport import WaitTimeout, wait_until

from afkit.paths import workflow_files

REPO = Path(__file__).resolve().parents[2]
ROOT_DATA = REPO / "tests" / "data"  # scikit-hep-testdata files, BSD-3


def require_env(name: str) -> str:
    """A variable the testbed sets; a clear failure (never a skip) outside the testbed."""
    value = os.environ.get(name)
    if not value:
        pytest.fail(f"${name} is not set: run this inside the testbed (scripts/testbed run)")
    return value


def mkbase(*args: str) -> Path:
    """The path ``scripts/mkbase ARGS`` prints (run-tests builds the image on the host beforehand)."""
    proc = subprocess.run(
        [str(REPO / "scripts" / "mkbase"), *args], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        pytest.fail(
            f"scripts/mkbase {' '.join(args)} failed (build it on the host first):\n{proc.stderr[-2000:]}"
        )
    return Path(proc.stdout.strip().splitlines()[-1])


@contextmanager
def origin_dataset(prefix: str, files: tuple[str, ...], owner: str | None = None) -> Iterator[str]:
    """A new directory of real ROOT files in the testbed origin's namespace; yields its name.

    Removed afterwards (only the directory made here). ``owner`` also chowns it (e.g. for jobs
    running as user afkit).
    """
    directory = Path(require_env("AFKIT_XROOTD_DATA")) / f"{prefix}-{uuid.uuid4().hex[:8]}"
    directory.mkdir()
    try:
        for name in files:
            shutil.copyfile(ROOT_DATA / name, directory / name)
        for path in (directory, *directory.iterdir()):
            os.chmod(path, 0o775 if path.is_dir() else 0o644)
            if owner:
                shutil.chown(path, owner, owner)
        yield directory.name
    finally:
        shutil.rmtree(directory)


def afkit(
    *args: str, timeout: float | None = 120, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m afkit ARGS`` with the testbed's Python, output captured; ENV added to ours."""
    return subprocess.run([sys.executable, "-m", "afkit", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, check=False, env={**os.environ, **(env or {})})  # fmt: skip


def sh(
    line: str, *, cwd: Path | None = None, timeout: float | None = 120, env: dict[str, str] | None = None,
    unset: tuple[str, ...] = (),
) -> subprocess.CompletedProcess[str]:  # fmt: skip
    """A command line exactly as README.md or docs/ write it (split like a shell, programs from PATH:
    the testbed venv's afkit and snakemake), output captured; ENV added to ours, UNSET taken out."""
    full = {**os.environ, **(env or {})}
    for name in unset:
        full.pop(name, None)
    return subprocess.run(shlex.split(line), cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          check=False, env=full)  # fmt: skip


def ok(proc: subprocess.CompletedProcess[str]) -> str:
    """PROC's stdout; fails with its exit code and the end of its stderr unless it succeeded."""
    assert proc.returncode == 0, f"exit {proc.returncode}: {proc.stderr[-3000:]}"
    return proc.stdout


def steps_campaign(
    work: Path, name: str, image: dict[str, Any], data_dir: str, access: tuple[str, ...] = ("direct",),
    **extra: Any,
) -> Path:  # fmt: skip
    """WORK/NAME.yaml: one local site ``wn`` (scratch in WORK, apptainer --userns) running one
    ``steps`` benchmark over ACCESS on DATA_DIR/uproot-HZZ.root of the testbed's origin, in IMAGE;
    EXTRA: more top-level keys (e.g. ``results``)."""
    raw = {
        "name": name,
        "image": image,
        "sites": {"wn": {"executor": "local", "storage": "origin", "scratch": str(work / "scratch"),
                         "apptainer_args": ["--userns"],
                         "resources": {"cores": 1, "mem_mb": 1, "runtime": 10}}},
        "storage": {"origin": {"url": require_env("AFKIT_XROOTD_URL"), "export": "/"}},
        "datasets": {"hzz": {"storage": "origin", "files": [f"{data_dir}/uproot-HZZ.root"]}},
        "benchmarks": [{"name": "steps", "type": "steps", "sites": ["wn"], "datasets": ["hzz"],
                        "sweep": {"access": list(access)}}],
        **extra,
    }  # fmt: skip
    cfile = work / f"{name}.yaml"
    cfile.write_text(yaml.safe_dump(raw), encoding="utf-8")
    return cfile


def snakemake_local(
    work: Path, cfile: Path, *, timeout: float = 300, unset: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    """``snakemake -s workflows/Snakefile --configfile CFILE --profile workflows/profiles/local`` run
    in WORK, its XRootD clients failing fast; the UNSET variables taken out of its environment."""
    files = workflow_files()
    cmd = [sys.executable, "-m", "snakemake", "-s", str(files.snakefile), "--configfile", str(cfile),
           "--profile", str(files.profile("local"))]  # fmt: skip
    env = {**os.environ, "XRD_CONNECTIONRETRY": "1", "XRD_REQUESTTIMEOUT": "20"}
    for name in unset:
        env.pop(name, None)
    return subprocess.run(
        cmd, cwd=work, env=env, capture_output=True, text=True, check=False, timeout=timeout
    )


def text_or_empty(path: Path) -> str:
    """PATH's text ('' when it does not exist): a log to show in a failure message."""
    return path.read_text(encoding="utf-8") if path.exists() else ""


# --- campaigns across the testbed federation (docs/federation.md) ---------------------------------

FEDERATION_CAMPAIGN = REPO / "workflows" / "config" / "federation.yaml"
# XRootD client timeouts the federation campaign's jobs inherit (XRD_* pass into the payload): a
# dead link fails fast (XRD_TIMEOUTRESOLUTION: how often the client checks its timeouts, 15 s by
# default)
FED_XRD_ENV = {"XRD_STREAMTIMEOUT": "5", "XRD_REQUESTTIMEOUT": "8", "XRD_CONNECTIONWINDOW": "3",
               "XRD_TIMEOUTRESOLUTION": "1"}  # fmt: skip


def fed_sh(line: str, cwd: Path | None = None, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    """A command line as docs/federation.md writes it, with the federation's XRootD client settings."""
    return sh(line, cwd=cwd, timeout=timeout, env=FED_XRD_ENV)


# the federation fault tests' benchmark: frankfurt's jobs read gsi's data (over gsi's WAN link),
# their own (local path) and alpes's (over alpes's link), one `afkit bench read` each
FED_READ: dict[str, Any] = {
    "name": "read",
    "type": "read",
    "payload": "afkit-bench",
    "sites": ["frankfurt"],
    "datasets": ["gsi-data", "frankfurt-data", "alpes-data"],
    "sweep": {"block_size": ["1m"]},
    "duration": 120,  # an upper limit (afkit-bench stops at the end of its data): the 16 MB are read whole
}


@contextmanager
def federation_work(
    bench_sif: Path, name: str, benchmarks: list[dict[str, Any]], more: dict[str, str] | None = None
) -> Iterator[tuple[Path, str]]:
    """(campaign file, data prefix): workflows/config/federation.yaml cut down to BENCHMARKS, every
    dataset one 16 MB file (PREFIX/blob-0000.dat; MORE: more datasets, name -> storage, each
    PREFIX/NAME-0000.dat), the bench image, results and job scratch in a new directory.
    Afterwards the links are reset and the data made under the prefix and the directory are
    removed."""
    if afkit("federation", "urls").returncode != 0:
        pytest.fail("the federation is not up (run: scripts/testbed federation up)")
    prefix = f"{name}-{uuid.uuid4().hex[:8]}"
    d = Path(tempfile.mkdtemp(prefix=f"afkit-{name}-", dir="/tmp"))
    raw: dict[str, Any] = yaml.safe_load(FEDERATION_CAMPAIGN.read_text(encoding="utf-8"))
    raw["name"] = name
    raw["image"] = {"sif": str(bench_sif)}
    raw["results"] = str(d / "results")
    for site in raw["sites"].values():
        site["scratch"] = str(d / "scratch")  # where the test sees the jobs' progress
    for ds in raw["datasets"].values():
        ds["generate"] = {"count": 1, "size_mb": 16, "prefix": f"{prefix}/blob"}
    for ds, store in (more or {}).items():
        raw["datasets"][ds] = {
            "storage": store,
            "generate": {"count": 1, "size_mb": 16, "prefix": f"{prefix}/{ds}"},
        }
    raw["benchmarks"] = benchmarks
    cfile = d / "C.yaml"
    cfile.write_text(yaml.safe_dump(raw), encoding="utf-8")
    try:
        yield cfile, prefix
    finally:
        for site in raw["sites"]:
            ok(afkit("federation", "link", site, "--reset"))
        for store in raw["storage"].values():
            shutil.rmtree(Path(store["path"]) / prefix, ignore_errors=True)  # the data made here
        shutil.rmtree(d, ignore_errors=True)  # the directory this test created


def job_reading(scratch: Path, dataset: str) -> bool:
    """Has the `afkit bench read` of DATASET's job (jobs' scratch in SCRATCH) written an interval
    record (bytes are flowing)?"""
    for spec in scratch.glob("afkit-job-*/spec.json"):
        try:
            # the payload's spec (afkit.campaign.contract.PayloadSpec): the job under "job"
            if json.loads(spec.read_text(encoding="utf-8"))["job"]["dataset"] != dataset:
                continue
            # afkit bench writes its records, flushed, to .bench.jsonl.PID.part until it ends
            parts = (spec.parent / "bench").glob(".bench.jsonl.*.part")
            return any('"interval"' in part.read_text(encoding="utf-8") for part in parts)
        except (OSError, ValueError, KeyError):
            continue
    return False


def wait_reading(run: subprocess.Popen[str], cfile: Path, dataset: str, timeout: float) -> None:
    """Wait until DATASET's job of the campaign RUN (of CFILE, started in its directory) reads; when
    RUN ends first, fail with every job's status and error from jobs.csv beside RUN's output."""
    try:
        # (a bound, not a timing: the campaign's datasets and image come first, and a loaded host
        # took over 60 s to reach the read)
        wait_until(lambda: job_reading(cfile.parent / "scratch", dataset), timeout, 0.2,
                   what=f"the {dataset} job's first interval record", proc=run)  # fmt: skip
    except WaitTimeout as err:
        table = cfile.parent / "results"
        rows = [
            f"{r['dataset']}: {r['status']} {r['error']}"
            for jobs in table.glob("*/aggregate/jobs.csv")
            for r in csv.DictReader(jobs.open(newline="", encoding="utf-8"))
        ]
        raise WaitTimeout(f"{err}\njobs.csv: {rows}") from None


def jobs_by_dataset(results: Path) -> dict[str, dict[str, str]]:
    """The rows of RESULTS/aggregate/jobs.csv by dataset (one job per dataset)."""
    with (results / "aggregate" / "jobs.csv").open(newline="", encoding="utf-8") as fh:
        return {r["dataset"]: r for r in csv.DictReader(fh)}


def job_records(results: Path, bench: str) -> dict[str, tuple[int, bytes]]:
    """(mtime in ns, content) of every job record of BENCH: what a rerun must leave alone."""
    return {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in (results / "job" / bench).glob("*.json")}


# XRootD's XCache (libXrdPfc) keeps beside each cached file FILE.cinfo: a version (int32, 4 since
# XRootD 5), its Store struct (block size, file size as int64 first; 48 bytes on x86_64), the
# struct's crc32c (4 bytes), then one bit per block that is written and synced to disk (xrootd
# src/XrdPfc/XrdPfcInfo.cc Info::Write, XrdPfcInfo.hh struct Store). XrdPfcFile.cc File::Sync
# writes it after the data file's fsync: a block's bit is set there only once its bytes are on disk.
PFC_CINFO_VERSION = 4
PFC_BITMAP_OFFSET = 4 + 48 + 4


def xcache_holds(cached: Path) -> bool:
    """Has XCache written every block of CACHED (a file in its cache directory) to disk and recorded
    that in CACHED.cinfo (so that a read with the origin down is served from the cache)?"""
    try:
        info = cached.with_name(cached.name + ".cinfo").read_bytes()
    except OSError:
        return False
    if len(info) < PFC_BITMAP_OFFSET:
        return False
    version = int.from_bytes(info[0:4], "little")
    assert version == PFC_CINFO_VERSION, f"{cached}.cinfo: version {version}, not {PFC_CINFO_VERSION}"
    block, size = int.from_bytes(info[4:12], "little"), int.from_bytes(info[12:20], "little")
    if block <= 0 or size <= 0:
        return False
    blocks = -(-size // block)
    bits = info[PFC_BITMAP_OFFSET : PFC_BITMAP_OFFSET + -(-blocks // 8)]
    return len(bits) * 8 >= blocks and all(bits[i // 8] >> (i % 8) & 1 for i in range(blocks))


def fed_cache_file(site: str, scenario: str, path: str) -> Path:
    """Where SITE's cache SCENARIO (``afkit storage up SCENARIO`` with the site's storage directory as
    its state directory, afkit_testbed.federation.control.storage_cmd) keeps its copy of PATH."""
    from afkit_testbed.federation.control import storage_dir

    return storage_dir(site) / scenario / "cache" / path.lstrip("/")


def processes_in(directory: Path) -> list[str]:
    """The processes (pid: command line) working in DIRECTORY or naming it on their command line: a
    job of a test's campaign that still runs."""
    import psutil

    found = []
    for p in psutil.process_iter(["pid", "cwd", "cmdline", "status"]):
        if p.info["status"] == psutil.STATUS_ZOMBIE or p.info["pid"] == os.getpid():
            continue
        cmdline = " ".join(p.info["cmdline"] or [])
        cwd = p.info["cwd"] or ""
        if str(directory) in cmdline or cwd == str(directory) or cwd.startswith(f"{directory}/"):
            found.append(f"{p.info['pid']}: {cmdline}")
    return found


def proxy_key(path: Path) -> list[str]:
    """The base64 lines of the private key in the X.509 proxy file PATH (what a leak would show)."""
    lines = path.read_text().splitlines()
    start, end = lines.index("-----BEGIN PRIVATE KEY-----"), lines.index("-----END PRIVATE KEY-----")
    return lines[start + 1 : end]


def processes_of(workdir: Path) -> list[str]:
    """The processes whose working directory or command line lies in WORKDIR (a study's snakemake,
    its jobs, their payloads, its readers), as 'PID command'."""
    import os

    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cwd = os.readlink(proc / "cwd")
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if cwd.startswith(str(workdir)) or str(workdir) in cmd:
            found.append(f"{proc.name} {cmd[:200]}")
    return found
