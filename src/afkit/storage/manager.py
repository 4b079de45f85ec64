"""``up``/``down``/``status`` of a scenario: render, start in order, stop in reverse order."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import TypedDict

from afkit.atomic import write_atomic
from afkit.errors import InvalidError, NotFoundError, UnsafeError
from afkit.storage import daemon as dmn
from afkit.storage.render import (
    Guard,
    Settings,
    authdb_text,
    daemon_dirs,
    gridmap_entries,
    gridmap_text,
    render,
    scitokens_config,
    shared_cache_dir,
    write_config,
)
from afkit.storage.scenarios import Daemon, Scenario, port_of

MARKER = ".afkit-storage"


ROOT_STATE = Path("/var/lib/afkit/storage")


def default_state_root() -> Path:
    """``$AFKIT_STORAGE_STATE``, else ``~/.cache/afkit/storage``; as root ``/var/lib/afkit/storage``:
    root's daemons run as the xrootd user, who cannot reach a private /root."""
    env = os.environ.get("AFKIT_STORAGE_STATE")
    if env:
        return Path(env)
    if os.geteuid() == 0:
        return ROOT_STATE
    from afkit import paths

    return paths.cache_dir() / "storage"


def prepare_state(state_dir: Path) -> None:
    """Create the scenario's state directory, or accept one afkit created (it has the marker)."""
    if state_dir.exists() and any(state_dir.iterdir()) and not (state_dir / MARKER).is_file():
        raise UnsafeError(
            f"state directory '{state_dir}' exists and was not created by afkit storage",
            hint="choose another --state-dir",
        )
    state_dir.mkdir(parents=True, exist_ok=True)
    (state_dir / MARKER).touch()


class Started(TypedDict):
    """A daemon ``up`` started (a JSON line of ``afkit storage up``, after the scenario)."""

    daemon: str
    pid: int
    port: int
    log: str


class DaemonStatus(TypedDict):
    """A JSON line of ``afkit storage status``."""

    scenario: str
    daemon: str
    pid: int | None
    port: int
    running: bool
    listening: bool
    log: str


def files_of(settings: Settings, daemon: Daemon) -> dmn.DaemonFiles:
    dirs = daemon_dirs(settings, daemon)
    return dmn.DaemonFiles(dirs["config"], dirs["log"], dirs["pidfile"])


def up(scenario: Scenario, settings: Settings, timeout: float) -> list[Started]:
    dmn.xrootd_binary()
    dmn.check_reachable(dmn.service_user(), settings.state_dir)
    prepare_state(settings.state_dir)
    shared_cache_dir(settings).mkdir(parents=True, exist_ok=True)
    started: list[Started] = []
    try:
        for daemon in scenario.daemons:
            dirs = daemon_dirs(settings, daemon)
            for key in ("admin_dir", "run_dir"):
                dirs[key].mkdir(parents=True, exist_ok=True)
            write_config(dirs["config"], render(scenario, daemon, settings))
            env = _guarded(settings.guard, dirs) if settings.guard else None
            dmn.give_to(
                dmn.service_user(),
                settings.state_dir / daemon.name,
                dirs["admin_dir"],
                dirs["run_dir"],
                shared_cache_dir(settings),
                *(_guard_files(dirs) if env else []),
            )
            port = port_of(scenario, daemon, settings.base)
            pid = dmn.start(daemon.name, files_of(settings, daemon), port, timeout, env=env)
            started.append({"daemon": daemon.name, "pid": pid, "port": port, "log": str(dirs["log"])})
    except BaseException:
        for daemon in reversed(scenario.daemons):
            dmn.stop(files_of(settings, daemon))
        raise
    return started


def _guarded(guard: Guard, dirs: dict[str, Path]) -> dict[str, str]:
    """A guarded daemon's files beside its config: its certificate and key (copies the service
    user owns, the key mode 0600: xrootd refuses a key others can read), the SciTokens
    configuration, the folder libscitokens caches the issuer's keys in; the daemon's environment
    (XDG_CACHE_HOME: that folder)."""
    dirs["tls_cert"].parent.mkdir(parents=True, exist_ok=True)
    for given, copy in ((guard.cert, dirs["tls_cert"]), (guard.key, dirs["tls_key"])):
        if not given.is_file():
            hint = "give the server's certificate and key (PEM)"
            raise NotFoundError(f"TLS file not found: {given}", hint=hint)
        write_atomic(copy, given.read_bytes(), mode=0o600 if copy == dirs["tls_key"] else 0o644)
    if not guard.cafile.is_file():
        hint = "give the CA bundle the server trusts (PEM)"
        raise NotFoundError(f"CA file not found: {guard.cafile}", hint=hint)
    write_atomic(dirs["scitokens_cfg"], scitokens_config(guard), mode=0o644)
    if guard.x509 is not None:
        _x509_files(guard, dirs)
    dirs["keycache"].mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "XDG_CACHE_HOME": str(dirs["keycache"])}
    if guard.origin_token is not None:
        # the cache's client to its origin (XrdCl in the daemon) reads the token from the file
        # BEARER_TOKEN_FILE names (xrootd src/XrdSecztn/XrdSecProtocolztn.cc) and trusts the CAs
        # of X509_CERT_FILE for the origin's TLS
        if not guard.origin_token.is_file():
            hint = "give the cache's own WLCG token for its origin (--origin-token)"
            raise NotFoundError(f"origin token file not found: {guard.origin_token}", hint=hint)
        write_atomic(dirs["origin_token"], guard.origin_token.read_bytes(), mode=0o600)
        env |= {"BEARER_TOKEN_FILE": str(dirs["origin_token"]), "X509_CERT_FILE": str(guard.cafile)}
    else:
        dirs["origin_token"].unlink(missing_ok=True)
    return env


def _x509_files(guard: Guard, dirs: dict[str, Path]) -> None:
    """An X.509-accepting daemon's grid-mapfile (the given one's DNs, each mapped to the one X.509
    account) and the authorisation database that grants that account the base path."""
    assert guard.x509 is not None
    if not _rsa(guard.cert):
        raise InvalidError(f"{guard.cert}: X.509 proxies need an RSA server certificate, this one is not",
                         hint="XRootD's gsi takes its session key from the server's certificate as RSA "
                         "(xrootd src/XrdSecgsi): give an RSA certificate and key, or leave out "
                         "--x509-certdir/--x509-gridmap (tokens only)")  # fmt: skip
    if not guard.x509.certdir.is_dir():
        hint = "give the folder of the CAs whose users it accepts, as /etc/grid-security/certificates"
        raise NotFoundError(f"CA folder not found: {guard.x509.certdir}", hint=hint)
    try:
        text = guard.x509.gridmap.read_text()
    except OSError as err:
        hint = 'give a grid-mapfile: a line "DN" account per user it accepts'
        raise NotFoundError(f"grid-mapfile {guard.x509.gridmap}: {err.strerror}", hint=hint) from err
    write_atomic(dirs["gridmap"], gridmap_text(gridmap_entries(text)), mode=0o644)
    write_atomic(dirs["authdb"], authdb_text(guard), mode=0o644)


def _rsa(cert: Path) -> bool:
    """Whether CERT (PEM) holds an RSA public key (openssl's name for it: rsaEncryption)."""
    proc = subprocess.run(["openssl", "x509", "-noout", "-text", "-in", str(cert)],
                          capture_output=True, text=True, check=False, timeout=30)  # fmt: skip
    return "Public Key Algorithm: rsaEncryption" in proc.stdout


def _guard_files(dirs: dict[str, Path]) -> list[Path]:
    """The files and folders of a guarded daemon its service user owns."""
    token = [dirs["origin_token"]] if dirs["origin_token"].is_file() else []
    return [dirs["tls_cert"].parent, dirs["tls_cert"], dirs["tls_key"], dirs["keycache"], *token]


def down(scenario: Scenario, settings: Settings) -> list[str]:
    stopped = []
    for daemon in reversed(scenario.daemons):
        if dmn.stop(files_of(settings, daemon)):
            stopped.append(daemon.name)
    return stopped


def status(scenario: Scenario, settings: Settings) -> list[DaemonStatus]:
    out: list[DaemonStatus] = []
    for daemon in scenario.daemons:
        files = files_of(settings, daemon)
        port = port_of(scenario, daemon, settings.base)
        pid = dmn.read_pid(files)
        out.append(
            {
                "scenario": scenario.name,
                "daemon": daemon.name,
                "pid": pid,
                "port": port,
                "running": pid is not None,
                "listening": pid is not None and dmn.port_open(port),
                "log": str(files.log),
            }
        )
    return out
