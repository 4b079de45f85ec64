"""A guarded origin with a real xrootd: TLS from the box's CA, WLCG tokens (ztn + the SciTokens
plugin), the box's token issuer serving its keys over HTTPS, and X.509 proxies of the box's CA's
users in its grid-mapfile (gsi). Anonymous requests are refused, a token's scopes are enforced per
path and operation by the server (also now that a request no token allows goes on to the X.509
account's grants). Runs inside the testbed.
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
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import itsupport
import pytest
import yaml
from cryptography.hazmat.primitives.asymmetric import ec
from itsupport import ok
from waitsupport import wait_until

from afkit.campaign import proxies
from afkit_testbed import issuer, pki

DATA = Path(os.environ.get("AFKIT_XROOTD_DATA", "/srv/xrootd/data"))
BASE = "12294"  # clear of the testbed origin (1094), the other storage tests and the default ports
AUD = "https://afkit.example/guarded"
CONTENT = os.urandom(1 << 20)
MAPPED = "alice"  # the user the origin's grid-mapfile names


@dataclass
class Guarded:
    url: str  # roots://127.0.0.1:PORT
    bundle: Path
    tokens: Path  # a folder for token files
    key: ec.EllipticCurvePrivateKey
    issuer_url: str
    log: Path  # the origin's xrootd log
    data: Path  # the folder the origin exports
    certdir: Path  # the CAs, hashed (X509_CERT_DIR)
    users: Path  # a folder per user: ~/.globus's usercert.pem and userkey.pem

    def log_tail(self) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-25:])

    def token(self, *scopes: str, lifetime: int = 600) -> Path:
        """A token file (mode 0600, as ztn wants it) with SCOPES."""
        path = self.tokens / f"{uuid.uuid4().hex}.token"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(issuer.issue(self.key, self.issuer_url, issuer.Grant(scopes, AUD, lifetime=lifetime)))
        return path

    def proxy(
        self, user: str, valid: str = "1:00", ca: pki.Pair | None = None, out: Path | None = None
    ) -> Path:
        """A proxy of USER's certificate (made by CA, default the box's), valid VALID (h:mm; "0:00":
        it ends as it is made), as a grid user makes one: ``xrdgsiproxy init`` (into OUT, or a new
        file)."""
        ca = ca or pki.ensure_ca(self.certdir.parent)
        # one folder per user and CA (two CAs may have the same name and subject hash)
        folder = self.users / f"{user}@{hashlib.sha256(ca.cert.read_bytes()).hexdigest()[:12]}"
        if not (folder / "usercert.pem").is_file():
            folder.mkdir(mode=0o700)
            pki.user_certificate(ca, folder, user)
        certdir = pki.ca_dir(ca, folder / "certificates")
        out = out or self.tokens / f"x509up_{uuid.uuid4().hex}"
        out.unlink(missing_ok=True)
        made = subprocess.run(["xrdgsiproxy", "init", "-cert", str(folder / "usercert.pem"),
                               "-key", str(folder / "userkey.pem"), "-certdir", str(certdir),
                               "-out", str(out), "-valid", valid],
                              capture_output=True, text=True, check=False, timeout=60)  # fmt: skip
        assert out.is_file(), made.stdout + made.stderr
        return out

    def xrdcp(
        self, src: str, dst: str, token: Path | None, proxy: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        env = {
            k: v for k, v in os.environ.items() if not k.startswith(("BEARER_TOKEN", "XDG_RUNTIME", "X509_"))
        }
        env["X509_CERT_FILE"] = str(self.bundle)
        if token is not None:
            env["BEARER_TOKEN_FILE"] = str(token)
        if proxy is not None:
            env |= {"X509_USER_PROXY": str(proxy), "X509_CERT_DIR": str(self.certdir)}
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
    server = pki.server_certificate(ca, work / "pki", "origin", ["127.0.0.1", "localhost"], kind="rsa")
    certdir = pki.ca_dir(ca, work / "pki" / "certificates")
    gridmap = work / "grid-mapfile"
    gridmap.write_text(f'"{pki.user_subject(MAPPED)}" {MAPPED}\n')
    key = issuer.ensure_key(work / "issuer.key")
    tls = pki.server_certificate(ca, work / "pki", "issuer", ["127.0.0.1"])
    running = issuer.serve(key, tls, "127.0.0.1")
    tokens = work / "tokens"
    tokens.mkdir(mode=0o700)
    up = ["storage", "up", "origin", "--state-dir", str(work / "state"), "--data", str(data),
          "--tls-cert", str(server.cert), "--tls-key", str(server.key), "--tls-ca", str(bundle),
          "--token-issuer", running.url, "--token-audience", AUD,
          "--x509-certdir", str(certdir), "--x509-gridmap", str(gridmap)]  # fmt: skip
    try:
        ok(itsupport.afkit(*up, env={"AFKIT_STORAGE_BASE_PORT": BASE}))
        log = work / "state" / "origin" / "origin" / "xrootd.log"
        users = work / "users"
        users.mkdir(mode=0o700)
        yield Guarded(
            f"roots://127.0.0.1:{BASE}", bundle, tokens, key, running.url, log, data, certdir, users
        )
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


def test_a_proxy_of_a_mapped_user_reads_and_writes(guarded: Guarded, tmp_path: Path) -> None:
    proxy = guarded.proxy(MAPPED)
    proc = guarded.xrdcp(f"{guarded.url}//secret/a.bin", str(tmp_path / "a"), token=None, proxy=proxy)
    assert proc.returncode == 0, proc.stderr + guarded.log_tail()
    assert (tmp_path / "a").read_bytes() == CONTENT
    done = guarded.xrdcp(str(tmp_path / "a"), f"{guarded.url}//gen/x509.bin", token=None, proxy=proxy)
    assert done.returncode == 0, done.stderr + guarded.log_tail()
    assert (guarded.data / "gen" / "x509.bin").read_bytes() == CONTENT


def test_a_proxy_of_a_user_not_in_the_gridmap_is_refused(guarded: Guarded, tmp_path: Path) -> None:
    proc = guarded.xrdcp(f"{guarded.url}//ok/a.bin", str(tmp_path / "a"), token=None,
                         proxy=guarded.proxy("mallory"))  # fmt: skip
    assert proc.returncode != 0
    assert "auth" in proc.stderr.lower(), proc.stderr
    assert not (tmp_path / "a").exists()


def test_a_proxy_from_another_ca_is_refused(guarded: Guarded, tmp_path: Path) -> None:
    """The mapped user's DN, on a certificate of a CA the server does not trust (of the same name
    as the trusted CA's, so the server finds a CA by the certificate's issuer hash: the signature
    is what fails)."""
    proxy = guarded.proxy(MAPPED, ca=pki.ensure_ca(tmp_path / "other-ca"))
    proc = guarded.xrdcp(f"{guarded.url}//ok/a.bin", str(tmp_path / "a"), token=None, proxy=proxy)
    assert proc.returncode != 0
    assert not (tmp_path / "a").exists()


def expired(proxy: Path) -> Path:
    """PROXY, once its end has passed: a certificate is valid through the whole second of its
    notAfter (xrootd src/XrdCrypto/XrdCryptoX509.cc, IsValid: now <= NotAfter, in seconds)."""
    end = proxies.not_after(proxy)
    return wait_until(lambda: time.time() >= end + 1 and proxy, timeout=5, what=f"the end of {proxy}")


def test_an_expired_proxy_is_refused(guarded: Guarded, tmp_path: Path) -> None:
    proxy = expired(guarded.proxy(MAPPED, valid="0:00"))
    proc = guarded.xrdcp(f"{guarded.url}//ok/a.bin", str(tmp_path / "a"), token=None, proxy=proxy)
    assert proc.returncode != 0
    assert not (tmp_path / "a").exists()


def run_campaign(
    guarded: Guarded,
    bench_sif: Path,
    work: Path,
    token: Path,
    generate: str = "",
    step: str = "run",
    credential: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """`afkit campaign run` of one read job on the guarded storage, the campaign naming TOKEN's file
    and the CA bundle (nothing of either in the environment), or CREDENTIAL when given; with
    GENERATE, of a dataset of one random file the campaign generates under that prefix (STEP
    "dataset": only that step's command)."""
    port = guarded.url.rsplit(":", 1)[1]
    raw = {
        "name": "guarded", "image": {"sif": str(bench_sif)}, "results": str(work / "results"),
        "sites": {"wn": {"executor": "local", "storage": "guarded", "scratch": str(work / "scratch"),
                         "apptainer_args": ["--userns"]}},
        "storage": {"guarded": {"url": f"roots://127.0.0.1:{port}", "export": "/",
                                "credential": credential or {"token": str(token),
                                                             "ca": str(guarded.bundle)}}},
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


def test_a_campaign_reads_with_an_x509_proxy_and_its_ca_folder(
    guarded: Guarded, bench_sif: Path, tmp_path: Path
) -> None:
    """A proxy instead of a token: the job's XRootD client (the image's) authenticates with gsi,
    the proxy and the CA folder bound read-only into its container (X509_USER_PROXY,
    X509_CERT_DIR); nothing afkit writes holds the proxy's key."""
    proxy = guarded.proxy(MAPPED)
    cred = {"proxy": str(proxy), "ca": str(guarded.certdir)}
    proc = run_campaign(guarded, bench_sif, tmp_path, proxy, credential=cred)
    assert proc.returncode == 0, proc.stderr[-3000:] + guarded.log_tail()
    [jobs_csv] = (tmp_path / "results").glob("*/aggregate/jobs.csv")
    [row] = list(csv.DictReader(jobs_csv.open()))
    assert row["status"] == "ok" and int(row["bytes"]) >= len(CONTENT), row["error"]
    assert "login as x509:users" in guarded.log.read_text()  # xrootd's login line: gsi, mapped
    key = itsupport.proxy_key(proxy)
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p != proxy]
    assert [p for p in written if any(line in p.read_text(errors="replace") for line in key)] == []


def test_a_campaign_with_an_expired_token_stops_before_any_job(
    guarded: Guarded, bench_sif: Path, tmp_path: Path
) -> None:
    proc = run_campaign(guarded, bench_sif, tmp_path, guarded.token("storage.read:/ok", lifetime=-60))
    assert proc.returncode == 3, proc.stderr[-3000:]
    assert "afkit: error: storage guarded: the token in" in proc.stderr and "expired at" in proc.stderr
    assert not list(tmp_path.glob("results/*/job"))


def credential_file(guarded: Guarded, kind: str, out: Path, ended: bool = False) -> Path:
    """OUT holding a token (storage.read:/ok) or an X.509 proxy (of the mapped user), ENDED or
    valid for a while; the same file each time, as a user renews theirs."""
    if kind == "token":
        out.write_text(guarded.token("storage.read:/ok", lifetime=-60 if ended else 600).read_text())
        out.chmod(0o600)
        return out
    proxy = guarded.proxy(MAPPED, valid="0:00" if ended else "1:00", out=out)
    return expired(proxy) if ended else proxy


@pytest.mark.parametrize("kind", ["token", "proxy"])
def test_a_job_whose_credential_expired_records_it_and_retry_after_renewal_completes_it(
    kind: str, guarded: Guarded, bench_sif: Path, tmp_path: Path
) -> None:
    """The credential's file ends after the campaign was planned: the job (rerun by hand, as
    `snakemake -p` shows it) fails naming the end, not the network; renewed in the same file,
    `afkit campaign retry --failed` completes it. A proxy ends by `xrdgsiproxy init -valid 0:00`
    into the same file."""
    path = credential_file(guarded, kind, tmp_path / kind)
    cred = {kind: str(path), "ca": str(guarded.certdir if kind == "proxy" else guarded.bundle)}
    assert run_campaign(guarded, bench_sif, tmp_path, path, credential=cred).returncode == 0
    [spec] = (tmp_path / "results").glob("*/jobspec/read/*.json")
    record = Path(str(spec).replace("/jobspec/", "/job/"))
    credential_file(guarded, kind, path, ended=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BEARER_TOKEN", "X509_"))}
    by_hand = [sys.executable, "-m", "afkit", "campaign", "job", str(spec), "-o", str(record)]
    subprocess.run(by_hand, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    failed = json.loads(record.read_text())
    assert failed["status"] == "failed"
    assert failed["error"].startswith(f"{kind} expired at ") and f"({path}; renew it" in failed["error"]
    credential_file(guarded, kind, path)  # renewed
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
