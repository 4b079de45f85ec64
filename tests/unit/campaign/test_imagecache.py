"""The node-local image cache of a shared_fs: false site (afkit.campaign.imagecache, through the job
wrapper's afkit.campaign.job.image_on_worker): one pull per node and image, concurrent jobs wait for
it, nothing half-pulled is ever an entry.

The test double of apptainer (fixtures/apptainer) counts its pulls in $FAKE_APPTAINER_LOG; a pull
held at $FAKE_APPTAINER_PULL_GATE stays in progress until the test opens the gate, after the other
callers are seen blocked on the image's lock (in /proc/locks).
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from afkit.campaign import imagecache, job
from afkit.campaign.contract import ImageInfo, JobSpec, SiteSpec
from afkit.errors import AfkitError, NotFoundError

REF = "oras://10.77.0.10:5000/afkit/bench:1"
SIF = b"#!/usr/bin/env run-singularity\n\0SIF_MAGIC pulled" + b"x" * 1000
DIGEST = hashlib.sha256(SIF).hexdigest()
SRC = Path(__file__).resolve().parents[3] / "src"


@pytest.fixture
def pulls(fake_apptainer: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[], list[str]]:
    """The registry's image behind REF; returns a reader of the pulls made so far."""
    source = tmp_path / "registry.sif"
    source.write_bytes(SIF)
    monkeypatch.setenv("FAKE_APPTAINER_PULL", str(source))
    monkeypatch.delenv("APPTAINER_FORCE", raising=False)
    calls = Path(os.environ["FAKE_APPTAINER_LOG"])
    return lambda: (
        [c for c in calls.read_text().splitlines() if c.startswith("pull ")] if calls.exists() else []
    )


def site(cache: Path | str) -> SiteSpec:
    return SiteSpec(name="alpes", executor="htcondor", shared_fs=False, image_cache=str(cache))


IMAGE = ImageInfo(path="/submit/results/image/image.sif", sha256=DIGEST, source=REF)


def fetch(
    tmp_path: Path, cache: Path | str, name: str = "job", image: ImageInfo = IMAGE
) -> tuple[str, float, str]:
    scratch = tmp_path / "scratch" / name
    scratch.mkdir(parents=True, exist_ok=True)
    return job.image_on_worker(image, site(cache), scratch, dict(os.environ), tmp_path / f"{name}.log")


def wait_for(cond: Callable[[], bool], timeout: float = 20.0) -> None:
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, "condition not reached"
        time.sleep(0.02)


def blocked_on(lock: Path) -> int:
    """How many flock waiters /proc/locks shows blocked on LOCK ('N: -> FLOCK ... MAJ:MIN:INODE')."""
    if not lock.exists():
        return 0
    inode = f":{lock.stat().st_ino}"
    lines = Path("/proc/locks").read_text().splitlines()
    return sum(1 for line in lines if " -> FLOCK " in line and any(w.endswith(inode) for w in line.split()))


def held(gate: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("FAKE_APPTAINER_PULL_GATE", str(gate))
    return gate


def test_concurrent_threads_pull_once_and_the_others_wait_for_it(
    pulls: Callable[[], list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache, gate = tmp_path / "cache", held(tmp_path / "gate", monkeypatch)
    results: dict[int, tuple[str, float, str]] = {}

    def one(i: int) -> None:
        results[i] = fetch(tmp_path, cache, f"job{i}")

    threads = [threading.Thread(target=one, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    wait_for(lambda: len(pulls()) == 1 and blocked_on(cache / f"{DIGEST}.lock") == 3)
    gate.touch()
    for t in threads:
        t.join()
    assert len(pulls()) == 1
    assert sorted(state for _, _, state in results.values()) == ["hit", "hit", "hit", "miss"]
    assert {path for path, _, _ in results.values()} == {str(cache / f"{DIGEST}.sif")}
    assert (cache / f"{DIGEST}.sif").read_bytes() == SIF


def test_concurrent_processes_pull_once(
    pulls: Callable[[], list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache, gate = tmp_path / "cache", held(tmp_path / "gate", monkeypatch)
    code = (
        "import json, os, sys; from pathlib import Path; from afkit.campaign import job; "
        "from afkit.campaign.contract import ImageInfo, SiteSpec; "
        f"image = ImageInfo(path='x', sha256={DIGEST!r}, source={REF!r}); "
        f"site = SiteSpec(name='alpes', executor='htcondor', shared_fs=False, image_cache={str(cache)!r}); "
        "scratch = Path(sys.argv[1]); scratch.mkdir(parents=True); "
        "print(json.dumps(job.image_on_worker(image, site, scratch, dict(os.environ), scratch / 'log')))"
    )
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(tmp_path / f"s{i}")],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(3)
    ]
    wait_for(lambda: len(pulls()) == 1 and blocked_on(cache / f"{DIGEST}.lock") == 2)
    gate.touch()
    outs = [p.communicate() for p in procs]
    assert all(p.returncode == 0 for p in procs), [err for _, err in outs]
    states = sorted(json.loads(out)[2] for out, _ in outs)
    assert states == ["hit", "hit", "miss"] and len(pulls()) == 1


def test_a_later_job_is_a_hit_without_a_pull(pulls: Callable[[], list[str]], tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    assert fetch(tmp_path, cache, "first")[2] == "miss"
    path, seconds, state = fetch(tmp_path, cache, "second")
    assert (state, len(pulls())) == ("hit", 1)
    assert path == str(cache / f"{DIGEST}.sif") and seconds >= 0


def test_a_trusted_entry_is_used_without_hashing_it(
    pulls: Callable[[], list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    fetch(tmp_path, cache, "first")
    hashed: list[Path] = []
    monkeypatch.setattr(imagecache, "sha256_file", lambda p: hashed.append(p) or DIGEST)
    assert fetch(tmp_path, cache, "second")[2] == "hit" and hashed == []


def test_a_failed_pull_leaves_no_entry_and_the_next_job_pulls_again(
    pulls: Callable[[], list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("FAKE_APPTAINER_PULL_FAIL", "1")
    with pytest.raises(NotFoundError, match=r"cannot pull oras://.*: FATAL: .*manifest unknown"):
        fetch(tmp_path, cache, "first")
    assert sorted(p.name for p in cache.iterdir()) == [f"{DIGEST}.lock"]  # no entry, no temporary file
    monkeypatch.delenv("FAKE_APPTAINER_PULL_FAIL")
    assert fetch(tmp_path, cache, "second")[2] == "miss"
    assert len(pulls()) == 2


def test_a_pull_of_another_image_is_refused_and_not_cached(
    pulls: Callable[[], list[str]], tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    other = ImageInfo(path="x", sha256="f" * 64, source=REF)  # the tag was pushed again since
    with pytest.raises(AfkitError, match="is not the image of the campaign"):
        fetch(tmp_path, cache, image=other)
    assert sorted(p.name for p in cache.iterdir()) == ["f" * 64 + ".lock"]


def test_a_lock_held_by_a_killed_process_does_not_block(
    pulls: Callable[[], list[str]], tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    lock = cache / f"{DIGEST}.lock"
    code = (
        f"import fcntl, os, time; fd = os.open({str(lock)!r}, os.O_RDONLY | os.O_CREAT); "
        "fcntl.flock(fd, fcntl.LOCK_EX); print('locked', flush=True); time.sleep(600)"
    )
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
    (cache / f".{DIGEST}.dead0000.tmp.sif").write_bytes(b"half")  # the killed pull's temporary file
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    assert fetch(tmp_path, cache)[2] == "miss"
    assert sorted(p.name for p in cache.iterdir()) == [f"{DIGEST}.lock", f"{DIGEST}.sif"]


def test_an_entry_in_a_directory_others_can_write_is_checked_and_replaced_when_wrong(
    pulls: Callable[[], list[str]], tmp_path: Path
) -> None:
    cache = tmp_path / "shared"
    cache.mkdir()
    cache.chmod(0o777)  # several accounts share it: any of them could have written the entry
    (cache / f"{DIGEST}.sif").write_bytes(b"not the image")
    assert fetch(tmp_path, cache, "first")[2] == "miss"
    assert (cache / f"{DIGEST}.sif").read_bytes() == SIF
    assert fetch(tmp_path, cache, "second")[2] == "hit"  # hashed, right: used
    assert len(pulls()) == 1


def test_a_cache_directory_that_cannot_be_made_falls_back_to_a_pull_into_the_sandbox(
    pulls: Callable[[], list[str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "afile").write_text("")
    path, _, state = fetch(tmp_path, tmp_path / "afile" / "images")
    assert (state, path) == ("unusable", str(tmp_path / "scratch" / "job" / "image.sif"))
    warning = f"afkit: warning: image cache {tmp_path / 'afile' / 'images'} unusable (cannot make"
    assert (tmp_path / "job.log").read_text().startswith(warning)
    assert capsys.readouterr().err.startswith(warning)


def test_a_squatted_default_directory_is_not_used(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "afkit-user").symlink_to(tmp_path / "elsewhere")  # another account's name for it
    with pytest.raises(imagecache.CacheUnusable, match="is not a directory of this user"):
        imagecache.prepare(tmp_path / "afkit-user" / "images", default=True)


def test_the_default_directory_is_per_user_under_var_tmp(monkeypatch: pytest.MonkeyPatch) -> None:
    import pwd

    user = pwd.getpwuid(os.geteuid()).pw_name
    assert imagecache.directory("") == Path(f"/var/tmp/afkit-{user}/images")
    assert imagecache.directory("/var/cache/afkit/images") == Path("/var/cache/afkit/images")


def test_off_pulls_into_the_jobs_sandbox_every_time(pulls: Callable[[], list[str]], tmp_path: Path) -> None:
    for name in ("first", "second"):
        path, _, state = fetch(tmp_path, "off", name)
        assert (state, path) == ("off", str(tmp_path / "scratch" / name / "image.sif"))
    assert len(pulls()) == 2


def test_the_pull_keeps_apptainers_own_cache_out_of_the_home(
    fake_apptainer: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[dict[str, Any]] = []
    failed = subprocess.CompletedProcess([], 1, "", "FATAL: no registry")
    monkeypatch.setattr(job.interrupt, "run", lambda cmd, env: seen.append({"env": env}) or failed)
    with pytest.raises(NotFoundError):
        job.pull_on_worker(IMAGE, tmp_path, {"HOME": "/home/u"})
    assert seen[0]["env"]["APPTAINER_DISABLE_CACHE"] == "1" and seen[0]["env"]["HOME"] == "/home/u"


def sandbox_spec(raw: dict[str, Any], make: Any, tmp_path: Path) -> JobSpec:
    """The spec of a steps job at a site without the shared filesystem, its image REF pulled on
    the worker into the node cache TMP_PATH/cache (the submit host's image.json: DIGEST)."""
    import dataclasses

    from afkit.campaign import plan

    raw["image"] = {"sif": REF}
    raw["sites"]["here"].update(executor="htcondor", shared_fs=False, image_cache=str(tmp_path / "cache"))
    raw["benchmarks"] = [{"name": "s", "type": "steps", "sites": ["here"], "datasets": ["hzz"]}]
    c = make(raw)
    image = tmp_path / "image.json"
    image.write_text(json.dumps({"path": "/submit/image.sif", "sha256": DIGEST, "tag": "", "source": REF}))
    j = next(x for x in plan.expand(c) if x.bench == "s")
    return dataclasses.replace(plan.specs(c, [j], results=str(tmp_path / "results"))[0], image=str(image))


def test_a_jobs_record_says_whether_its_pull_was_a_cache_hit(
    pulls: Callable[[], list[str]], raw: dict[str, Any], make: Any, tmp_path: Path
) -> None:
    spec, cache = sandbox_spec(raw, make, tmp_path), tmp_path / "cache"
    records = [job.run(spec, output=tmp_path / f"{n}.json", log=tmp_path / f"{n}.log") for n in ("a", "b")]
    assert [(r.status, r.image_cache) for r in records] == [("ok", "miss"), ("ok", "hit")]
    assert all(r.image_path == str(cache / f"{DIGEST}.sif") and r.image_pull_s is not None for r in records)
    assert len(pulls()) == 1


def test_a_job_whose_worker_cannot_pull_the_image_records_why(
    pulls: Callable[[], list[str]],
    raw: dict[str, Any],
    make: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A failed pull at a site without the shared filesystem: a failed record naming apptainer's
    error (HTCondor returns it; without it the job's output transfer fails and its slot waits out
    the job lease), the reason in the job's log too; no payload ran."""
    monkeypatch.setenv("FAKE_APPTAINER_PULL_FAIL", "1")
    spec = sandbox_spec(raw, make, tmp_path)
    record = job.run(spec, output=tmp_path / "a.json", log=tmp_path / "a.log")
    assert record.status == "failed" and (record.error or "").startswith(
        f"cannot pull {REF} on the worker node: FATAL"
    )
    assert json.loads((tmp_path / "a.json").read_text())["status"] == "failed"
    assert "afkit: error: cannot pull" in (tmp_path / "a.log").read_text()
    assert record.processing_start is None and not record.steps  # no payload ran


def test_a_digest_that_is_not_a_sha256_is_refused(tmp_path: Path) -> None:
    from afkit.errors import InvalidError

    with pytest.raises(InvalidError, match="is not a SHA-256"):
        imagecache.fetch(tmp_path, "../../etc/x", lambda tmp: None)
    assert list(tmp_path.iterdir()) == []
