"""A guarded storage's credential: checked before any job (afkit.campaign.credentials), handed to
each job as a read-only file in its container (afkit.campaign.job.credential_binds)."""

from __future__ import annotations

import json
import posixpath
import re
from pathlib import Path
from typing import Any

import jwt
import pytest

from afkit.campaign import credentials, job, plan
from afkit.campaign.contract import CredentialSpec, JobSpec
from afkit.errors import InvalidError, NotFoundError, PrereqError, UnsafeError

NOW = 1_800_000_000.0


def token_file(folder: Path, scope: str, exp: float | None = NOW + 3600, mode: int = 0o600) -> Path:
    """A token (signed with a test key: afkit does not check signatures, the storage does)."""
    claims: dict[str, Any] = {"iss": "https://issuer.example", "aud": "a", "scope": scope, "wlcg.ver": "1.0"}
    if exp is not None:
        claims["exp"] = int(exp)
    path = folder / "bt"
    path.write_text(jwt.encode(claims, "test-key-of-32-bytes-or-more-....", algorithm="HS256"))
    path.chmod(mode)
    return path


def guarded(raw: dict[str, Any], token: Path, **more: object) -> dict[str, Any]:
    raw["storage"]["disk"]["credential"] = {"token": str(token), **more}
    return raw


def test_a_token_whose_scopes_cover_the_reads_passes(raw: dict[str, Any], make: Any, tmp_path: Path) -> None:
    c = make(guarded(raw, token_file(tmp_path, "storage.read:/data storage.create:/data")))
    assert credentials.check(c, now=NOW) == []


def test_a_missing_token_file_is_exit_5(raw: dict[str, Any], make: Any, tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match=r"storage disk: token file .*nope not found"):
        credentials.check(make(guarded(raw, tmp_path / "nope")), now=NOW)


@pytest.mark.parametrize(("what", "says"), [("folder", "a directory"), ("/dev/null", "a character device")])
def test_a_token_path_that_is_no_file_is_exit_5_naming_what_it_is(
    raw: dict[str, Any], make: Any, tmp_path: Path, what: str, says: str
) -> None:
    """Was: a directory of mode 0700 passed the owner check and its read raised IsADirectoryError."""
    path = tmp_path / what if what == "folder" else Path(what)
    if what == "folder":
        path.mkdir(mode=0o700)
    with pytest.raises(NotFoundError, match=f"token file {path} is {says}, not a file") as err:
        credentials.check(make(guarded(raw, path)), now=NOW)
    assert err.value.hint == "name the file itself in storage.disk.credential.token"


def test_a_token_others_can_read_is_refused_naming_the_fix(
    raw: dict[str, Any], make: Any, tmp_path: Path
) -> None:
    path = token_file(tmp_path, "storage.read:/", mode=0o644)
    with pytest.raises(UnsafeError, match="can be read by others") as err:
        credentials.check(make(guarded(raw, path)), now=NOW)
    assert err.value.hint == f"chmod 600 {path} (XRootD refuses it too)"


def test_an_expired_token_is_refused_with_its_time(raw: dict[str, Any], make: Any, tmp_path: Path) -> None:
    path = token_file(tmp_path, "storage.read:/", exp=NOW - 1)
    with pytest.raises(PrereqError, match=r"expired at 2027-01-15 07:59:59 UTC"):
        credentials.check(make(guarded(raw, path)), now=NOW)


def test_a_token_expiring_within_the_margin_warns(raw: dict[str, Any], make: Any, tmp_path: Path) -> None:
    path = token_file(tmp_path, "storage.read:/ storage.create:/", exp=NOW + 100)
    [warning] = credentials.check(make(guarded(raw, path, expiry_margin=300)), now=NOW)
    assert "in 100 s (within expiry_margin 300 s)" in warning
    assert path.read_text() not in warning  # never the secret


def test_a_token_that_cannot_read_a_file_is_refused_with_its_scopes(
    raw: dict[str, Any], make: Any, tmp_path: Path
) -> None:
    path = token_file(tmp_path, "storage.read:/data/other storage.create:/data")
    with pytest.raises(PrereqError, match=r"does not allow reading /data/") as err:
        credentials.check(make(guarded(raw, path)), now=NOW)
    assert "its scopes: storage.read:/data/other storage.create:/data" in str(err.value)
    assert err.value.hint is not None and err.value.hint.startswith("get a token with storage.read:/data")


def test_a_file_that_is_no_token_is_exit_6(raw: dict[str, Any], make: Any, tmp_path: Path) -> None:
    path = tmp_path / "bt"
    path.write_text("not a token")
    path.chmod(0o600)
    with pytest.raises(InvalidError, match="not a WLCG token"):
        credentials.check(make(guarded(raw, path)), now=NOW)


def test_a_guarded_storage_at_a_site_without_shared_files_is_checked_like_any(
    raw: dict[str, Any], make: Any, tmp_path: Path
) -> None:
    """Its jobs take the credential along by HTCondor file transfer (test_job.py, in_sandbox)."""
    raw["sites"]["here"].update(shared_fs=False, executor="htcondor")
    raw["image"] = {"sif": "oras://registry.example/afkit/bench:1"}
    token = token_file(tmp_path, "storage.read:/ storage.create:/")
    assert credentials.check(make(guarded(raw, token)), now=NOW) == []


def test_token_and_proxy_together_are_refused(raw: dict[str, Any], make: Any, tmp_path: Path) -> None:
    with pytest.raises(InvalidError, match="give one of token"):
        make(guarded(raw, tmp_path / "bt", proxy=str(tmp_path / "x509")))


def test_a_job_of_a_guarded_storage_has_its_files_in_its_spec(
    raw: dict[str, Any], make: Any, tmp_path: Path
) -> None:
    token = token_file(tmp_path, "storage.read:/")
    c = make(guarded(raw, token, ca=str(tmp_path / "ca.pem")))
    [spec, *_] = plan.specs(c, plan.expand(c))
    assert spec.credential == CredentialSpec("token", str(token), str(tmp_path / "ca.pem"))
    assert JobSpec.from_json(spec.to_json()).credential == spec.credential
    assert token.read_text() not in spec.to_json()  # the path, never the secret


def test_an_open_storages_spec_has_no_credential(raw: dict[str, Any], make: Any) -> None:
    c = make(raw)
    [spec, *_] = plan.specs(c, plan.expand(c))
    assert '"credential"' not in spec.to_json()  # the specs (and digests) of open storages as before


def test_the_job_gets_the_files_read_only_and_their_paths_in_its_environment() -> None:
    binds, env = job.credential_binds(CredentialSpec("token", "/run/user/1000/bt_u1000", "/etc/fed/ca.pem"))
    assert binds == [
        "/run/user/1000/bt_u1000:/afkit-credentials/token:ro",
        "/etc/fed/ca.pem:/afkit-credentials/ca.pem:ro",
    ]
    assert env == {
        "BEARER_TOKEN_FILE": "/afkit-credentials/token",
        "X509_CERT_FILE": "/afkit-credentials/ca.pem",
    }
    assert job.credential_binds(CredentialSpec()) == ([], {})


def test_the_submit_hosts_client_uses_the_credential(tmp_path: Path) -> None:
    cred = credentials.Credential("disk", "proxy", tmp_path / "x509", None, 600)
    assert cred.client_env() == {"X509_USER_PROXY": str(tmp_path / "x509")}


def test_a_failed_job_whose_token_expired_says_so(tmp_path: Path) -> None:
    path = token_file(tmp_path, "storage.read:/", exp=NOW - 30)
    said = job.credential_expired(CredentialSpec("token", str(path)), when=NOW)
    assert said == f"token expired at 2027-01-15 07:59:30 UTC ({path}; renew it, then retry): "
    assert job.credential_expired(CredentialSpec("token", str(path)), when=NOW - 60) == ""  # not yet then
    assert job.credential_expired(CredentialSpec(), when=NOW) == ""


def test_a_sandboxed_jobs_expired_token_is_named_by_the_users_file(tmp_path: Path) -> None:
    """At a site without the shared filesystem the job reads its sandbox's copy (HTCondor put it
    there); the word names the user's file, the one to renew (it named the copy)."""
    given = token_file(tmp_path, "storage.read:/", exp=NOW - 30)
    (tmp_path / "sandbox").mkdir()
    (tmp_path / "sandbox" / given.name).write_bytes(given.read_bytes())  # as the file transfer does
    copy = job.in_sandbox(CredentialSpec("token", str(given)), tmp_path / "sandbox")
    said = job.credential_expired(copy, when=NOW, named=str(given))
    assert f"({given}; renew it, then retry)" in said and str(tmp_path / "sandbox") not in said


def proxy_file(folder: Path, end: float, mode: int = 0o600) -> Path:
    """A PEM certificate (valid until END) and its key, as a proxy file holds them."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import NameOID

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name(
        [x509.NameAttribute(NameOID.COMMON_NAME, "alice"), x509.NameAttribute(NameOID.COMMON_NAME, "1")]
    )
    at = datetime.datetime.fromtimestamp(end, datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(1).not_valid_before(at - datetime.timedelta(hours=12)).not_valid_after(at)
            .sign(key, hashes.SHA256()))  # fmt: skip
    path = folder / "x509up_u1000"
    pem = serialization.Encoding.PEM
    plain = serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    path.write_bytes(cert.public_bytes(pem) + key.private_bytes(pem, *plain))
    path.chmod(mode)
    return path


def with_proxy(raw: dict[str, Any], proxy: Path, **more: object) -> dict[str, Any]:
    raw["storage"]["disk"]["credential"] = {"proxy": str(proxy), **more}
    return raw


def test_a_valid_proxy_with_its_ca_folder_passes(raw: dict[str, Any], make: Any, tmp_path: Path) -> None:
    c = make(with_proxy(raw, proxy_file(tmp_path, NOW + 3600), ca=str(tmp_path)))
    assert credentials.check(c, now=NOW) == []


def test_an_expired_proxy_is_refused_with_its_time_and_how_to_make_one(
    raw: dict[str, Any], make: Any, tmp_path: Path
) -> None:
    c = make(with_proxy(raw, proxy_file(tmp_path, NOW - 1), ca=str(tmp_path)))
    with pytest.raises(
        PrereqError, match=r"storage disk: the proxy in .*x509up_u1000 expired at 2027-01-15 07:59:59 UTC"
    ) as err:
        credentials.check(c, now=NOW)
    assert "xrdgsiproxy init" in str(err.value.hint)


def test_a_proxy_expiring_within_the_margin_warns(raw: dict[str, Any], make: Any, tmp_path: Path) -> None:
    c = make(with_proxy(raw, proxy_file(tmp_path, NOW + 60), ca=str(tmp_path)))
    [warning] = credentials.check(c, now=NOW)
    assert warning.startswith("afkit: warning: storage disk: the proxy in ") and "in 60 s" in warning


def test_a_proxy_others_can_read_is_refused(raw: dict[str, Any], make: Any, tmp_path: Path) -> None:
    c = make(with_proxy(raw, proxy_file(tmp_path, NOW + 3600, mode=0o640), ca=str(tmp_path)))
    with pytest.raises(UnsafeError, match=r"proxy file .* can be read by others"):
        credentials.check(c, now=NOW)


def test_a_file_that_is_no_proxy_is_exit_6(raw: dict[str, Any], make: Any, tmp_path: Path) -> None:
    path = tmp_path / "x509up"
    path.write_text("not a certificate\n")
    path.chmod(0o600)
    with pytest.raises(InvalidError, match=r"not an X\.509 proxy"):
        credentials.check(make(with_proxy(raw, path, ca=str(tmp_path))), now=NOW)


@pytest.mark.parametrize("ca", ["bundle", "default"])
def test_a_proxy_needs_a_folder_of_cas(
    ca: str, raw: dict[str, Any], make: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """XRootD's gsi checks the server against CAs by subject hash: a bundle does not do; without
    ``ca``, /etc/grid-security/certificates (here absent)."""
    monkeypatch.setattr(credentials, "GRID_CERTS", tmp_path / "no-grid-security")
    (tmp_path / "ca.pem").write_text("c")
    more = {"ca": str(tmp_path / "ca.pem")} if ca == "bundle" else {}
    c = make(with_proxy(raw, proxy_file(tmp_path, NOW + 3600), **more))
    with pytest.raises(NotFoundError, match=r"no folder of CAs .* for its X\.509 proxy") as err:
        credentials.check(c, now=NOW)
    assert "storage.disk.credential.ca" in str(err.value.hint)


def test_a_proxys_end_is_read_on_a_day_of_one_digit(tmp_path: Path) -> None:
    """openssl pads such a day with a space: "Dec  1 08:00:00 2026 GMT"."""
    from afkit.campaign import proxies

    end = 1796112000.0  # 2026-12-01 08:00:00 UTC
    assert proxies.not_after(proxy_file(tmp_path, end)) == end


def test_a_failed_job_whose_proxy_expired_says_so(tmp_path: Path) -> None:
    path = proxy_file(tmp_path, NOW - 30)
    said = job.credential_expired(CredentialSpec("proxy", str(path)), when=NOW)
    assert said == f"proxy expired at 2027-01-15 07:59:30 UTC ({path}; renew it, then retry): "
    assert job.credential_expired(CredentialSpec("proxy", str(path)), when=NOW - 60) == ""


def test_a_proxy_job_gets_the_ca_folder_as_x509_cert_dir(tmp_path: Path) -> None:
    binds, env = job.credential_binds(CredentialSpec("proxy", "/tmp/x509up_u1000", str(tmp_path)))
    assert binds == [
        "/tmp/x509up_u1000:/afkit-credentials/proxy:ro",
        f"{tmp_path}:/afkit-credentials/certificates:ro",
    ]
    assert env == {
        "X509_USER_PROXY": "/afkit-credentials/proxy",
        "X509_CERT_DIR": "/afkit-credentials/certificates",
    }


def test_a_transferred_ca_folder_is_found_in_the_sandbox(tmp_path: Path) -> None:
    (tmp_path / "x509up_u1000").write_text("p")
    (tmp_path / "certificates").mkdir()
    moved = job.in_sandbox(
        CredentialSpec("proxy", "/tmp/x509up_u1000", "/etc/grid-security/certificates"), tmp_path
    )
    assert moved == CredentialSpec("proxy", str(tmp_path / "x509up_u1000"), str(tmp_path / "certificates"))


def test_a_transferred_credential_is_found_at_the_top_of_the_sandbox_owner_only(tmp_path: Path) -> None:
    """A site without the submit host's files: HTCondor put the files by their names at the top
    of the sandbox (afkit.campaign.jobcore.credential_files lists them)."""
    (tmp_path / "bt_u1000").write_text("t")
    (tmp_path / "bt_u1000").chmod(0o644)
    (tmp_path / "ca.pem").write_text("c")
    moved = job.in_sandbox(CredentialSpec("token", "/run/user/1000/bt_u1000", "/etc/fed/ca.pem"), tmp_path)
    assert moved == CredentialSpec("token", str(tmp_path / "bt_u1000"), str(tmp_path / "ca.pem"))
    assert (tmp_path / "bt_u1000").stat().st_mode & 0o777 == 0o600


def test_a_credential_that_did_not_reach_the_sandbox_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="token file bt_u1000 did not reach the job's sandbox"):
        job.in_sandbox(CredentialSpec("token", "/run/user/1000/bt_u1000"), tmp_path)


def test_a_job_of_a_site_without_shared_files_takes_its_credential_along(
    raw: dict[str, Any], make: Any, tmp_path: Path
) -> None:
    import dataclasses
    from types import SimpleNamespace

    from afkit.campaign import jobcore

    c = make(raw)
    planned = plan.specs(c, plan.expand(c))[0]
    path = tmp_path / "spec.json"

    def batch_job(shared_fs: bool, cred: CredentialSpec) -> Any:
        site = dataclasses.replace(planned.site, shared_fs=shared_fs)
        path.write_text(dataclasses.replace(planned, site=site, credential=cred).to_json())
        return SimpleNamespace(name="job", input=SimpleNamespace(spec=str(path)), is_group=lambda: False)

    cred = CredentialSpec("token", "/run/user/1000/bt_u1000", "/etc/fed/ca.pem")
    assert jobcore.credential_files(batch_job(False, cred)) == ["/run/user/1000/bt_u1000", "/etc/fed/ca.pem"]
    assert jobcore.credential_files(batch_job(True, cred)) == []  # the worker reads the submit host's file
    assert jobcore.credential_files(batch_job(False, CredentialSpec())) == []  # an open storage


# ---------------------------------------------------------------- the registry login (image.login)


def login_file(folder: Path, mode: int = 0o600) -> Path:
    """A Docker-style auth file, as `apptainer registry login --authfile FILE` writes it."""
    path = folder / "registry-login.json"
    path.write_text(json.dumps({"auths": {"registry.example:5000": {"auth": "dXNlcjpwYXNz"}}}))
    path.chmod(mode)
    return path


def with_login(raw: dict[str, Any], login: Path, unshared: bool = True) -> dict[str, Any]:
    raw["image"] = {"sif": "oras://registry.example:5000/afkit/bench:1", "login": str(login)}
    if unshared:
        raw["sites"]["here"].update(shared_fs=False, executor="htcondor")
    return raw


def test_a_registry_login_is_for_an_oras_image(raw: dict[str, Any], make: Any, tmp_path: Path) -> None:
    raw["image"]["login"] = str(login_file(tmp_path))
    with pytest.raises(InvalidError, match=r"image\.login: a registry login is for an oras:// image"):
        make(raw)


def test_a_missing_registry_login_is_exit_5(raw: dict[str, Any], make: Any, tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match=r"registry login .*nope not found") as err:
        credentials.check(make(with_login(raw, tmp_path / "nope")), now=NOW)
    assert err.value.code == 5


def test_a_registry_login_others_can_read_is_refused(raw: dict[str, Any], make: Any, tmp_path: Path) -> None:
    login = login_file(tmp_path, mode=0o644)
    with pytest.raises(UnsafeError, match=r"registry login .* can be read by others") as err:
        credentials.check(make(with_login(raw, login)), now=NOW)
    assert err.value.hint == f"chmod 600 {login} (it holds the registry password)"


def test_only_jobs_of_sites_without_shared_files_carry_the_login(
    raw: dict[str, Any], make: Any, tmp_path: Path
) -> None:
    """Those pull the image themselves; the others run the submit host's pull (their specs, and
    digests, as before)."""
    login = login_file(tmp_path)
    raw = with_login(raw, login)
    raw["sites"]["there"] = {"executor": "local", "storage": "disk"}
    raw["benchmarks"][0]["sites"] = ["here", "there"]
    c = make(raw)
    by_site = {s.job.site: s for s in plan.specs(c, plan.expand(c))}
    assert by_site["here"].registry_login == str(login)
    assert json.loads(by_site["here"].to_json())["registry_login"] == str(login)
    assert "registry_login" not in json.loads(by_site["there"].to_json())
    assert JobSpec.from_json(by_site["here"].to_json()) == by_site["here"]


def test_the_pull_uses_the_login_file() -> None:
    from afkit.image import apptainer

    cmd = apptainer.pull_command("oras://r:5000/a/b:1", Path("/s/x.sif"), binary="apptainer",
                                 authfile=Path("/h/login.json"))  # fmt: skip
    assert cmd == ["apptainer", "pull", "--authfile", "/h/login.json", "/s/x.sif", "oras://r:5000/a/b:1"]


@pytest.mark.parametrize(
    ("generate", "first"),
    [
        (None, "/data/afkit-gen-0000.dat"),  # the base campaign's random files
        ({"kind": "ao2d", "count": 1, "size_mb": 1, "prefix": "ao2d/f"}, "/data/ao2d/f-0000.root"),
    ],
    ids=["random", "ao2d"],
)
def test_a_token_that_cannot_create_the_generated_files_is_refused(
    raw: dict[str, Any], make: Any, tmp_path: Path, generate: dict[str, Any] | None, first: str
) -> None:
    """The dataset rule writes a guarded storage's generated files through its door, with the
    token: random ones, and the AO2D the image's ROOT writes (afkit.campaign.dataset)."""
    if generate is not None:
        raw["datasets"]["gen"]["generate"] = generate
    path = token_file(tmp_path, "storage.read:/ storage.create:/data/other")
    with pytest.raises(PrereqError, match=f"does not allow writing {re.escape(first)}") as err:
        credentials.check(make(guarded(raw, path)), now=NOW)
    assert err.value.hint.startswith(f"get a token with storage.create:{posixpath.dirname(first)}")


def test_the_image_root_of_a_guarded_dataset_gets_the_tokens_path_not_the_token(tmp_path: Path) -> None:
    """ROOT in the image reads the server's file with the token: bound read-only, its path (never
    its text) in the container's environment, as a job's payload gets it."""
    from afkit.campaign.dataset import image_root_command

    info = tmp_path / "image.json"
    info.write_text(json.dumps({"path": str(tmp_path / "x.sif"), "sha256": "0" * 64}))
    cred = CredentialSpec("token", "/home/u/federation.token", "/srv/ca.pem")
    cmd, _ = image_root_command(str(info), tmp_path / "stage", ["--userns"], cred)
    assert "/home/u/federation.token:/afkit-credentials/token:ro" in cmd
    assert "/srv/ca.pem:/afkit-credentials/ca.pem:ro" in cmd
    assert "--env=BEARER_TOKEN_FILE=/afkit-credentials/token" in cmd
    assert "--env=X509_CERT_FILE=/afkit-credentials/ca.pem" in cmd
    assert f"{tmp_path / 'stage'}:{tmp_path / 'stage'}" in cmd
