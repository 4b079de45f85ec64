"""A guarded storage's credential: checked before any job, handed to each job as a file.

A campaign names, per storage, the *file* of its credential (``storage.NAME.credential``: a WLCG
token or an X.509 proxy, and the CA bundle of the storage's TLS), never the secret. Before
anything is submitted, :func:`check` makes sure that every credential the benchmarks need is
there, is readable by its owner only (the rule XRootD's ``ztn`` applies to token files, xrootd
src/XrdSecztn/XrdSecProtocolztn.cc), and, for a token, that it has not expired, that it does not
expire within the credential's ``expiry_margin`` (a warning) and that its scopes let the
benchmarks read every file they read (WLCG scopes ``storage.read:/PATH``). Each job then gets the
file read-only in its container, named by ``BEARER_TOKEN_FILE`` or ``X509_USER_PROXY`` (and the CA
bundle by ``X509_CERT_FILE``): the variables hold paths, never the secret
(afkit.campaign.job.credential_binds).

A token's claims are read without checking its signature (afkit.campaign.tokens): the storage checks that;
afkit only reads what the token says it allows and until when. A proxy is checked for its expiry
(afkit.campaign.proxies; what it may do is the storage's grid-mapfile's and authorisation
database's, not written in it); its server is checked against a folder of CAs by subject hash
(XRootD's gsi reads no bundle: ``ca`` names a folder, default :data:`GRID_CERTS`, given to the job
as ``X509_CERT_DIR``). The secret is never printed: messages name the file, its scopes and its
expiry.
"""

from __future__ import annotations

import posixpath
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from afkit.campaign import proxies
from afkit.campaign.config import Campaign
from afkit.campaign.contract import CREDENTIAL_ENV, CredentialSpec, ca_variable
from afkit.campaign.tokens import claims, expiry_text, scopes
from afkit.errors import NotFoundError, PrereqError, UnsafeError
from afkit.filekind import kind

TOKEN, PROXY = "token", "proxy"
# the variables the field's clients read a credential's file from (the job's, in its container:
# afkit.campaign.job.credential_binds)
ENV = CREDENTIAL_ENV
# where grid hosts keep the CAs they trust, by subject hash (XRootD's gsi's default folder)
GRID_CERTS = Path("/etc/grid-security/certificates")


@dataclass(frozen=True)
class Credential:
    """Storage STORAGE's credential: the KIND (token or proxy) file PATH, the CA bundle CA."""

    storage: str
    kind: str
    path: Path
    ca: Path | None
    margin: int

    def client_env(self) -> dict[str, str]:
        """The environment an XRootD client on this host reads it from (paths only)."""
        env = {ENV[self.kind]: str(self.path)}
        if self.ca is not None:
            env[ca_variable(self.ca)] = str(self.ca)
        return env

    def spec(self) -> CredentialSpec:
        """The files as a job's (or the dataset step's container's) spec names them."""
        return CredentialSpec(self.kind, str(self.path), str(self.ca) if self.ca else "")


def of(campaign: Campaign) -> dict[str, Credential]:
    """Storage name → its credential, for the storages that have one (paths beside the campaign)."""
    out: dict[str, Credential] = {}
    for name, store in campaign.config["storage"].items():
        cred = store.get("credential")
        if cred is None:
            continue
        kind = TOKEN if "token" in cred else PROXY
        ca = cred.get("ca")
        folder = campaign.resolve(ca) if ca else (GRID_CERTS if kind == PROXY else None)
        out[name] = Credential(name, kind, campaign.resolve(str(cred.get(kind))), folder,
                               cred["expiry_margin"])  # fmt: skip
    return out


def _used(campaign: Campaign) -> dict[str, set[str]]:
    """Storage name → the namespace paths (export + file) the benchmarks read there."""
    from afkit.campaign.locations import dataset_files

    cfg = campaign.config
    wanted = {ds for b in cfg["benchmarks"] for ds in b["datasets"]}
    out: dict[str, set[str]] = {}
    for name in sorted(wanted):
        store = cfg["datasets"][name]["storage"]
        export = cfg["storage"][store]["export"]
        out.setdefault(store, set()).update(
            posixpath.join("/", export, f) for f in dataset_files(campaign, name)
        )
    return out


def private_file(path: Path, what: str, key: str, refuses: str) -> None:
    """PATH (WHAT: e.g. "storage gsi: token file"; KEY: the campaign key naming it) exists (else
    exit 5) and only its owner can read it (else exit 4, the chmod to run; REFUSES: who else
    refuses such a file)."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError as err:
        raise NotFoundError(f"{what} {path} not found", hint=f"write it there, or fix {key}") from err
    except OSError as err:
        hint = "check the path and its permissions"
        raise NotFoundError(f"{what} {path}: {err.strerror}", hint=hint) from err
    if not stat.S_ISREG(mode):
        found = kind(path) or "no regular file"
        raise NotFoundError(f"{what} {path} is {found}, not a file", hint=f"name the file itself in {key}")
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise UnsafeError(f"{what} {path} can be read by others (mode {stat.S_IMODE(mode):04o})",
                          hint=f"chmod 600 {path} ({refuses})")  # fmt: skip


def _owner_only(cred: Credential) -> None:
    private_file(cred.path, f"storage {cred.storage}: {cred.kind} file",
                 f"storage.{cred.storage}.credential.{cred.kind}", "XRootD refuses it too")  # fmt: skip
    key = f"storage.{cred.storage}.credential.ca"
    if cred.kind == PROXY and not (cred.ca is not None and cred.ca.is_dir()):
        raise NotFoundError(f"storage {cred.storage}: no folder of CAs {cred.ca} for its X.509 proxy",
                            hint=f"name in {key} the folder of CAs by subject hash the storage's certificate "
                            "is checked against (XRootD's gsi reads no bundle), as /etc/grid-security/"
                            "certificates")  # fmt: skip
    if cred.ca is not None and not (cred.ca.is_file() or cred.ca.is_dir()):
        raise NotFoundError(f"storage {cred.storage}: no CA bundle {cred.ca}", hint=f"fix {key}")


def _allows(granted: list[tuple[str, str]], op: str, path: str) -> bool:
    norm = posixpath.normpath(path)
    return any(
        o == op and (p == "/" or norm == p or norm.startswith(p.rstrip("/") + "/")) for o, p in granted
    )


def _scopes_text(granted: list[tuple[str, str]]) -> str:
    return " ".join(f"{o}:{p}" for o, p in granted) or "none"


def _expiry(cred: Credential, exp: float, now: float) -> list[str]:
    """CRED ending at EXP: an error when it has (checked at NOW), a warning within its margin."""
    at = expiry_text(exp)
    what = f"storage {cred.storage}: the {cred.kind} in {cred.path}"
    if exp <= now:
        renew = proxies.HINT if cred.kind == PROXY else "renew it (the same file), then run again"
        raise PrereqError(f"{what} expired at {at}", hint=renew)
    if exp - now < cred.margin:
        return [f"afkit: warning: {what} expires at {at}, in {exp - now:.0f} s (within expiry_margin "
                f"{cred.margin} s): renew it before its jobs run out"]  # fmt: skip
    return []


def _check_proxy(cred: Credential, now: float) -> list[str]:
    """The proxy of CRED: not expired (a warning within its margin)."""
    return _expiry(cred, proxies.not_after(cred.path), now)


def _check_token(cred: Credential, paths: set[str], made: set[str], now: float) -> list[str]:
    """The token of CRED: not expired (a warning within its margin), its scopes let the benchmarks
    read PATHS and the dataset rule create MADE (the generated files, written through the door;
    writing one again takes storage.modify, which the server checks when it comes to that)."""
    data = claims(cred.path)
    exp = data.get("exp")
    if isinstance(exp, int | float):
        warnings = _expiry(cred, exp, now)
    else:
        warnings = [f"afkit: warning: storage {cred.storage}: the token in {cred.path} has no expiry (exp)"]
    granted = scopes(data)
    denied = sorted(p for p in paths if not _allows(granted, "storage.read", p))
    if denied:
        raise PrereqError(f"storage {cred.storage}: the token in {cred.path} does not allow reading "
                          f"{denied[0]}" + (f" (and {len(denied) - 1} more)" if len(denied) > 1 else "")
                          + f"; its scopes: {_scopes_text(granted)}",
                          hint=f"get a token with storage.read:{posixpath.commonpath(denied)}")  # fmt: skip
    denied = sorted(p for p in made if not _allows(granted, "storage.create", p))
    if denied:
        raise PrereqError(f"storage {cred.storage}: the token in {cred.path} does not allow writing "
                          f"{denied[0]}, a file of a generated dataset; its scopes: {_scopes_text(granted)}",
                          hint=f"get a token with storage.create:{posixpath.dirname(denied[0])}, or list "
                          "existing files instead of generate")  # fmt: skip
    return warnings


def registry_login(campaign: Campaign) -> Path | None:
    """The campaign's ``image.login`` (a Docker-style auth file, beside the campaign), or None."""
    given = campaign.config["image"].get("login")
    return campaign.resolve(given) if given else None


def check_login(campaign: Campaign) -> None:
    """The registry login the image's pulls use, when the campaign names one: there, owner-only."""
    login = registry_login(campaign)
    if login is not None:
        private_file(login, "registry login", "image.login", "it holds the registry password")


def check(campaign: Campaign, now: float | None = None) -> list[str]:
    """Check every credential the benchmarks need (errors raised); the warnings to show."""
    now = time.time() if now is None else now
    check_login(campaign)
    creds = of(campaign)
    generated = _generated(campaign)
    warnings: list[str] = []
    for storage, paths in _used(campaign).items():
        cred = creds.get(storage)
        if cred is None:
            continue
        _owner_only(cred)
        if cred.kind == TOKEN:
            warnings += _check_token(cred, paths, generated.get(storage, set()), now)
        else:
            warnings += _check_proxy(cred, now)
    return warnings


def _generated(campaign: Campaign) -> dict[str, set[str]]:
    """Storage name → the namespace paths of the files the benchmarks' generated datasets write
    there (through the storage's door when it is guarded: afkit.campaign.dataset.Door)."""
    from afkit.campaign.dataset import generated_files

    cfg = campaign.config
    out: dict[str, set[str]] = {}
    for name in sorted({ds for b in cfg["benchmarks"] for ds in b["datasets"]}):
        gen = cfg["datasets"][name].get("generate")
        if gen is None:
            continue
        store = cfg["datasets"][name]["storage"]
        export = cfg["storage"][store]["export"]
        out.setdefault(store, set()).update(posixpath.join("/", export, f) for f in generated_files(gen))
    return out
