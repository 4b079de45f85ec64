"""The guarded federation (``afkit federation up --guarded``, docs/federation.md "Guarded federation").

As WLCG sites run theirs: every origin and cache speaks TLS with a certificate from the
federation's own CA (afkit_testbed.pki) naming the addresses its clients use, and accepts only
WLCG tokens (XRootD's ``ztn`` with the SciTokens authorisation plugin, ``afkit storage up
--tls-cert ... --token-issuer ...``) of the federation's token issuer (afkit_testbed.issuer), a
daemon on the submit host serving its keys over HTTPS. Each cache fetches from its guarded origin
over ``roots://`` with a service token of its own (``storage.read:/``, ``--origin-token``) and
authorises its clients' tokens itself.

Everything lives in ``ROOT/guard`` (ROOT: the federation's state, afkit_testbed.federation.control):
``pki/`` (the CA, its key mode 0600, the servers' certificates and keys, and ``ca-bundle.pem``,
the host's CAs plus the federation's: the one file clients trust), ``issuer.key`` (mode 0600),
``service/SITE.token`` (the caches' tokens, mode 0600) and the issuer's log and pid. Users' tokens
are issued by :func:`issue_token` (``afkit federation token``) into a file of the user's, mode 0600.
"""

from __future__ import annotations

import os
import pwd
import secrets
import sys
from pathlib import Path
from typing import TypedDict

from afkit.atomic import write_atomic
from afkit.errors import AfkitError, PrereqError, UsageError
from afkit.storage import daemon as dmn
from afkit_testbed import issuer, pki
from afkit_testbed.federation import batch, net
from afkit_testbed.federation.links import Federation, Site

# the audience WLCG storage accepts from any issuer it trusts (WLCG Common JWT Profiles v1.0, 3.1.3)
AUDIENCE = "https://wlcg.cern.ch/jwt/v1/any"
ISSUER_PORT = 8443
SERVICE_LIFETIME = 7 * 24 * 3600  # the caches' own tokens: as long as a federation stays up
DEFAULT_LIFETIME = 3600
SCOPES = ("storage.read", "storage.create", "storage.modify")
SWITCH_HINT = "afkit federation up --guarded (it switches a running federation)"


REGISTRY_USER = "afkit"  # the registry's one account (the testbed's user)
# where the testbed's clients find the federation's CA without being told (the testbed's root file
# system is an overlay made fresh on every 'scripts/testbed up'): Go's system roots read every file
# of /etc/ssl/certs (apptainer's pulls and pushes; crypto/x509 root_unix.go), OpenSSL's CApath
# and XRootD's clients (X509_CERT_DIR, default /etc/grid-security/certificates) look certificates
# up by subject hash
TRUST_DIRS = (Path("/etc/ssl/certs"), Path("/etc/grid-security/certificates"))
TRUST_NAME = "afkit-federation-ca.pem"


class GuardState(TypedDict):
    """state.json ``guard`` of a guarded federation (paths and URLs only, never a secret)."""

    issuer: str
    audience: str
    ca_bundle: str
    # the federation's CA by subject hash: an X.509 proxy's X509_CERT_DIR (XRootD's gsi)
    ca_dir: str
    # the sites whose origin also accepts X.509 proxies of the federation's users
    x509_sites: list[str]
    registry_user: str


# every user certificate the federation's CA issues (pki.user_certificate) is one of its users
GRIDMAP = f'"^{pki.USERS_DN}" users\n'


def guard_dir(root: Path) -> Path:
    return root / "guard"


def _issuer_files(root: Path) -> dmn.DaemonFiles:
    d = guard_dir(root)
    return dmn.DaemonFiles(d / "issuer.key", d / "issuer.log", d / "issuer.pid")


def issuer_url() -> str:
    return f"https://{net.submit_address()}:{ISSUER_PORT}"


def scheme(url: str, guarded: bool) -> str:
    """URL with ``roots://`` for a guarded federation (TLS on every connection), else as it is."""
    return "roots://" + url.removeprefix("root://") if guarded and url.startswith("root://") else url


def server_names(site: Site) -> list[str]:
    """What a site's servers are reached by: its own address (its LAN, the caches' redirects), its
    WAN gateway (toxiproxy in front of its storage), its name and loopback."""
    return [site.address, site.gateway, site.name, "127.0.0.1", "localhost"]


def _ca(root: Path) -> pki.Pair:
    return pki.ensure_ca(guard_dir(root) / "pki")


def bundle(root: Path) -> Path:
    return guard_dir(root) / "pki" / "ca-bundle.pem"


def ca_folder(root: Path) -> Path:
    return guard_dir(root) / "pki" / "certificates"


def gridmap(root: Path) -> Path:
    return guard_dir(root) / "grid-mapfile"


def service_token(root: Path, site: Site) -> Path:
    return guard_dir(root) / "service" / f"{site.name}.token"


def up(fed: Federation, root: Path) -> tuple[GuardState, batch.RegistryGuard]:
    """The CA (trusted in the testbed), the trust bundle, the issuer (started), the caches' service
    tokens, the registry's certificate and login; (the state, what the registry needs)."""
    d = guard_dir(root)
    d.mkdir(parents=True, exist_ok=True)
    d.chmod(0o755)  # the bundle and certificates are read by the xrootd user and every client
    ca = _ca(root)
    pki.trust_bundle(ca, ca.cert.parent)
    pki.ca_dir(ca, ca_folder(root))
    write_atomic(gridmap(root), GRIDMAP, mode=0o644)
    trust(ca)
    key = issuer.ensure_key(d / "issuer.key")
    _start_issuer(root, ca)
    for site in fed.sites.values():
        if site.cache_origin:
            grant = issuer.Grant(("storage.read:/",), AUDIENCE, subject=f"cache-{site.name}",
                                 lifetime=SERVICE_LIFETIME)  # fmt: skip
            path = service_token(root, site)
            path.parent.mkdir(mode=0o700, exist_ok=True)
            write_atomic(path, issuer.issue(key, issuer_url(), grant), mode=0o600)
    x509_sites = [s.name for s in fed.sites.values() if s.x509]
    state: GuardState = {"issuer": issuer_url(), "audience": AUDIENCE, "ca_bundle": str(bundle(root)),
                         "ca_dir": str(ca_folder(root)), "x509_sites": x509_sites,
                         "registry_user": REGISTRY_USER}  # fmt: skip
    return state, _registry(root, ca)


def _registry(root: Path, ca: pki.Pair) -> batch.RegistryGuard:
    """The registry's certificate (its address) and its login: a new random password (mode 0600,
    handed to users by :func:`give_password`) and its bcrypt entry in the htpasswd file (0600)."""
    import bcrypt

    pair = pki.server_certificate(ca, ca.cert.parent, "registry", [net.submit_address()])
    password = secrets.token_urlsafe(24)
    write_atomic(password_file(root), password + "\n", mode=0o600)
    entry = bcrypt.hashpw(password.encode(), bcrypt.gensalt()).decode()
    htpasswd = guard_dir(root) / "registry.htpasswd"
    write_atomic(htpasswd, f"{REGISTRY_USER}:{entry}\n", mode=0o600)
    return batch.RegistryGuard(pair.cert, pair.key, htpasswd)


def password_file(root: Path) -> Path:
    return guard_dir(root) / "registry.password"


def trust(ca: pki.Pair) -> None:
    """The federation's CA trusted by the testbed's clients (TRUST_DIRS): the certificate, and a
    link by its subject hash (as c_rehash makes them)."""
    digest = pki.subject_hash(ca.cert)
    for folder in TRUST_DIRS:
        folder.mkdir(parents=True, exist_ok=True)
        write_atomic(folder / TRUST_NAME, ca.cert.read_bytes(), mode=0o644)
        link = folder / f"{digest}.0"
        if link.is_symlink() or not link.exists():
            link.unlink(missing_ok=True)
            link.symlink_to(TRUST_NAME)


def untrust() -> None:
    """Take the federation's CA out of TRUST_DIRS (only what :func:`trust` made)."""
    for folder in TRUST_DIRS:
        for link in folder.glob("*.0") if folder.is_dir() else ():
            if link.is_symlink() and os.readlink(link) == TRUST_NAME:
                link.unlink()
        (folder / TRUST_NAME).unlink(missing_ok=True)


def _start_issuer(root: Path, ca: pki.Pair) -> None:
    files = _issuer_files(root)
    if dmn.read_pid(files) is not None:
        return
    tls = pki.server_certificate(ca, ca.cert.parent, "issuer", [net.submit_address()])
    cmd = [sys.executable, "-m", "afkit_testbed.issuer", "--key", str(files.config),
           "--cert", str(tls.cert), "--cert-key", str(tls.key),
           "--host", net.submit_address(), "--port", str(ISSUER_PORT)]  # fmt: skip
    proc = dmn.spawn(cmd, files)
    if not dmn.wait_for_port(ISSUER_PORT, 30, proc, host=net.submit_address()):
        raise AfkitError(f"the token issuer did not come up on {issuer_url()}",
                         hint=f"its log {files.log}:\n{dmn.log_tail(files.log)}")  # fmt: skip


def down(root: Path) -> None:
    dmn.stop(_issuer_files(root))
    untrust()


def storage_args(root: Path, site: Site, scenario: str, origin: str) -> list[str]:
    """The options of ``afkit storage up`` for SITE's SCENARIO daemon, guarded (ORIGIN: a cache's
    upstream, host:port)."""
    x509 = site.x509 and scenario == "origin"
    pair = pki.server_certificate(_ca(root), guard_dir(root) / "pki", f"{site.name}-{scenario}",
                                  server_names(site), kind="rsa" if x509 else "ec")  # fmt: skip
    args = ["--tls-cert", str(pair.cert), "--tls-key", str(pair.key), "--tls-ca", str(bundle(root)),
            "--token-issuer", issuer_url(), "--token-audience", AUDIENCE]  # fmt: skip
    if x509:
        args += ["--x509-certdir", str(ca_folder(root)), "--x509-gridmap", str(gridmap(root))]
    if scenario != "origin":
        args += ["--origin", f"roots://{origin}", "--origin-token", str(service_token(root, site))]
    return args


def _owner(user: str | None) -> tuple[int, int] | None:
    if user is None:
        return None
    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        raise UsageError(f"--owner {user!r}: no such user", hint="name a user of this host") from None
    return entry.pw_uid, entry.pw_gid


def give_password(root: Path, out: Path, owner: str | None) -> Path:
    """The registry's password into OUT (mode 0600, owned by OWNER when given), for
    ``apptainer registry login --password-stdin``."""
    given = password_file(root)
    if not given.is_file():
        raise PrereqError("the federation's registry has no login (it is not guarded)",
                          hint=SWITCH_HINT)  # fmt: skip
    _admins(given, "registry password")
    return _hand_out(out, given.read_bytes(), _owner(owner))


def _admins(secret: Path, what: str) -> None:
    """PrereqError (exit 3) unless this user may read SECRET, the federation's WHAT (root's, mode
    0600): the admin hands tokens, certificates and the password out, not a user (was a
    PermissionError traceback)."""
    if not os.access(secret, os.R_OK):
        raise PrereqError(f"{secret}, the federation's {what}, is its admin's: you cannot read it",
                          hint="run this as root (the federation's admin), who hands the result to a user "
                          "with --owner")  # fmt: skip


def _hand_out(out: Path, secret: bytes | str, ids: tuple[int, int] | None) -> Path:
    """SECRET into OUT, mode 0600 from the start, then given to IDS (uid, gid) when given."""
    write_atomic(out, secret, mode=0o600)
    if ids is not None:
        os.chown(out, *ids)
    return out


def issue_token(root: Path, scopes: list[str], out: Path, lifetime: int, owner: str | None) -> Path:
    """A WLCG token of the federation's issuer with SCOPES into OUT (mode 0600, owned by OWNER when
    given: the federation's admin hands a user their token, as an experiment's IAM would)."""
    key_file = guard_dir(root) / "issuer.key"
    if not key_file.is_file():
        raise PrereqError("the federation is not guarded (no token issuer)",
                          hint=SWITCH_HINT)  # fmt: skip
    _admins(key_file, "token issuer's key")
    for scope in scopes:
        op, sep, path = scope.partition(":")
        if op not in SCOPES or not sep or not path.startswith("/"):
            raise UsageError(f"--scope {scope!r}: expected storage.read|storage.create|storage.modify:/PATH",
                             hint="e.g. --scope storage.read:/ --scope storage.create:/campaign")  # fmt: skip
    if lifetime <= 0:
        raise UsageError(f"--lifetime {lifetime}: must be a positive number of seconds")
    ids = _owner(owner)
    grant = issuer.Grant(tuple(scopes), AUDIENCE, subject=owner or "afkit-user", lifetime=lifetime)
    return _hand_out(out, issuer.issue(issuer.ensure_key(key_file), issuer_url(), grant), ids)


def issue_usercert(root: Path, out: Path, owner: str | None) -> Path:
    """A grid certificate of the federation's CA for OWNER (default: the caller) into folder OUT,
    as ``~/.globus`` holds one (usercert.pem mode 0644, userkey.pem mode 0600; the folder 0700, all owned by
    OWNER when given): what a grid CA gives its users. Its DN is one of the federation's users,
    whom every X.509-accepting origin maps (:data:`GRIDMAP`)."""
    if not (guard_dir(root) / "issuer.key").is_file():
        raise PrereqError("the federation is not guarded (no CA for its users)", hint=SWITCH_HINT)
    _admins(guard_dir(root) / "issuer.key", "token issuer's key")
    ids = _owner(owner)
    user = owner or pwd.getpwuid(os.getuid()).pw_name
    out.mkdir(mode=0o700, parents=True, exist_ok=True)
    pair = pki.user_certificate(_ca(root), out, user)
    if ids is not None:
        for path in (out, pair.cert, pair.key):
            os.chown(path, *ids)
    return out
