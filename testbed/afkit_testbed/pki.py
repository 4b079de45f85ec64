"""The federation's own certificate authority: TLS for its origins, caches and token issuer.

Real WLCG storage speaks TLS with host certificates from a CA the grid trusts (IGTF); XRootD's
token protocol ``ztn`` refuses to send a token over a connection that is not TLS. The box has no
grid CA, so it makes its own (:func:`ensure_ca`) and a certificate per server, naming the
addresses clients use (:func:`server_certificate`: an IP address is a subjectAltName of type IP,
as OpenSSL's host check wants it). Clients trust the box's CA through one bundle,
:func:`trust_bundle`: the host's own CAs plus the box's, so a program that also talks to real
HTTPS sites keeps working (``SSL_CERT_FILE``, ``X509_CERT_FILE``, XRootD's ``xrd.tlsca``).

Grid users hold a certificate of their own (:func:`user_certificate`, the files of
``~/.globus``) and sign short-lived proxies with it (``xrdgsiproxy init``) for storage that
accepts X.509 (XRootD's ``gsi``). ``gsi`` speaks RSA only (xrootd src/XrdSecgsi: the session key
is taken from the server's certificate with XrdCryptoFactory::RSA, and the client signs with its
proxy's RSA key): user certificates, and the certificates of servers that accept proxies, have RSA
keys (KEY_KINDS); every other server an EC P-256 key.

Keys are written with mode 0600 and never leave the state directory; certificates are 0644.
Made with ``cryptography`` (the library PyJWT and scitokens sign with).
"""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import subprocess
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from afkit.atomic import write_atomic

CA_NAME = "afkit federation CA"
# what the CA's key may do: sign certificates and revocation lists (and its own signatures)
CA_USAGE = {"digital_signature": True, "key_cert_sign": True, "crl_sign": True, "content_commitment": False,
            "key_encipherment": False, "data_encipherment": False, "key_agreement": False,
            "encipher_only": False, "decipher_only": False}  # fmt: skip
VALID_DAYS = 30
# the host's CA bundle (Debian's ca-certificates), the first part of the trust bundle
SYSTEM_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")


@dataclass(frozen=True)
class Pair:
    """A certificate and its private key, as files."""

    cert: Path
    key: Path


RSA_BITS = 2048
# the kinds of key a certificate can be made with: "ec" (P-256) and "rsa" (for XRootD's gsi)
KEY_KINDS = ("ec", "rsa")
PrivateKey = ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey


def new_key(kind: str) -> PrivateKey:
    if kind == "rsa":
        return rsa.generate_private_key(public_exponent=65537, key_size=RSA_BITS)
    if kind == "ec":
        return ec.generate_private_key(ec.SECP256R1())
    raise ValueError(f"key kind {kind!r}: expected one of {', '.join(KEY_KINDS)}")


def key_pem(key: PrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())  # fmt: skip


def load_key(path: Path) -> ec.EllipticCurvePrivateKey:
    """The EC private key in PATH (the CA's, the token issuer's)."""
    key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise ValueError(f"{path}: not an EC private key")
    return key


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def ensure_ca(folder: Path) -> Pair:
    """The box's CA in FOLDER (ca.pem, ca.key), made once: a self-signed EC P-256 root valid for
    VALID_DAYS days."""
    pair = Pair(folder / "ca.pem", folder / "ca.key")
    if pair.cert.is_file() and pair.key.is_file():
        return pair
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, CA_NAME)])
    now = _now()
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(**CA_USAGE),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    write_atomic(pair.key, key_pem(key), mode=0o600)
    write_atomic(pair.cert, cert.public_bytes(serialization.Encoding.PEM), mode=0o644)
    return pair


def _alt_names(names: list[str]) -> list[x509.GeneralName]:
    """NAMES as subjectAltNames: a host name as a DNS name; an IP address as an IP address (what
    OpenSSL's and Go's host checks match) and as a DNS name too, for XRootD's check matches DNS
    names only (xrootd src/XrdTls/XrdTlsNotaryUtils.icc, matches_subject_alternative_name: GEN_DNS),
    comparing the address a client's URL names as text."""
    out: list[x509.GeneralName] = []
    for name in names:
        with contextlib.suppress(ValueError):  # not an IP address
            out.append(x509.IPAddress(ipaddress.ip_address(name)))
        out.append(x509.DNSName(name))
    return out


def _signed(ca: Pair, subject: x509.Name, key: PrivateKey, days: float,
            extensions: list[tuple[x509.ExtensionType, bool]]) -> x509.Certificate:  # fmt: skip
    """A certificate for SUBJECT's KEY signed by CA, valid DAYS days, with EXTENSIONS (critical?)."""
    ca_key = load_key(ca.key)
    ca_cert = x509.load_pem_x509_certificate(ca.cert.read_bytes())
    now = _now()
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
    )
    aki = x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key())
    builder = builder.add_extension(aki, critical=False)
    for ext, critical in extensions:
        builder = builder.add_extension(ext, critical=critical)
    return builder.sign(ca_key, hashes.SHA256())


def _write_pair(pair: Pair, key: PrivateKey, cert: x509.Certificate) -> Pair:
    write_atomic(pair.key, key_pem(key), mode=0o600)
    write_atomic(pair.cert, cert.public_bytes(serialization.Encoding.PEM), mode=0o644)
    return pair


def server_certificate(ca: Pair, folder: Path, name: str, names: list[str], kind: str = "ec") -> Pair:
    """A certificate for server NAME (FOLDER/NAME.pem, NAME.key) signed by CA, valid for the
    host names and IP addresses NAMES (the first is its common name); for TLS servers and, as
    caches are to their origins, clients. KIND: its key's ("rsa" for a server that accepts
    X.509 proxies: gsi)."""
    if not names:
        raise ValueError(f"server {name}: no host name or address to certify")
    key = new_key(kind)
    usage = x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH])
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])])
    cert = _signed(ca, subject, key, VALID_DAYS,
                   [(x509.SubjectAlternativeName(_alt_names(names)), False), (usage, False)])  # fmt: skip
    return _write_pair(Pair(folder / f"{name}.pem", folder / f"{name}.key"), key, cert)


USER_ORG = "afkit federation"
USER_UNIT = "users"
# the start of every user's distinguished name (a grid-mapfile's prefix pattern maps them all)
USERS_DN = f"/O={USER_ORG}/OU={USER_UNIT}/"


def user_subject(user: str) -> str:
    """USER's distinguished name as XRootD's gsi and a grid-mapfile spell it (OpenSSL's one-line
    form)."""
    return f"{USERS_DN}CN={user}"


def user_certificate(ca: Pair, folder: Path, user: str, days: float = VALID_DAYS) -> Pair:
    """USER's grid certificate signed by CA, as ``~/.globus`` holds one: FOLDER/usercert.pem (0644)
    and userkey.pem (0600, RSA: what ``xrdgsiproxy init`` signs proxies with), DN
    :func:`user_subject`; valid DAYS days."""
    key = new_key("rsa")
    subject = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, USER_ORG),
                         x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, USER_UNIT),
                         x509.NameAttribute(NameOID.COMMON_NAME, user)])  # fmt: skip
    usage = x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=True,
                          data_encipherment=False, key_agreement=False, key_cert_sign=False,
                          crl_sign=False, encipher_only=False, decipher_only=False)  # fmt: skip
    client = x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH])
    cert = _signed(ca, subject, key, days, [(usage, True), (client, False)])
    return _write_pair(Pair(folder / "usercert.pem", folder / "userkey.pem"), key, cert)


def subject_hash(cert: Path) -> str:
    """CERT's subject hash, the name OpenSSL's CApath and XRootD's gsi look a CA up by."""
    return subprocess.run(["openssl", "x509", "-subject_hash", "-noout", "-in", str(cert)],
                          capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip


def ca_dir(ca: Pair, folder: Path) -> Path:
    """FOLDER holding CA's certificate by its subject hash (HASH.0), as
    /etc/grid-security/certificates holds the grid's CAs (X509_CERT_DIR: gsi verifies a server's
    and a user's certificate against such a folder, not a bundle)."""
    folder.mkdir(parents=True, exist_ok=True)
    write_atomic(folder / f"{subject_hash(ca.cert)}.0", ca.cert.read_bytes(), mode=0o644)
    return folder


def trust_bundle(ca: Pair, folder: Path, system: Path = SYSTEM_BUNDLE) -> Path:
    """FOLDER/ca-bundle.pem: the host's CA bundle (SYSTEM, when there is one) and the box's CA,
    the one file clients are pointed at (SSL_CERT_FILE, X509_CERT_FILE, xrd.tlsca certfile)."""
    parts = [system.read_bytes()] if system.is_file() else []
    parts.append(ca.cert.read_bytes())
    out = folder / "ca-bundle.pem"
    write_atomic(out, b"".join(p if p.endswith(b"\n") else p + b"\n" for p in parts), mode=0o644)
    return out
