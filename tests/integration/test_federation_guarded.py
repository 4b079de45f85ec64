"""The guarded federation (``afkit federation up --guarded``, docs/federation.md "Guarded
federation"): every origin and cache speaks TLS with a certificate of the federation's CA and takes
WLCG tokens of the federation's issuer only; each cache fetches from its origin with its own
service token. Checks that the servers refuse anonymous reads and writes, enforce a token's scopes
per path, serve a read token at every origin and through every cache, and that a 3-site campaign
(gsi on SLURM, frankfurt and alpes on HTCondor, alpes without the shared filesystem: its jobs take
the token along by HTCondor file transfer) reads every site's data with a token file only, which
no file the campaign writes contains.

The module switches the running federation to guarded, and afterwards back to open (the other
federation tests use the open one): it runs with them, alone (tests/integration/conftest.py).
"""

from __future__ import annotations

import base64
import csv
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
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


# ----------------------------------------------------------------------------- a 3-site campaign


PASSWORD = Path("/srv/federation/guard/registry.password")  # the guarded registry's (root's copy)


def _secrets(path: Path) -> list[bytes]:
    """The token's text and the forms a leak could take (base64 of it, each of its JWT segments),
    and the registry's password (and the base64 of the user:password a Docker login file holds)."""
    text = path.read_text(encoding="utf-8").strip()
    password = PASSWORD.read_text(encoding="utf-8").strip()
    return [text.encode(), base64.b64encode(text.encode()), *(s.encode() for s in text.split(".")),
            password.encode(), base64.b64encode(f"afkit:{password}".encode())]  # fmt: skip


@pytest.fixture(scope="module")
def campaign(state: dict[str, Any], bench_sif: Path, tokens: Path) -> Iterator[tuple[Path, Path, Path]]:
    """workflows/config/federation-workers.yaml with the bench image (pushed under a tag of this
    module), one small random dataset at gsi, the storages' roots:// URLs and a token (read,
    create) owned by user afkit under /home/afkit (which alpes's workers do not see): run as afkit.
    Yields (campaign file, results, token)."""
    tag = f"oras://{state['registry']}/afkit/bench:guarded-{uuid.uuid4().hex[:8]}"
    env = {**os.environ, "HOME": "/home/afkit", "USER": "afkit", "LOGNAME": "afkit"}
    Path("/home/afkit/.docker/config.json").unlink(missing_ok=True)  # a login of before
    # docs/federation.md, "Guarded federation": the admin gives user afkit the registry's password,
    # who logs in with apptainer (the login in ~/.docker/config.json) and pushes
    ok(itsupport.sh("afkit federation password --owner afkit -o /home/afkit/registry.password"))
    for line in (LOGIN, f"apptainer push {bench_sif} {tag}"):
        ok(subprocess.run([*AS_AFKIT, "bash", "-c", line], cwd="/home/afkit", env=env, capture_output=True,
                          text=True, check=False, timeout=300))  # fmt: skip
    work = Path(tempfile.mkdtemp(prefix="afkit-guarded-", dir="/home/afkit"))
    prefix = f"guarded-{uuid.uuid4().hex[:8]}"
    # docs/federation.md, "Guarded federation": the admin gives user afkit a token (read; create:
    # the campaign generates its dataset through gsi's door)
    ok(itsupport.sh(TOKEN_LINE))
    tok = Path("/home/afkit/federation.token")
    raw: dict[str, Any] = yaml.safe_load((REPO / "workflows/config/federation-workers.yaml").read_text())
    raw["name"] = "guarded"
    raw["image"] = {"sif": tag, "login": "/home/afkit/.docker/config.json"}
    del raw["sites"]["alpes"]["env"]  # no AFKIT_REGISTRY_INSECURE: the registry speaks HTTPS
    for site, store in raw["storage"].items():
        store["url"] = state["sites"][site]["storage_url"]
        store["credential"] = {"token": str(tok), "ca": state["guard"]["ca_bundle"]}
    raw["datasets"] = {
        "gsi-data": {"storage": "gsi", "generate": {"count": 1, "size_mb": 4, "prefix": f"{prefix}/blob"}}
    }
    raw["benchmarks"] = [{"name": "steps", "type": "steps", "sites": list(SITES), "datasets": ["gsi-data"]}]
    cfile = work / "C.yaml"
    cfile.write_text(yaml.safe_dump(raw), encoding="utf-8")
    subprocess.run(["chown", "-R", "afkit:afkit", str(work)], check=True)
    try:
        # every program the run starts, with its arguments and environment (strace -v: whole)
        traced = ["strace", "-f", "-qq", "-v", "-s", "1000000", "-e", "trace=execve", "-o", str(TRACE)]
        proc = subprocess.run([*AS_AFKIT, *traced, "afkit", "campaign", "run", "C.yaml"], cwd=work, env=env,
                              capture_output=True, text=True, check=False, timeout=900)  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-4000:]
        [results] = (work / "results").iterdir()
        yield cfile, results, tok
    finally:
        for site in SITES:
            shutil.rmtree(Path(state["sites"][site]["data"]) / prefix, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
        subprocess.run([*AS_AFKIT, "apptainer", "registry", "logout", f"oras://{state['registry']}"], env=env,
                       capture_output=True, check=False, timeout=60)  # fmt: skip
        for secret in (
            TRACE,
            tok,
            Path("/home/afkit/registry.password"),
            Path("/home/afkit/.docker/config.json"),
        ):
            secret.unlink(missing_ok=True)


def test_a_three_site_campaign_reads_guarded_storage_with_a_token_file(
    campaign: tuple[Path, Path, Path],
) -> None:
    _, results, _ = campaign
    with (results / "aggregate" / "jobs.csv").open(encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert sorted(r["site"] for r in rows) == sorted(SITES)
    assert {r["status"] for r in rows} == {"ok"}, [(r["id"], r["error"]) for r in rows]
    assert all(r["url"].startswith(("roots://", "/srv/federation/")) for r in rows), [r["url"] for r in rows]
    alpes = [r for r in rows if r["site"] == "alpes"]
    assert [r["submit_files"] for r in alpes] == ["transferred"]  # its token came by file transfer


def test_the_token_file_is_the_users_and_readable_by_them_only(campaign: tuple[Path, Path, Path]) -> None:
    _, _, tok = campaign
    info = tok.stat()
    assert (info.st_uid, info.st_mode & 0o777) == (pwd.getpwnam("afkit").pw_uid, 0o600)


def test_no_file_the_guarded_campaign_wrote_holds_the_token(campaign: tuple[Path, Path, Path]) -> None:
    cfile, _, tok = campaign
    secrets = _secrets(tok)
    written = [p for p in cfile.parent.rglob("*") if p.is_file()]
    assert any(p.name == "jobs.csv" for p in written) and len(written) > 20
    for path in written:
        data = path.read_bytes()
        assert not any(s in data for s in secrets), f"{path} holds the token"


def test_the_batch_systems_records_hold_the_tokens_path_not_the_token(
    campaign: tuple[Path, Path, Path],
) -> None:
    """HTCondor's job ads (condor_history -l: the arguments, environment and transfer lists of the
    campaign's jobs) and SLURM's (scontrol show job) name the token's file, never its text."""
    _, _, tok = campaign
    secrets = _secrets(tok)
    ads = subprocess.run(["condor_history", "-l", "afkit", "-limit", "50"], capture_output=True, text=True,
                         check=False, timeout=60).stdout  # fmt: skip
    assert str(tok) in ads  # alpes's job took the file along (transfer_input_files)
    slurm = subprocess.run(["scontrol", "show", "job"], capture_output=True, text=True, check=False,
                           timeout=60).stdout  # fmt: skip
    for text in (ads, slurm):
        assert not any(s.decode() in text for s in secrets)


def test_the_registry_refuses_a_pull_without_its_login(state: dict[str, Any], tmp_path: Path) -> None:
    """HTTPS with the federation's CA (trusted in the testbed: no --no-https, no variable) and a
    login: root has none here."""
    env = {**os.environ, "HOME": str(tmp_path)}
    proc = subprocess.run(["apptainer", "pull", str(tmp_path / "x.sif"), f"oras://{state['registry']}/afkit/none:1"],
                          env=env, capture_output=True, text=True, check=False, timeout=120)  # fmt: skip
    assert proc.returncode != 0
    assert "401" in proc.stderr or "unauthorized" in proc.stderr.lower(), proc.stderr[-2000:]


def test_the_jobs_registry_login_came_with_them_and_went_with_them(campaign: tuple[Path, Path, Path]) -> None:
    """alpes's job pulled the image with the login it took along (no AFKIT_REGISTRY_INSECURE, a
    registry that wants a login); the login file was named in its spec, by path."""
    _, results, _ = campaign
    [spec] = (results / "jobspec" / "steps").glob("alpes.*.json")
    assert json.loads(spec.read_text())["registry_login"] == "/home/afkit/.docker/config.json"
    with (results / "aggregate" / "jobs.csv").open(encoding="utf-8") as fh:
        [alpes] = [r for r in csv.DictReader(fh) if r["site"] == "alpes"]
    assert alpes["image_cache"] in ("hit", "miss") and alpes["status"] == "ok"


def test_no_program_the_run_started_got_the_token_in_its_arguments_or_environment(
    campaign: tuple[Path, Path, Path],
) -> None:
    """strace of the run (afkit, snakemake, the submissions, the pulls): each program's command
    line and environment hold the token's path at most."""
    _, _, tok = campaign
    trace = TRACE.read_bytes()
    assert trace.count(b"execve(") > 20 and b"sbatch" in trace and b"apptainer" in trace
    assert not any(s in trace for s in _secrets(tok))


def test_a_study_runs_on_the_guarded_federation_with_a_token(
    state: dict[str, Any], tokens: Path, bench_sif: Path
) -> None:
    """The GSI trains study in the box, guarded: its campaign names the token as every storage's
    credential (--token), generates its data through the doors and judges every claim."""
    work = Path(tempfile.mkdtemp(prefix="afkit-guarded-study-", dir="/tmp"))
    (work / "build").mkdir()
    (work / "build" / "bench.sif").symlink_to(bench_sif)
    tok = token(tokens, "storage.read:/", "storage.create:/")
    try:
        # tiny (test_study.py runs it larger on the open federation): the claims are evaluated,
        # whatever they say at this scale
        line = f"afkit study run gsi-trains --scale 0.1 --set repetitions=1 --token {tok}"
        proc = itsupport.sh(line, cwd=work, timeout=900)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        page = work / proc.stdout.strip().splitlines()[-1]
        claims = json.loads((page.parent / "verdicts.json").read_text())["claims"]
        assert claims and all(
            c["status"] in ("pass", "fail", "not judgeable") and c["measured"] for c in claims
        )
        rows = (page.parent.parent / "aggregate" / "jobs.csv").read_text().splitlines()
        assert len(rows) > 3 and all(",ok," in r for r in rows[1:]), rows[:5]
        made = yaml.safe_load((work / "studies" / "gsi-trains" / "campaign.yaml").read_text())
        assert {s["credential"]["token"] for s in made["storage"].values()} == {str(tok)}
    finally:
        shutil.rmtree(work, ignore_errors=True)
        for site in SITES:
            shutil.rmtree(Path(state["sites"][site]["data"]) / "afkit" / "study", ignore_errors=True)
