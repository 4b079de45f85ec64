"""A guarded origin with a real xrootd: TLS from the box's CA, WLCG tokens (ztn + the SciTokens
plugin), the box's token issuer serving its keys over HTTPS. Anonymous requests are refused, a
token's scopes are enforced per path and operation by the server. Runs inside the testbed.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import itsupport
import pytest
import yaml
from cryptography.hazmat.primitives.asymmetric import ec
from itsupport import ok

from afkit_testbed import issuer, pki

DATA = Path(os.environ.get("AFKIT_XROOTD_DATA", "/srv/xrootd/data"))
BASE = "12294"  # clear of the testbed origin (1094), the other storage tests and the default ports
AUD = "https://afkit.example/guarded"
CONTENT = os.urandom(1 << 20)


@dataclass
class Guarded:
    url: str  # roots://127.0.0.1:PORT
    bundle: Path
    tokens: Path  # a folder for token files
    key: ec.EllipticCurvePrivateKey
    issuer_url: str
    log: Path  # the origin's xrootd log
    data: Path  # the folder the origin exports

    def log_tail(self) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-25:])

    def token(self, *scopes: str, lifetime: int = 600) -> Path:
        """A token file (mode 0600, as ztn wants it) with SCOPES."""
        path = self.tokens / f"{uuid.uuid4().hex}.token"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(issuer.issue(self.key, self.issuer_url, issuer.Grant(scopes, AUD, lifetime=lifetime)))
        return path

    def xrdcp(self, src: str, dst: str, token: Path | None) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("BEARER_TOKEN", "XDG_RUNTIME"))}
        env["X509_CERT_FILE"] = str(self.bundle)
        if token is not None:
            env["BEARER_TOKEN_FILE"] = str(token)
        return subprocess.run(["xrdcp", "-f", "-s", src, dst], env=env, capture_output=True, text=True,
                              check=False, timeout=60)  # fmt: skip


@pytest.fixture(scope="module")
def guarded() -> Iterator[Guarded]:
    work = Path(tempfile.mkdtemp(prefix="afkit-guarded-it-", dir="/tmp"))
    work.chmod(0o755)  # the daemon runs as the xrootd user
    data = DATA / f"afkit-guarded-it-{uuid.uuid4().hex[:8]}"
    for sub in ("ok", "secret", "gen"):
        (data / sub).mkdir(parents=True)
    (data / "ok" / "a.bin").write_bytes(CONTENT)
    (data / "secret" / "a.bin").write_bytes(CONTENT)
    for path in (data, *data.rglob("*")):
        shutil.chown(path, "xrootd", "xrootd")
    ca = pki.ensure_ca(work / "pki")
    bundle = pki.trust_bundle(ca, work / "pki")
    server = pki.server_certificate(ca, work / "pki", "origin", ["127.0.0.1", "localhost"])
    key = issuer.ensure_key(work / "issuer.key")
    tls = pki.server_certificate(ca, work / "pki", "issuer", ["127.0.0.1"])
    running = issuer.serve(key, tls, "127.0.0.1")
    tokens = work / "tokens"
    tokens.mkdir(mode=0o700)
    up = ["storage", "up", "origin", "--state-dir", str(work / "state"), "--data", str(data),
          "--tls-cert", str(server.cert), "--tls-key", str(server.key), "--tls-ca", str(bundle),
          "--token-issuer", running.url, "--token-audience", AUD]  # fmt: skip
    try:
        ok(itsupport.afkit(*up, env={"AFKIT_STORAGE_BASE_PORT": BASE}))
        log = work / "state" / "origin" / "origin" / "xrootd.log"
        yield Guarded(f"roots://127.0.0.1:{BASE}", bundle, tokens, key, running.url, log, data)
    finally:
        itsupport.afkit("storage", "down", "all", "--state-dir", str(work / "state"),
                        env={"AFKIT_STORAGE_BASE_PORT": BASE})  # fmt: skip
        running.stop()
        shutil.rmtree(data, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)


def test_an_anonymous_read_is_refused(guarded: Guarded, tmp_path: Path) -> None:
    proc = guarded.xrdcp(f"{guarded.url}//ok/a.bin", str(tmp_path / "a"), token=None)
    assert proc.returncode != 0
    assert "auth" in proc.stderr.lower(), proc.stderr  # refused at login, not at the file
    assert not (tmp_path / "a").exists()


def test_a_read_token_reads_under_its_path(guarded: Guarded, tmp_path: Path) -> None:
    token = guarded.token("storage.read:/ok")
    proc = guarded.xrdcp(f"{guarded.url}//ok/a.bin", str(tmp_path / "a"), token)
    assert proc.returncode == 0, proc.stderr + guarded.log_tail()
    assert (tmp_path / "a").read_bytes() == CONTENT


def test_a_read_token_reads_nothing_outside_its_path(guarded: Guarded, tmp_path: Path) -> None:
    token = guarded.token("storage.read:/ok")
    proc = guarded.xrdcp(f"{guarded.url}//secret/a.bin", str(tmp_path / "a"), token)
    assert proc.returncode != 0
    assert "permission" in proc.stderr.lower() or "not authorized" in proc.stderr.lower(), proc.stderr


def test_a_read_token_writes_nothing(guarded: Guarded, tmp_path: Path) -> None:
    (tmp_path / "new.bin").write_bytes(CONTENT)
    token = guarded.token("storage.read:/ok")
    proc = guarded.xrdcp(str(tmp_path / "new.bin"), f"{guarded.url}//ok/new.bin", token)
    assert proc.returncode != 0


def test_a_create_token_writes_under_its_path_only(guarded: Guarded, tmp_path: Path) -> None:
    (tmp_path / "new.bin").write_bytes(CONTENT)
    token = guarded.token("storage.create:/gen", "storage.read:/gen")
    done = guarded.xrdcp(str(tmp_path / "new.bin"), f"{guarded.url}//gen/new.bin", token)
    assert done.returncode == 0, done.stderr + guarded.log_tail()
    back = guarded.xrdcp(f"{guarded.url}//gen/new.bin", str(tmp_path / "back.bin"), token)
    assert back.returncode == 0 and (tmp_path / "back.bin").read_bytes() == CONTENT
    refused = guarded.xrdcp(str(tmp_path / "new.bin"), f"{guarded.url}//ok/new.bin", token)
    assert refused.returncode != 0


def test_an_expired_token_is_refused(guarded: Guarded, tmp_path: Path) -> None:
    token = guarded.token("storage.read:/ok", lifetime=-60)
    proc = guarded.xrdcp(f"{guarded.url}//ok/a.bin", str(tmp_path / "a"), token)
    assert proc.returncode != 0
    assert "expired" in proc.stderr.lower() + guarded.log_tail().lower(), proc.stderr + guarded.log_tail()
    assert not (tmp_path / "a").exists()


def run_campaign(
    guarded: Guarded, bench_sif: Path, work: Path, token: Path, generate: str = "", step: str = "run"
) -> subprocess.CompletedProcess[str]:
    """`afkit campaign run` of one read job on the guarded storage, the campaign naming TOKEN's file
    and the CA bundle (nothing of either in the environment); with GENERATE, of a dataset of one
    random file the campaign generates under that prefix (STEP "dataset": only that step's command)."""
    port = guarded.url.rsplit(":", 1)[1]
    raw = {
        "name": "guarded", "image": {"sif": str(bench_sif)}, "results": str(work / "results"),
        "sites": {"wn": {"executor": "local", "storage": "guarded", "scratch": str(work / "scratch"),
                         "apptainer_args": ["--userns"]}},
        "storage": {"guarded": {"url": f"roots://127.0.0.1:{port}", "export": "/",
                                "credential": {"token": str(token), "ca": str(guarded.bundle)}}},
        "datasets": {"ok": {"storage": "guarded", "files": ["ok/a.bin"]}},
        "locations": {"default": "remote"},
        "benchmarks": [{"name": "read", "type": "read", "sites": ["wn"], "datasets": ["ok"], "duration": 1,
                        "interval": 0.5, "sweep": {"block_size": ["64k"]}}],
    }  # fmt: skip
    if generate:
        raw["datasets"] = {
            "ok": {"storage": "guarded", "generate": {"count": 1, "size_mb": 1, "prefix": generate}}
        }
    cfile = work / "c.yaml"
    cfile.write_text(yaml.safe_dump(raw), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BEARER_TOKEN", "X509_"))}
    run = [
        sys.executable,
        "-m",
        "afkit",
        "campaign",
        step,
        str(cfile),
        *(["ok"] if step == "dataset" else []),
    ]
    return subprocess.run(run, cwd=work, env=env, capture_output=True, text=True, timeout=600)


def test_a_campaign_reads_the_guarded_storage_with_its_token(
    guarded: Guarded, bench_sif: Path, tmp_path: Path
) -> None:
    """The user's path: afkit checks the token before any job, each job reads with it (bound
    read-only into its container), nothing afkit writes holds the token."""
    token = guarded.token("storage.read:/ok")
    proc = run_campaign(guarded, bench_sif, tmp_path, token)
    assert proc.returncode == 0, proc.stderr[-3000:] + guarded.log_tail()
    [jobs_csv] = (tmp_path / "results").glob("*/aggregate/jobs.csv")
    [row] = list(csv.DictReader(jobs_csv.open()))
    assert row["status"] == "ok", row["error"]
    assert int(row["bytes"]) >= len(CONTENT)
    secret = token.read_text().strip()
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p != token]
    assert [p for p in written if secret in p.read_text(errors="replace")] == []


def test_a_campaign_with_an_expired_token_stops_before_any_job(
    guarded: Guarded, bench_sif: Path, tmp_path: Path
) -> None:
    proc = run_campaign(guarded, bench_sif, tmp_path, guarded.token("storage.read:/ok", lifetime=-60))
    assert proc.returncode == 3, proc.stderr[-3000:]
    assert "afkit: error: storage guarded: the token in" in proc.stderr and "expired at" in proc.stderr
    assert not list(tmp_path.glob("results/*/job"))


def test_a_job_whose_token_expired_records_it_and_retry_after_renewal_completes_it(
    guarded: Guarded, bench_sif: Path, tmp_path: Path
) -> None:
    """The token file expires after the campaign was planned: the job (rerun by hand, as `snakemake
    -p` shows it) fails naming the expiry, not the network; renewed in the same file, `afkit
    campaign retry --failed` completes it."""
    token = guarded.token("storage.read:/ok")
    assert run_campaign(guarded, bench_sif, tmp_path, token).returncode == 0
    [spec] = (tmp_path / "results").glob("*/jobspec/read/*.json")
    record = Path(str(spec).replace("/jobspec/", "/job/"))
    token.write_text(guarded.token("storage.read:/ok", lifetime=-60).read_text())  # expired, same file
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BEARER_TOKEN", "X509_"))}
    by_hand = [sys.executable, "-m", "afkit", "campaign", "job", str(spec), "-o", str(record)]
    subprocess.run(by_hand, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    failed = json.loads(record.read_text())
    assert failed["status"] == "failed"
    assert failed["error"].startswith("token expired at ") and f"({token}; renew it" in failed["error"]
    token.write_text(guarded.token("storage.read:/ok").read_text())  # renewed
    retry = [sys.executable, "-m", "afkit", "campaign", "retry", "--failed", str(tmp_path / "c.yaml")]
    done = subprocess.run(retry, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(record.read_text())["status"] == "ok"


REFUSED, GENERATED = "gen/refused", "gen/made"  # prefixes of a generated dataset's one file (1 MB)


def test_a_token_that_cannot_create_a_generated_dataset_stops_the_campaign_before_any_job(
    guarded: Guarded, bench_sif: Path, tmp_path: Path
) -> None:
    proc = run_campaign(guarded, bench_sif, tmp_path, guarded.token("storage.read:/gen"), generate=REFUSED)
    assert proc.returncode == 3, proc.stderr[-3000:]
    assert "does not allow writing /gen/refused-0000.dat, a file of a generated dataset" in proc.stderr
    assert (
        not list(tmp_path.glob("results/*/job")) and not (guarded.data / "gen" / "refused-0000.dat").exists()
    )


def test_the_dataset_step_run_by_hand_without_the_scope_is_refused_by_the_server(
    guarded: Guarded, bench_sif: Path, tmp_path: Path
) -> None:
    """afkit's check bypassed (the step's own command): the server refuses the write."""
    token = guarded.token("storage.read:/gen")
    proc = run_campaign(guarded, bench_sif, tmp_path, token, generate=REFUSED, step="dataset")
    assert proc.returncode == 3, proc.stderr[-3000:]
    assert "the storage refused writing /gen/refused-0000.dat" in proc.stderr
    assert not (guarded.data / "gen" / "refused-0000.dat").exists()


def test_a_create_token_generates_the_dataset_through_the_door_and_the_job_reads_it(
    guarded: Guarded, bench_sif: Path, tmp_path: Path
) -> None:
    token = guarded.token("storage.read:/gen", "storage.create:/gen")
    proc = run_campaign(guarded, bench_sif, tmp_path, token, generate=GENERATED)
    assert proc.returncode == 0, proc.stderr[-3000:] + guarded.log_tail()
    made = guarded.data / "gen" / "made-0000.dat"
    assert made.stat().st_size == 1_000_000 and made.owner() == "xrootd"  # written by the server
    assert made.stat().st_mode & 0o777 == 0o644  # the site's own jobs read it (storage.path), as xrdcp writes
    [jobs_csv] = (tmp_path / "results").glob("*/aggregate/jobs.csv")
    [row] = list(csv.DictReader(jobs_csv.open()))
    assert row["status"] == "ok" and int(row["bytes"]) >= 1_000_000, row["error"]
