"""The federation's CA and token issuer (afkit_testbed.pki, afkit_testbed.issuer), checked with the
field's own verifier: scitokens fetches the issuer's keys over HTTPS as storage does."""

from __future__ import annotations

import json
import ssl
import stat
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import scitokens
import yaml
from cryptography.hazmat.primitives.asymmetric import ec

from afkit_testbed import issuer, pki
from afkit_testbed.federation import links

AUD = "https://afkit.example"


@pytest.fixture
def serving(tmp_path: Path) -> Iterator[tuple[issuer.Running, Path, ec.EllipticCurvePrivateKey]]:
    ca = pki.ensure_ca(tmp_path / "pki")
    tls = pki.server_certificate(ca, tmp_path / "pki", "issuer", ["127.0.0.1"])
    bundle = pki.trust_bundle(ca, tmp_path / "pki")
    key = issuer.ensure_key(tmp_path / "issuer" / "issuer.key")
    running = issuer.serve(key, tls, "127.0.0.1")
    try:
        yield running, bundle, key
    finally:
        running.stop()


@pytest.fixture
def trusting(serving: tuple[issuer.Running, Path, ec.EllipticCurvePrivateKey], tmp_path: Path,
             monkeypatch: pytest.MonkeyPatch) -> issuer.Running:  # fmt: skip
    """scitokens' verifier trusting the box's CA (SSL_CERT_FILE), its key cache in TMP_PATH."""
    running, bundle, _key = serving
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return running


def test_keys_are_readable_by_their_owner_only(tmp_path: Path) -> None:
    ca = pki.ensure_ca(tmp_path)
    server = pki.server_certificate(ca, tmp_path, "origin", ["10.0.0.1", "origin.example"])
    key = tmp_path / "issuer.key"
    issuer.ensure_key(key)
    for path in (ca.key, server.key, key):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    assert stat.S_IMODE(server.cert.stat().st_mode) == 0o644


def test_the_issuer_is_trusted_through_the_bundle_and_only_through_it(
    serving: tuple[issuer.Running, Path, ec.EllipticCurvePrivateKey],
) -> None:
    running, bundle, _key = serving
    url = running.url + issuer.WELL_KNOWN
    trusted = ssl.create_default_context(cafile=str(bundle))
    with urllib.request.urlopen(url, context=trusted, timeout=10) as response:
        assert json.load(response)["jwks_uri"] == running.url + "/jwks"
    system_only = ssl.create_default_context(cafile=str(pki.SYSTEM_BUNDLE))
    with pytest.raises(urllib.error.URLError, match="CERTIFICATE_VERIFY_FAILED"):
        urllib.request.urlopen(url, context=system_only, timeout=10)


def test_a_token_is_verified_with_the_keys_the_issuer_serves(
    trusting: issuer.Running, serving: tuple[issuer.Running, Path, ec.EllipticCurvePrivateKey]
) -> None:
    key = serving[2]
    token = issuer.issue(key, trusting.url, issuer.Grant(("storage.read:/data",), AUD))
    verified = scitokens.SciToken.deserialize(token, audience=AUD)
    assert verified["iss"] == trusting.url and verified["wlcg.ver"] == "1.0"
    assert verified["scope"] == "storage.read:/data"


def test_a_token_signed_by_another_key_is_refused(trusting: issuer.Running, tmp_path: Path) -> None:
    forged = issuer.issue(ec.generate_private_key(ec.SECP256R1()), trusting.url,
                          issuer.Grant(("storage.read:/",), AUD))  # fmt: skip
    with pytest.raises(Exception, match=r"[Ss]ignature"):
        scitokens.SciToken.deserialize(forged, audience=AUD)


def test_a_server_certificate_names_an_address_as_ip_and_as_dns_name(tmp_path: Path) -> None:
    """XRootD's host check matches DNS-type names only (xrootd src/XrdTls/XrdTlsNotaryUtils.icc):
    a roots://10.77.1.1 client finds the address among them; OpenSSL and Go find it as an IP."""
    from cryptography import x509

    ca = pki.ensure_ca(tmp_path / "pki")
    pair = pki.server_certificate(ca, tmp_path / "pki", "origin", ["10.77.1.1", "gsi"])
    san = (
        x509.load_pem_x509_certificate(pair.cert.read_bytes())
        .extensions.get_extension_for_class(x509.SubjectAlternativeName)
        .value
    )
    assert san.get_values_for_type(x509.DNSName) == ["10.77.1.1", "gsi"]
    assert [str(a) for a in san.get_values_for_type(x509.IPAddress)] == ["10.77.1.1"]


def test_the_guarded_federations_urls_use_tls() -> None:
    from afkit_testbed.federation import guard

    assert guard.scheme("root://10.77.1.1:1094", True) == "roots://10.77.1.1:1094"
    assert guard.scheme("root://10.77.1.1:1094", False) == "root://10.77.1.1:1094"


def test_the_guarded_registry_serves_https_and_wants_a_login(tmp_path: Path) -> None:
    from afkit_testbed.federation import batch

    guard = batch.RegistryGuard(tmp_path / "r.pem", tmp_path / "r.key", tmp_path / "htpasswd")
    guarded = yaml.safe_load(batch.registry_config(tmp_path / "store", guard))
    assert guarded["http"]["tls"] == {"certificate": str(tmp_path / "r.pem"), "key": str(tmp_path / "r.key")}
    assert guarded["auth"]["htpasswd"]["path"] == str(tmp_path / "htpasswd")
    plain = yaml.safe_load(batch.registry_config(tmp_path / "store", None))
    assert "tls" not in plain["http"] and "auth" not in plain


def _key(path: Path) -> object:
    from cryptography.hazmat.primitives import serialization

    return serialization.load_pem_private_key(path.read_bytes(), password=None)


def test_an_x509_sites_origin_gets_an_rsa_certificate_and_the_proxy_options(tmp_path: Path) -> None:
    """gsi signs with RSA only; the site's caches (tokens only) keep EC keys."""
    from cryptography.hazmat.primitives.asymmetric import rsa

    from afkit_testbed.federation import guard

    x509_site = links.Site("alpes", 3, links.Link(200_000_000, 0), x509=True)
    args = guard.storage_args(tmp_path, x509_site, "origin", "")
    opts = dict(zip(args[::2], args[1::2], strict=True))
    assert opts["--x509-certdir"] == str(tmp_path / "guard" / "pki" / "certificates")
    assert opts["--x509-gridmap"] == str(tmp_path / "guard" / "grid-mapfile")
    assert isinstance(_key(Path(opts["--tls-key"])), rsa.RSAPrivateKey)
    plain = guard.storage_args(tmp_path, links.Site("gsi", 1, links.Link(200_000_000, 0)), "origin", "")
    assert "--x509-certdir" not in plain
    assert isinstance(_key(Path(plain[plain.index("--tls-key") + 1])), ec.EllipticCurvePrivateKey)


def test_a_user_certificate_is_an_rsa_grid_certificate_under_the_federations_users(tmp_path: Path) -> None:
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import rsa

    from afkit_testbed.federation import guard

    ca = pki.ensure_ca(tmp_path / "pki")
    (tmp_path / "globus").mkdir()
    pair = pki.user_certificate(ca, tmp_path / "globus", "alice")
    cert = x509.load_pem_x509_certificate(pair.cert.read_bytes())
    assert cert.subject.rfc4514_string() == "CN=alice,OU=users,O=afkit federation"
    assert pki.user_subject("alice") == "/O=afkit federation/OU=users/CN=alice"
    assert guard.GRIDMAP == '"^/O=afkit federation/OU=users/" users\n'  # every such DN, a prefix
    assert isinstance(_key(pair.key), rsa.RSAPrivateKey)
    # as grid tools expect (and docs/federation.md says): the key the user's alone, the certificate public
    assert stat.S_IMODE(pair.key.stat().st_mode) == 0o600
    assert stat.S_IMODE(pair.cert.stat().st_mode) == 0o644


def test_usercert_refuses_an_open_federation(tmp_path: Path) -> None:
    from afkit.errors import PrereqError
    from afkit_testbed.federation import guard

    with pytest.raises(PrereqError, match="not guarded"):
        guard.issue_usercert(tmp_path, tmp_path / "globus", None)


@pytest.mark.parametrize("handing", ["token", "usercert", "password"])
def test_a_user_who_is_not_the_admin_is_told_to_run_it_as_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, handing: str
) -> None:
    """As user afkit saw it: the issuer's key and the password are root's (0600); was a
    PermissionError traceback. The admin's secrets made unreadable as they are to a user."""
    import os

    from afkit.errors import ExitCode, PrereqError
    from afkit_testbed.federation import guard

    guard.guard_dir(tmp_path).mkdir(parents=True)
    (guard.guard_dir(tmp_path) / "issuer.key").write_text("key")
    guard.password_file(tmp_path).write_text("pw")
    monkeypatch.setattr(os, "access", lambda _p, _m: False)
    calls = {
        "token": lambda: guard.issue_token(tmp_path, ["storage.read:/"], tmp_path / "t", 60, None),
        "usercert": lambda: guard.issue_usercert(tmp_path, tmp_path / "globus", None),
        "password": lambda: guard.give_password(tmp_path, tmp_path / "p", None),
    }
    with pytest.raises(PrereqError, match="is its admin's: you cannot read it") as err:
        calls[handing]()
    assert err.value.code == ExitCode.PREREQ and "run this as root" in str(err.value.hint)
    assert (
        not (tmp_path / "t").exists() and not (tmp_path / "p").exists() and not (tmp_path / "globus").exists()
    )
