"""The guarded federation (``afkit federation up --guarded``, docs/federation.md "Guarded
federation"): every origin and cache speaks TLS with a certificate of the federation's CA and takes
WLCG tokens of the federation's issuer only; each cache fetches from its origin with its own
service token. Checks that the servers refuse anonymous reads and writes, enforce a token's scopes
per path, serve a read token at every origin and through every cache, and that a 3-site campaign
(gsi on SLURM, frankfurt and alpes on HTCondor, alpes without the shared filesystem: its jobs take
the token along by HTCondor file transfer) reads every site's data with a token file only, which
no file the campaign writes contains.

It runs the lines of docs/federation.md's walkthrough, "A 3-site campaign from the start", as
written: the campaign workflows/config/federation-workers.yaml of the demo's image (the ALICE tag
with the real ROOT), its AO2D dataset written by that ROOT through gsi's door, on the sites' own
batch workers (alpes's jobs: files by HTCondor file transfer, the image pulled at the site into
its node's image cache), and checks its jobs and that nothing it wrote or started holds the token.

The module switches the running federation to guarded, and afterwards back to open (the other
federation tests use the open one): it runs with them, alone (tests/integration/conftest.py).
"""

from __future__ import annotations

import base64
import contextlib
import csv
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import itsupport
import pytest
import yaml
from itsupport import REPO, ok

pytestmark = pytest.mark.testbed

CONTENT = os.urandom(1 << 20)
SITES = ("gsi", "frankfurt", "alpes")
CACHES = ("xcache", "xcache-dca", "dcotf")
AS_AFKIT = ["setpriv", "--reuid=afkit", "--regid=afkit", "--init-groups"]
# docs/federation.md, "Guarded federation" (as written: one line)
TOKEN_LINE = "afkit federation token --scope storage.read:/ --scope storage.create:/ --owner afkit -o /home/afkit/federation.token"  # noqa: E501
# the execve calls of the guarded campaign's run (strace), outside the campaign's directory
TRACE = Path("/home/afkit/guarded-run.strace")
# docs/federation.md, "Guarded federation": typed by user afkit
LOGIN = (
    "apptainer registry login --username afkit --password-stdin oras://10.77.0.10:5000 < ~/registry.password"
)


@pytest.fixture(scope="module")
def state() -> Iterator[dict[str, Any]]:
    """The running federation switched to guarded for this module (docs/federation.md, "Guarded
    federation", as written: its storage and registry, its batch workers kept); open again
    afterwards. The switch is checked: the same execute nodes before and after."""
    before = _execute_nodes()
    try:
        data: dict[str, Any] = json.loads(ok(itsupport.sh("afkit federation up --guarded", timeout=600)))
        assert _execute_nodes() == before  # the batch workers kept running
        yield data
    finally:
        ok(itsupport.sh("afkit federation up", timeout=600))


def _execute_nodes() -> list[str]:
    """The pids of the sites' HTCondor masters (afkit_testbed.federation.batch)."""
    return [(Path("/srv/federation") / s / "condor" / "master.pid").read_text().strip() for s in SITES]


@pytest.fixture(scope="module")
def files(state: dict[str, Any]) -> Iterator[str]:
    """A file of CONTENT in every site's storage; yields its name (a folder made here, removed after)."""
    name = f"guarded-{uuid.uuid4().hex[:8]}"
    for site in SITES:
        folder = Path(state["sites"][site]["data"]) / name
        folder.mkdir()
        (folder / "a.bin").write_bytes(CONTENT)
        for p in (folder, folder / "a.bin"):
            shutil.chown(p, "xrootd", "xrootd")
    yield name
    for site in SITES:
        shutil.rmtree(Path(state["sites"][site]["data"]) / name, ignore_errors=True)


@pytest.fixture(scope="module")
def tokens(state: dict[str, Any]) -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="afkit-guarded-tokens-", dir="/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def token(folder: Path, *scopes: str, owner: str | None = None) -> Path:
    out = folder / f"{uuid.uuid4().hex[:8]}.token"
    args = [a for s in scopes for a in ("--scope", s)] + (["--owner", owner] if owner else [])
    ok(itsupport.afkit("federation", "token", *args, "-o", str(out)))
    return out


def xrdcp(state: dict[str, Any], src: str, dst: str, tok: Path | None,
          site: str | None = None) -> subprocess.CompletedProcess[str]:  # fmt: skip
    """xrdcp SRC DST with TOK (none: anonymous), the federation's CA trusted; in SITE's namespace."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BEARER_TOKEN", "XDG_RUNTIME"))}
    env["X509_CERT_FILE"] = state["guard"]["ca_bundle"]
    if tok is not None:
        env["BEARER_TOKEN_FILE"] = str(tok)
    cmd = ["xrdcp", "-f", "-s", src, dst]
    if site:
        cmd = [sys.executable, "-m", "afkit", "federation", "exec", site, "--", *cmd]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, check=False, timeout=120)


def test_the_storage_urls_are_tls(state: dict[str, Any]) -> None:
    for site in SITES:
        assert state["sites"][site]["storage_url"].startswith("roots://"), site
    assert all(u.startswith("roots://") for u in state["sites"]["frankfurt"]["caches"].values())


def test_a_user_asking_for_a_token_is_told_it_is_the_admins_to_hand_out(
    state: dict[str, Any], checkout: Path
) -> None:
    """The admin's command run by user afkit: exit 3, one error line, no traceback, no file."""
    out = Path("/tmp/afkit-users-own.token")
    argv = [sys.executable, "-m", "afkit", "federation", "token", "--scope", "storage.read:/", "-o", str(out)]
    proc = subprocess.run([*AS_AFKIT, *argv], cwd=checkout, env=_afkit_env(checkout), capture_output=True,
                          text=True, check=False, timeout=120)  # fmt: skip
    assert proc.returncode == 3, proc.stderr
    key = Path("/srv/federation/guard/issuer.key")  # docs/federation.md, root's, mode 0600
    said = f"afkit: error: {key}, the federation's token issuer's key, is its admin's: you cannot read it"
    assert [ln for ln in proc.stderr.splitlines() if ln.startswith("afkit: error:")] == [said], proc.stderr
    assert "Traceback" not in proc.stderr and not out.exists()


@pytest.mark.parametrize("site", SITES)
def test_an_origin_refuses_anonymous_reads_and_writes(
    state: dict[str, Any], files: str, tmp_path: Path, site: str
) -> None:
    url = state["sites"][site]["storage_url"]
    plain = url.replace("roots://", "root://")
    for where in (url, plain):  # with TLS and without
        read = xrdcp(state, f"{where}//{files}/a.bin", str(tmp_path / "a"), None)
        assert read.returncode != 0 and not (tmp_path / "a").exists(), read.stderr
    (tmp_path / "w").write_bytes(b"x")
    write = xrdcp(state, str(tmp_path / "w"), f"{url}//{files}/anonymous.bin", None)
    assert write.returncode != 0
    assert not (Path(state["sites"][site]["data"]) / files / "anonymous.bin").exists()


@pytest.mark.parametrize("site", SITES)
def test_a_read_token_reads_at_every_origin_over_the_wan(
    state: dict[str, Any], files: str, tokens: Path, tmp_path: Path, site: str
) -> None:
    read = xrdcp(state, f"{state['sites'][site]['storage_url']}//{files}/a.bin", str(tmp_path / "a"),
                 token(tokens, "storage.read:/"))  # fmt: skip
    assert read.returncode == 0, read.stderr
    assert (tmp_path / "a").read_bytes() == CONTENT


@pytest.mark.parametrize("scenario", CACHES)
def test_a_cache_refuses_anonymous_clients_and_serves_a_read_token_from_its_guarded_origin(
    state: dict[str, Any], files: str, tokens: Path, tmp_path: Path, scenario: str
) -> None:
    """frankfurt's caches in front of gsi: the cache fetches with its own service token (a cold read
    is a fetch from gsi's guarded origin), its clients need theirs. Read from a frankfurt node."""
    url = f"{state['sites']['frankfurt']['caches'][scenario]}//{files}/a.bin"
    anonymous = xrdcp(state, url, str(tmp_path / "anon"), None, site="frankfurt")
    assert anonymous.returncode != 0
    read = xrdcp(state, url, str(tmp_path / "a"), token(tokens, "storage.read:/"), site="frankfurt")
    assert read.returncode == 0, read.stderr
    assert (tmp_path / "a").read_bytes() == CONTENT


def test_a_token_writes_only_where_its_create_scope_allows(
    state: dict[str, Any], files: str, tokens: Path, tmp_path: Path
) -> None:
    url, data = state["sites"]["gsi"]["storage_url"], Path(state["sites"]["gsi"]["data"])
    (tmp_path / "w").write_bytes(b"written")
    reader = token(tokens, f"storage.read:/{files}")
    assert xrdcp(state, str(tmp_path / "w"), f"{url}//{files}/r.bin", reader).returncode != 0
    writer = token(tokens, f"storage.read:/{files}", f"storage.create:/{files}/up")
    assert xrdcp(state, str(tmp_path / "w"), f"{url}//{files}/up/w.bin", writer).returncode == 0
    assert (data / files / "up" / "w.bin").read_bytes() == b"written"
    assert xrdcp(state, str(tmp_path / "w"), f"{url}//{files}/other.bin", writer).returncode != 0
    assert not (data / files / "other.bin").exists()


def test_a_token_of_another_path_reads_nothing(
    state: dict[str, Any], files: str, tokens: Path, tmp_path: Path
) -> None:
    read = xrdcp(state, f"{state['sites']['gsi']['storage_url']}//{files}/a.bin", str(tmp_path / "a"),
                 token(tokens, "storage.read:/elsewhere"))  # fmt: skip
    assert read.returncode != 0


def test_token_refuses_a_scope_it_does_not_know(state: dict[str, Any], tokens: Path) -> None:
    proc = itsupport.afkit("federation", "token", "--scope", "storage.delete:/", "-o", str(tokens / "x"))
    assert proc.returncode == 2
    assert proc.stderr.startswith("afkit: error: --scope 'storage.delete:/'")
    assert not (tokens / "x").exists()


# ---------------------------------------------------- the 3-site campaign of the walkthrough


PASSWORD = Path("/srv/federation/guard/registry.password")  # the guarded registry's (root's copy)
# docs/federation.md, "A 3-site campaign from the start": the admin's lines, as root in the
# testbed, after `afkit federation up --guarded` (the module's state)
ADMIN_LINES = (TOKEN_LINE, "afkit federation password --owner afkit -o /home/afkit/registry.password")
# then the user's, as user afkit from the repository (here a copy of it under /tmp)
USER_LINES = (
    LOGIN,
    "apptainer push build/alice-root.sif oras://10.77.0.10:5000/afkit/alice-root:federation",
    "afkit federation urls",
    "mkdir -p ~/federation && cp workflows/config/federation-workers.yaml ~/federation/C.yaml",
    "cd ~/federation && afkit campaign run C.yaml",
)
EXAMPLE = REPO / "workflows" / "config" / "federation-workers.yaml"
WORK = Path("/home/afkit/federation")  # ~/federation of the documented lines
TOKEN = Path("/home/afkit/federation.token")
LOGIN_FILE = Path("/home/afkit/.docker/config.json")  # apptainer registry login's
EXECUTOR = {"gsi": "slurm", "frankfurt": "htcondor", "alpes": "htcondor"}
# the node-local image cache of alpes's jobs (afkit.campaign.imagecache: the default directory of
# the jobs' account, under /var/tmp, which alpes's mount namespace shares with the testbed)
IMAGE_CACHE = Path("/var/tmp/afkit-afkit/images")
# what an afkit checkout holds that afkit reads: the package (with its data, src/afkit/data) and the
# links to the data folders that the documented lines use (workflows/config/...)
CHECKOUT_PARTS = ("src",)
CHECKOUT_LINKS = ("workflows", "templates", "images")


def _secrets(path: Path) -> list[bytes]:
    """The token's text and the forms a leak could take (base64 of it, each of its JWT segments),
    and the registry's password (and the base64 of the user:password a Docker login file holds)."""
    text = path.read_text(encoding="utf-8").strip()
    password = PASSWORD.read_text(encoding="utf-8").strip()
    return [text.encode(), base64.b64encode(text.encode()), *(s.encode() for s in text.split(".")),
            password.encode(), base64.b64encode(f"afkit:{password}".encode())]  # fmt: skip


@pytest.fixture(scope="module")
def checkout(alice_root_sif: Path) -> Iterator[Path]:
    """afkit as a checkout under /tmp, which alpes's workers do not see (issue 21: a clone under
    /tmp once made every alpes job fail with "No module named 'afkit'"), with the demo's image
    (the ALICE tag with the real ROOT) as build/alice-root.sif, as `make demo` leaves it."""
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


def _afkit_env(checkout: Path) -> dict[str, str]:
    """User afkit's environment, afkit taken from CHECKOUT."""
    return {**os.environ, "HOME": "/home/afkit", "USER": "afkit", "LOGNAME": "afkit",
            "PYTHONPATH": str(checkout / "src")}  # fmt: skip


@pytest.fixture(scope="module")
def campaign(state: dict[str, Any], checkout: Path) -> Iterator[tuple[list[dict[str, str]], Path, list[str]]]:
    """The walkthrough's lines as written: the admin's as root, the user's as user afkit with afkit
    from the checkout under /tmp, the campaign in ~/federation (under /home, which alpes's workers
    do not see); its run under strace (every program it started, with its arguments and
    environment, TRACE). Yields (rows of jobs.csv, results directory, the user's lines' stdouts)."""
    assert state["registry"] == "10.77.0.10:5000"  # the registry the documented lines name
    raw: dict[str, Any] = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    env = _afkit_env(checkout)
    shutil.rmtree(WORK, ignore_errors=True)  # a fresh directory, as a newcomer's
    shutil.rmtree(IMAGE_CACHE, ignore_errors=True)  # alpes's node has not pulled the image yet
    LOGIN_FILE.unlink(missing_ok=True)  # a login of before
    traced = _traced(TRACE)
    try:
        for line in ADMIN_LINES:
            ok(itsupport.sh(line))
        outs = []
        for line in USER_LINES:
            run = "campaign run" in line
            cmd = [*AS_AFKIT, *(traced if run else []), "bash", "-c", line]
            with _batch_records_meanwhile(LIVE) if run else contextlib.nullcontext():
                proc = subprocess.run(cmd, cwd=checkout, env=env, capture_output=True, text=True, check=False,
                                      timeout=900)  # fmt: skip
            assert proc.returncode == 0, f"{line}: exit {proc.returncode}: {proc.stderr[-4000:]}"
            outs.append(proc.stdout)
        # the checkout under /tmp ran it (its package's workflow)
        assert f"-s {checkout}/src/afkit/data/workflows/Snakefile" in proc.stderr
        [results] = (WORK / "results").iterdir()
        with (results / "aggregate" / "jobs.csv").open(encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh))
        yield rows, results, outs
    finally:
        for ds in raw["datasets"].values():
            store = raw["storage"][ds["storage"]]
            prefix = Path(ds["generate"]["prefix"]).parent
            shutil.rmtree(Path(store["path"]) / prefix, ignore_errors=True)  # the data made here
        shutil.rmtree(WORK, ignore_errors=True)  # the directory the documented lines made
        subprocess.run([*AS_AFKIT, "apptainer", "registry", "logout", f"oras://{state['registry']}"], env=env,
                       capture_output=True, check=False, timeout=60)  # fmt: skip
        for secret in (TRACE, TOKEN, Path("/home/afkit/registry.password"), LOGIN_FILE):
            secret.unlink(missing_ok=True)


Run = tuple[list[dict[str, str]], Path, list[str]]
# what the batch systems showed of the campaign's jobs while they were queued and running
# (condor_q -l: the job ads, their arguments, environment and transfer lists; scontrol show job),
# one snapshot after the other, filled by _batch_records_meanwhile (LIVE_X509: the X.509 campaign's)
LIVE: list[str] = []
LIVE_X509: list[str] = []


def _traced(trace: Path) -> list[str]:
    """strace in front of a command: every execve of it and its children, with its arguments and
    environment, into TRACE."""
    return ["strace", "-f", "-qq", "-v", "-s", "1000000", "-e", "trace=execve", "-o", str(trace)]


@contextlib.contextmanager
def _batch_records_meanwhile(into: list[str]) -> Iterator[None]:
    """condor_q -l and scontrol show job, again and again while the block runs, INTO a list."""
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            for cmd in (["condor_q", "-l", "afkit"], ["scontrol", "show", "job"]):
                out = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=60).stdout
                if "afkit" in out:
                    into.append(out)
            done.wait(0.5)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


def test_every_job_succeeds(campaign: Run) -> None:
    rows, _, _ = campaign
    # steps: 3 sites x 2 datasets; cached: 2 reads at frankfurt; analysis: 3 sites x the AO2D dataset
    assert len(rows) == 11
    assert {r["status"] for r in rows} == {"ok"}, [(r["id"], r["error"]) for r in rows]


def test_the_walkthroughs_urls_are_the_guarded_ones(campaign: Run) -> None:
    """`afkit federation urls` (the user's third line) names the roots:// caches the walkthrough's
    table gives, and every job read a roots:// URL or its site's own disk."""
    rows, _, outs = campaign
    printed = json.loads(outs[2])
    assert printed["sites"]["frankfurt"]["caches"]["xcache"] == "roots://10.77.2.10:1095"
    assert printed["guard"]["ca_bundle"] == "/srv/federation/guard/pki/ca-bundle.pem"
    assert all(r["url"].startswith(("roots://", "/srv/federation/")) for r in rows), [r["url"] for r in rows]
    assert any(r["url"].startswith("roots://") for r in rows)


def test_frankfurts_jobs_read_gsis_data_through_its_guarded_cache(campaign: Run) -> None:
    """The two reads of benchmark 'cached' at frankfurt went through frankfurt's XCache (roots://,
    the job's token; the cache fetched from gsi with its own) and read the whole file."""
    rows, _, _ = campaign
    cached = [r for r in rows if r["bench"] == "cached"]
    assert len(cached) == 2
    for r in cached:
        assert r["url"].startswith("roots://10.77.2.10:1095/"), r["url"]
        assert r["scenario"] == "xcache" and r["site"] == "frankfurt" and r["status"] == "ok", r["id"]
        assert int(r["bytes"]) >= 4_000_000, r["id"]


def test_the_analysis_reads_ao2d_that_the_images_root_wrote_through_the_door(campaign: Run) -> None:
    """gsi-ao2d was written by the ROOT of the campaign's image (its dataset log's records) and
    copied through gsi's guarded door (the server wrote the file: it is the xrootd user's); every
    site's analysis job read the O2track trees of every time frame with that ROOT."""
    rows, results, _ = campaign
    log = (results / "dataset" / "gsi-ao2d.log").read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in log if line.startswith("{")]
    assert [(r["kind"], r["root_version"], r["kept"]) for r in records] == [("ao2d", "6.40.00", False)]
    assert records[0]["file"].startswith("roots://10.77.1.1:1094//"), records[0]["file"]
    written = Path("/srv/federation/gsi/data/workers/ao2d-0000.root")
    assert written.stat().st_size == records[0]["bytes"] > 0
    assert pwd.getpwuid(written.stat().st_uid).pw_name == "xrootd"
    assert [p.name for p in (results / "dataset").iterdir() if p.name.startswith(".")] == []  # no stage left
    analysis = [r for r in rows if r["type"] == "analysis"]
    assert sorted(r["site"] for r in analysis) == ["alpes", "frankfurt", "gsi"]
    for r in analysis:  # read by the image's ROOT (payload: root): its read counts are there
        assert int(r["events"]) > 0 and float(r["throughput_MBps"]) > 0, r["id"]
        assert int(r["root_bytes_read"]) > 0 and int(r["root_read_calls"]) > 0, r["id"]


def test_the_dataset_step_again_keeps_the_servers_ao2d_file(campaign: Run, checkout: Path) -> None:
    """The dataset step run again (by hand, into a manifest of its own): the image's ROOT reads the
    server's file through the door with the token, finds the same parameters and keeps it; nothing
    is written to the server, nothing staged is left."""
    _, results, _ = campaign
    written = Path("/srv/federation/gsi/data/workers/ao2d-0000.root")
    before = written.stat().st_mtime_ns
    env = _afkit_env(checkout)
    out = results / "dataset" / "again.json"
    cmd = [*AS_AFKIT, "afkit", "campaign", "dataset", "C.yaml", "gsi-ao2d", "-o", str(out)]
    proc = subprocess.run(cmd, cwd=WORK, env=env, capture_output=True, text=True, check=False, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = out.with_suffix(".log").read_text().splitlines()
    [rec] = [json.loads(line) for line in lines if line.startswith("{")]
    assert rec["kept"] is True and rec["file"].startswith("roots://10.77.1.1:1094//"), rec
    assert written.stat().st_mtime_ns == before
    assert [p.name for p in (results / "dataset").iterdir() if p.name.startswith(".")] == []


def test_each_job_ran_on_its_sites_worker(campaign: Run, state: dict[str, Any]) -> None:
    rows, _, _ = campaign
    for r in rows:
        site = r["site"]
        assert r["executor"] == EXECUTOR[site], r["id"]
        assert r["batch_job_id"], r["id"]
        assert r["wn_site"] == site, r["id"]  # AFKIT_SITE of the machine ad / the SLURM partition
        assert r["wn_address"] == state["sites"][site]["address"], r["id"]


def test_alpes_jobs_transfer_their_files_and_pull_the_image(campaign: Run) -> None:
    rows, results, _ = campaign
    for r in rows:
        if r["site"] == "alpes":
            assert r["submit_files"] == "transferred", r["id"]  # the token came by file transfer
            assert float(r["image_pull_s"]) >= 0, r["id"]
            # the image the job ran: alpes's node-local image cache, not the submit host's copy
            assert r["image_path"] == f"{IMAGE_CACHE}/{r['image_sha256']}.sif", r["image_path"]
        else:
            assert r["submit_files"] == "shared", r["id"]
            assert r["image_pull_s"] == "", r["id"]
            assert r["image_path"].startswith(str(results)), r["image_path"]
    assert len({r["image_sha256"] for r in rows}) == 1  # the pulls matched the campaign's image
    # one pull per node and image: alpes's first job pulled it, the others (waiting for that pull
    # when they ran beside it) found it in the cache
    alpes = [r for r in rows if r["site"] == "alpes"]
    assert sorted(r["image_cache"] for r in alpes) == ["hit"] * (len(alpes) - 1) + ["miss"]
    assert len(sorted((results / "job").glob("*/alpes.*.json"))) == 3  # transferred back


def test_the_token_file_is_the_users_and_readable_by_them_only(campaign: Run) -> None:
    info = TOKEN.stat()
    assert (info.st_uid, info.st_mode & 0o777) == (pwd.getpwnam("afkit").pw_uid, 0o600)


def test_no_file_the_guarded_campaign_wrote_holds_the_token(campaign: Run) -> None:
    secrets = _secrets(TOKEN)
    written = [p for p in WORK.rglob("*") if p.is_file()]
    assert any(p.name == "jobs.csv" for p in written) and len(written) > 20
    for path in written:
        data = path.read_bytes()
        assert not any(s in data for s in secrets), f"{path} holds the token"


def test_the_batch_systems_records_hold_the_tokens_path_not_the_token(campaign: Run) -> None:
    """HTCondor's job ads (condor_history -l: the arguments, environment and transfer lists of the
    campaign's jobs) and SLURM's (scontrol show job) name the token's file, never its text."""
    secrets = _secrets(TOKEN)
    ads = subprocess.run(["condor_history", "-l", "afkit", "-limit", "50"], capture_output=True, text=True,
                         check=False, timeout=60).stdout  # fmt: skip
    assert str(TOKEN) in ads  # alpes's jobs took the file along (transfer_input_files)
    slurm = subprocess.run(["scontrol", "show", "job"], capture_output=True, text=True, check=False,
                           timeout=60).stdout  # fmt: skip
    for text in (ads, slurm):
        assert not any(s.decode() in text for s in secrets)


def test_the_running_jobs_records_hold_the_tokens_path_not_the_token(campaign: Run) -> None:
    """condor_q -l and scontrol show job while the campaign's jobs were queued and running: the
    token's path (alpes's transfer lists), never its text."""
    secrets = _secrets(TOKEN)
    assert any("AFKIT_SITE" in t or "transfer_input_files" in t.lower() for t in LIVE)  # condor_q saw jobs
    assert any("JobId=" in t for t in LIVE)  # scontrol saw gsi's jobs
    assert any(str(TOKEN) in t for t in LIVE)
    for text in LIVE:
        assert not any(s.decode() in text for s in secrets)


def test_the_registry_refuses_a_pull_without_its_login(state: dict[str, Any], tmp_path: Path) -> None:
    """HTTPS with the federation's CA (trusted in the testbed: no --no-https, no variable) and a
    login: root has none here."""
    env = {**os.environ, "HOME": str(tmp_path)}
    proc = subprocess.run(["apptainer", "pull", str(tmp_path / "x.sif"), f"oras://{state['registry']}/afkit/none:1"],
                          env=env, capture_output=True, text=True, check=False, timeout=120)  # fmt: skip
    assert proc.returncode != 0
    assert "401" in proc.stderr or "unauthorized" in proc.stderr.lower(), proc.stderr[-2000:]


def test_the_jobs_registry_login_came_with_them(campaign: Run) -> None:
    """alpes's jobs pulled the image with the login they took along (no AFKIT_REGISTRY_INSECURE, a
    registry that wants a login); the login file was named in their specs, by path."""
    _, results, _ = campaign
    specs = sorted(results.glob("jobspec/*/alpes.*.json"))
    assert len(specs) == 3
    assert {json.loads(p.read_text())["registry_login"] for p in specs} == {"/home/afkit/.docker/config.json"}


def test_no_program_the_run_started_got_the_token_in_its_arguments_or_environment(campaign: Run) -> None:
    """strace of the run (afkit, snakemake, the submissions, the image's ROOT writing the AO2D
    file, the pulls): each program's command line and environment hold the token's path at most."""
    trace = TRACE.read_bytes()
    assert trace.count(b"execve(") > 20 and b"sbatch" in trace and b"root.exe" in trace
    assert b"BEARER_TOKEN_FILE=/afkit-credentials/token" in trace  # ROOT's, in its container
    assert not any(s in trace for s in _secrets(TOKEN))


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


# the federation's studies in the box, tiny (test_study.py runs them larger on the open
# federation): (study, its arguments, the image it needs as build/NAME). gsi-trains generates
# random data through the doors; dcotf-xcache has the image's ROOT write AOD and ESD through them
# and reads them through frankfurt's caches (xcache, xcache-dca, dcotf), which fetch from gsi with
# their own service tokens
GUARDED_STUDIES = {
    "gsi-trains": ("--scale 0.1 --set repetitions=1", "bench.sif"),
    "dcotf-xcache": ("--set nodes=[1] --set repetitions=1 --set micro_duration=1 --set micro_file_mb=4 "
                     "--set micro_files=1 --set analysis_clients=[1] --set aod_mb=4 --set esd_mb=4",
                     "alice-root.sif"),
}  # fmt: skip


@pytest.mark.parametrize("study", GUARDED_STUDIES)
def test_a_study_runs_on_the_guarded_federation_with_a_token(
    state: dict[str, Any], tokens: Path, bench_sif: Path, alice_root_sif: Path, study: str
) -> None:
    """A federation study in the box, guarded: its campaign names the token as every storage's
    credential (--token), generates its data through the doors, every job succeeds and every
    claim is evaluated (whatever it says at this scale)."""
    args, image = GUARDED_STUDIES[study]
    work = Path(tempfile.mkdtemp(prefix="afkit-guarded-study-", dir="/tmp"))
    (work / "build").mkdir()
    (work / "build" / image).symlink_to(bench_sif if image == "bench.sif" else alice_root_sif)
    tok = token(tokens, "storage.read:/", "storage.create:/")
    try:
        proc = itsupport.sh(f"afkit study run {study} {args} --token {tok}", cwd=work, timeout=900)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        page = work / proc.stdout.strip().splitlines()[-1]
        claims = json.loads((page.parent / "verdicts.json").read_text())["claims"]
        assert claims and all(
            c["status"] in ("pass", "fail", "not judgeable") and c["measured"] for c in claims
        )
        rows = (page.parent.parent / "aggregate" / "jobs.csv").read_text().splitlines()
        assert len(rows) > 3 and all(",ok," in r for r in rows[1:]), rows[:5]
        made = yaml.safe_load((work / "studies" / study / "campaign.yaml").read_text())
        assert {s["credential"]["token"] for s in made["storage"].values()} == {str(tok)}
    finally:
        shutil.rmtree(work, ignore_errors=True)
        for site in SITES:
            shutil.rmtree(Path(state["sites"][site]["data"]) / "afkit" / "study", ignore_errors=True)


# docs/federation.md, "X.509 proxies": the admin's line (root), then the user's (user afkit, from
# the repository), after the walkthrough (its image pushed, its registry login)
USERCERT_LINE = "afkit federation usercert --owner afkit -o /home/afkit/.globus"
X509_USER_LINES = (
    "xrdgsiproxy init -valid 12:00 -out ~/x509up",
    "mkdir -p ~/federation-x509 && cp workflows/config/federation-x509.yaml ~/federation-x509/C.yaml",
    "cd ~/federation-x509 && afkit campaign run C.yaml",
)
PROXY = Path("/home/afkit/x509up")
X509_TRACE = Path("/home/afkit/x509-run.strace")  # the X.509 campaign's run, as TRACE the token one's
X509_WORK = Path("/home/afkit/federation-x509")
ALPES_LOG = Path("/srv/federation/alpes/storage/origin/origin/xrootd.log")  # its origin's
GSI_LOGIN = "login as x509:users"  # xrootd's login line of a proxy's user (afkit.storage.render)


@pytest.fixture(scope="module")
def x509(campaign: Run, checkout: Path) -> Iterator[tuple[list[dict[str, str]], Path, int, list[str]]]:
    """The X.509 lines as written. Yields (rows of jobs.csv, results, the gsi logins alpes's origin
    logged during the run, the proxy key's lines)."""
    env = _afkit_env(checkout)
    shutil.rmtree(X509_WORK, ignore_errors=True)
    try:
        ok(itsupport.sh(USERCERT_LINE))
        before = ALPES_LOG.read_text(errors="replace").count(GSI_LOGIN)
        for line in X509_USER_LINES:
            run = "campaign run" in line
            cmd = [*AS_AFKIT, *(_traced(X509_TRACE) if run else []), "bash", "-c", line]
            with _batch_records_meanwhile(LIVE_X509) if run else contextlib.nullcontext():
                proc = subprocess.run(cmd, cwd=checkout, env=env, capture_output=True, text=True, check=False,
                                      timeout=900)  # fmt: skip
            assert proc.returncode == 0, f"{line}: exit {proc.returncode}: {proc.stderr[-4000:]}"
        logins = ALPES_LOG.read_text(errors="replace").count(GSI_LOGIN) - before
        [results] = (X509_WORK / "results").iterdir()
        with (results / "aggregate" / "jobs.csv").open(encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh))
        yield rows, results, logins, itsupport.proxy_key(PROXY)
    finally:
        shutil.rmtree(Path("/srv/federation/alpes/data/x509"), ignore_errors=True)  # the data made here
        shutil.rmtree(X509_WORK, ignore_errors=True)
        shutil.rmtree(Path("/home/afkit/.globus"), ignore_errors=True)
        PROXY.unlink(missing_ok=True)
        X509_TRACE.unlink(missing_ok=True)


X509Run = tuple[list[dict[str, str]], Path, int, list[str]]


def test_every_sites_job_reads_alpes_data_with_the_x509_proxy(x509: X509Run) -> None:
    rows, _, logins, _ = x509
    steps = [r for r in rows if r["bench"] == "steps"]
    assert sorted(r["site"] for r in steps) == ["alpes", "frankfurt", "gsi"]
    for r in rows:
        assert r["status"] == "ok", f"{r['id']}: {r['error']}"
        assert r["url"].startswith("roots://10.77.3.1:1094/"), r["url"]
    assert all(int(r["bytes"]) >= 4_000_000 for r in steps)
    assert logins >= len(rows)  # alpes's origin logged each job's (and the door's) gsi login


def test_the_images_root_writes_and_reads_ao2d_with_the_proxy(x509: X509Run) -> None:
    """The tag's ROOT wrote the AO2D file through alpes's door and read it at gsi and alpes: its
    own XRootD client (the tag's, not the base's) presented the proxy."""
    rows, results, _, _ = x509
    analysis = [r for r in rows if r["bench"] == "analysis"]
    assert sorted(r["site"] for r in analysis) == ["alpes", "gsi"]
    assert all(r["payload"] == "root" and int(r["events"]) > 0 for r in analysis), analysis
    made = Path("/srv/federation/alpes/data/x509/ao2d-0000.root")
    assert made.owner() == "xrootd"  # the server wrote it: it came through the door
    assert "roots://10.77.3.1:1094" in (results / "dataset" / "alpes-ao2d.log").read_text()


def test_alpes_jobs_took_the_proxy_and_the_ca_folder_along(x509: X509Run) -> None:
    rows, results, _, _ = x509
    assert {r["submit_files"] for r in rows if r["site"] == "alpes"} == {"transferred"}
    specs = sorted(results.glob("jobspec/*/alpes.*.json"))
    assert len(specs) == 2
    for spec in specs:
        cred = json.loads(spec.read_text())["credential"]
        assert cred == {"kind": "proxy", "path": str(PROXY), "ca": "/srv/federation/guard/pki/certificates"}


def test_no_file_the_x509_campaign_wrote_holds_the_proxys_key(x509: X509Run) -> None:
    _, _, _, key = x509
    written = [p for p in X509_WORK.rglob("*") if p.is_file()]
    assert any(p.name == "jobs.csv" for p in written)
    for path in written:
        text = path.read_text(errors="replace")
        assert not any(line in text for line in key), f"{path} holds the proxy's key"


def test_no_program_command_line_or_batch_record_of_the_x509_campaign_holds_the_proxys_key(
    x509: X509Run,
) -> None:
    """strace of the run (every execve's arguments and environment), and condor_q -l / scontrol
    show job sampled while its jobs were queued and running: the proxy's path, never its key."""
    _, _, _, key = x509
    trace = X509_TRACE.read_text(errors="replace")
    assert trace.count("execve(") > 20 and "X509_USER_PROXY=/afkit-credentials/proxy" in trace
    assert any(str(PROXY) in t for t in LIVE_X509)  # alpes's jobs took the file along, by path
    for text in (trace, *LIVE_X509):
        assert not any(line in text for line in key)


def test_a_proxy_is_refused_where_the_origin_takes_tokens_only(x509: X509Run, state: dict[str, Any]) -> None:
    """gsi's origin offers ztn only: the proxy that reads at alpes gets nothing there."""
    src = state["sites"]["gsi"]["storage_url"] + "//" + "x.bin"
    line = f"X509_USER_PROXY={PROXY} xrdcp -f {src} /dev/null"
    env = {"PATH": os.environ["PATH"], "HOME": "/home/afkit"}
    proc = subprocess.run([*AS_AFKIT, "bash", "-c", line], env=env, capture_output=True, text=True,
                          check=False, timeout=120)  # fmt: skip
    assert proc.returncode != 0 and "no protocols left to try" in proc.stderr.lower(), proc.stderr
