"""The federation's token issuer: WLCG tokens for its guarded storage, as an experiment's IAM issues them.

A WLCG token (WLCG Common JWT Profiles, v1.0) is a JWT signed by the issuer's key; a storage
server that trusts the issuer fetches its public keys over HTTPS, from the ``jwks_uri`` of the
issuer's OpenID configuration (``ISSUER/.well-known/openid-configuration``), as libscitokens
does for XRootD's SciTokens plugin (xrootd/xrootd src/XrdSciTokens, scitokens/scitokens-cpp
src/scitokens_internal.cpp). This module is that issuer in the box:

- :func:`ensure_key`: its EC P-256 signing key (``issuer.key``, mode 0600, in the federation's
  state; never in a file afkit writes elsewhere);
- :func:`serve`: the two documents over HTTPS, with a certificate from the federation's CA
  (afkit_testbed.pki);
- :func:`issue`: a token with the field's library (``scitokens.SciToken``: PyJWT underneath),
  the WLCG claims ``wlcg.ver``, ``sub``, ``aud`` and ``scope`` (``storage.read:/PATH``,
  ``storage.create:/PATH``, ``storage.modify:/PATH``) and a lifetime.
"""

from __future__ import annotations

import json
import ssl
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import scitokens
from cryptography.hazmat.primitives.asymmetric import ec
from jwt.algorithms import ECAlgorithm

from afkit.atomic import write_atomic
from afkit_testbed.pki import Pair, key_pem, load_key

KEY_ID = "afkit-es256"
ALGORITHM = "ES256"
WELL_KNOWN = "/.well-known/openid-configuration"
JWKS_PATH = "/jwks"
WLCG_VERSION = "1.0"


def ensure_key(path: Path) -> ec.EllipticCurvePrivateKey:
    """The issuer's signing key in PATH (made once, mode 0600)."""
    if not path.is_file():
        write_atomic(path, key_pem(ec.generate_private_key(ec.SECP256R1())), mode=0o600)
    return load_key(path)


def jwks(key: ec.EllipticCurvePrivateKey) -> dict[str, list[dict[str, str]]]:
    """The issuer's public key set (RFC 7517), as storage fetches it."""
    jwk: dict[str, str] = json.loads(ECAlgorithm.to_jwk(key.public_key()))
    return {"keys": [{**jwk, "kid": KEY_ID, "alg": ALGORITHM, "use": "sig"}]}


def openid_configuration(url: str) -> dict[str, str]:
    """The issuer's discovery document (the keys' address, as libscitokens reads it)."""
    return {"issuer": url, "jwks_uri": url + JWKS_PATH}


@dataclass(frozen=True)
class Grant:
    """What a token allows: SCOPES (``storage.read:/PATH`` ...), for AUDIENCE, as SUBJECT."""

    scopes: tuple[str, ...]
    audience: str
    subject: str = "afkit-user"
    lifetime: int = 3600


def issue(key: ec.EllipticCurvePrivateKey, url: str, grant: Grant) -> str:
    """A WLCG token of issuer URL, signed by KEY, for GRANT."""
    token = scitokens.SciToken(key=key, algorithm=ALGORITHM, key_id=KEY_ID)
    token.update_claims({"wlcg.ver": WLCG_VERSION, "sub": grant.subject, "aud": grant.audience,
                         "scope": " ".join(grant.scopes)})  # fmt: skip
    serialized: bytes = token.serialize(issuer=url, lifetime=grant.lifetime)
    return serialized.decode()


def _handler(documents: dict[str, bytes]) -> type[BaseHTTPRequestHandler]:
    """A request handler serving DOCUMENTS (path → JSON body), quietly."""

    class Handler(_Handler):
        served: ClassVar[dict[str, bytes]] = documents

    return Handler


class _Handler(BaseHTTPRequestHandler):
    served: ClassVar[dict[str, bytes]] = {}

    def do_GET(self) -> None:
        body = self.served.get(self.path)
        if body is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the issuer's requests are not the test's output."""


@dataclass
class Running:
    """A serving issuer: its URL and how to stop it."""

    url: str
    server: ThreadingHTTPServer
    thread: threading.Thread

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)


def serve(key: ec.EllipticCurvePrivateKey, tls: Pair, host: str, port: int = 0) -> Running:
    """The issuer's documents over HTTPS on HOST:PORT (0: any free port), in a thread; TLS with
    the certificate TLS (issued for HOST by the federation's CA)."""
    documents: dict[str, bytes] = {}
    server = ThreadingHTTPServer((host, port), _handler(documents))
    url = f"https://{host}:{server.server_address[1]}"
    documents[WELL_KNOWN] = json.dumps(openid_configuration(url)).encode()
    documents[JWKS_PATH] = json.dumps(jwks(key)).encode()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(tls.cert), str(tls.key))
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, name="afkit-token-issuer", daemon=True)
    thread.start()
    return Running(url, server, thread)


def main(argv: list[str] | None = None) -> int:
    """``python -m afkit_testbed.issuer``: serve the issuer of KEY on HOST:PORT until stopped (the
    guarded federation's daemon, afkit_testbed.federation.guard)."""
    import argparse
    import signal

    ap = argparse.ArgumentParser(prog="python -m afkit_testbed.issuer", description=main.__doc__)
    ap.add_argument("--key", required=True, help="the issuer's signing key (PEM, mode 0600)")
    ap.add_argument("--cert", required=True, help="the HTTPS certificate (PEM)")
    ap.add_argument("--cert-key", required=True, help="the HTTPS certificate's key (PEM, mode 0600)")
    ap.add_argument("--host", required=True)
    ap.add_argument("--port", type=int, required=True)
    args = ap.parse_args(argv)
    tls = Pair(Path(args.cert), Path(args.cert_key))
    running = serve(load_key(Path(args.key)), tls, args.host, args.port)
    print(f"afkit token issuer: serving {running.url}", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()
    running.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
