"""The federation's own certificate authority: TLS for its origins, caches and token issuer.

Real WLCG storage speaks TLS with host certificates from a CA the grid trusts (IGTF); XRootD's
token protocol ``ztn`` refuses to send a token over a connection that is not TLS. The box has no
grid CA, so it makes its own (:func:`ensure_ca`) and a certificate per server, naming the
addresses clients use (:func:`server_certificate`: an IP address is a subjectAltName of type IP,
as OpenSSL's host check wants it). Clients trust the box's CA through one bundle,
:func:`trust_bundle`: the host's own CAs plus the box's, so a program that also talks to real
HTTPS sites keeps working (``SSL_CERT_FILE``, ``X509_CERT_FILE``, XRootD's ``xrd.tlsca``).

Keys are written with mode 0600 and never leave the state directory; certificates are 0644.
Made with ``cryptography`` (the library PyJWT and scitokens sign with).
"""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
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


def key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())  # fmt: skip


def load_key(path: Path) -> ec.EllipticCurvePrivateKey:
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


def server_certificate(ca: Pair, folder: Path, name: str, names: list[str]) -> Pair:
    """A certificate for server NAME (FOLDER/NAME.pem, NAME.key) signed by CA, valid for the
    host names and IP addresses NAMES (the first is its common name); for TLS servers and, as
    caches are to their origins, clients."""
    if not names:
        raise ValueError(f"server {name}: no host name or address to certify")
    ca_key = load_key(ca.key)
    ca_cert = x509.load_pem_x509_certificate(ca.cert.read_bytes())
    key = ec.generate_private_key(ec.SECP256R1())
    now = _now()
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName(_alt_names(names)), critical=False)
        .add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
            critical=False,
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    pair = Pair(folder / f"{name}.pem", folder / f"{name}.key")
    write_atomic(pair.key, key_pem(key), mode=0o600)
    write_atomic(pair.cert, cert.public_bytes(serialization.Encoding.PEM), mode=0o644)
    return pair


def trust_bundle(ca: Pair, folder: Path, system: Path = SYSTEM_BUNDLE) -> Path:
    """FOLDER/ca-bundle.pem: the host's CA bundle (SYSTEM, when there is one) and the box's CA,
    the one file clients are pointed at (SSL_CERT_FILE, X509_CERT_FILE, xrd.tlsca certfile)."""
    parts = [system.read_bytes()] if system.is_file() else []
    parts.append(ca.cert.read_bytes())
    out = folder / "ca-bundle.pem"
    write_atomic(out, b"".join(p if p.endswith(b"\n") else p + b"\n" for p in parts), mode=0o644)
    return out
