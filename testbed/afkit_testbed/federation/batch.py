"""Per-site batch workers of the federation: an HTCondor execute node and a slurmd per site.

Started by ``afkit federation up`` after the sites' storage, stopped by ``down``:

- **HTCondor**: the testbed's pool (collector, negotiator, schedd on the submit host) is
  switched to listen on its namespace's addresses and advertise the federation address
  ``10.77.0.10`` (``/etc/condor/config.d/60-afkit-federation.conf``, ``pool.conf.j2``; the
  templates are in ``testbed/afkit_testbed/templates/federation/``; the pool is restarted). Each
  site runs its own ``condor_master`` + ``condor_startd`` in its network namespace, bound to the
  site's address, with its own ``LOCAL_DIR`` (``/srv/federation/SITE/condor``) and config
  (``condor.conf.j2``); its machine ClassAd says ``AFKIT_SITE = "SITE"``. A site's slots start
  only jobs whose requirements name ``AFKIT_SITE``.
- **SLURM**: ``/etc/slurm/federation.conf`` (included by the testbed's ``slurm.conf``;
  ``slurm.conf.j2``) adds a node ``afkit-SITE`` at the site's address in a
  partition named after the site and ``SlurmctldAddr=10.77.0.10`` (every client, also ``srun`` in a
  job at a site, reaches the controller there: the sites cannot reach its loopback); ``scontrol
  reconfigure`` tells slurmctld. Each site's slurmd runs in the site's namespace (``slurmd -N
  afkit-SITE``) with a copy of ``slurm.conf`` naming its own spool, pid and log files.
- **Registry**: an OCI registry (``docker-registry``, plain HTTP) on ``10.77.0.10:5000`` for
  images pulled at the sites (``oras://10.77.0.10:5000/...``), state in ``/srv/federation/registry``.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple, TypedDict

import jinja2

from afkit.errors import AfkitError
from afkit.storage import daemon as dmn
from afkit_testbed import templates_dir
from afkit_testbed.federation import net
from afkit_testbed.federation.links import Federation, Site

POOL_CONF = Path("/etc/condor/config.d/60-afkit-federation.conf")
SLURM_CONF = Path("/etc/slurm/slurm.conf")
SLURM_FED_CONF = Path("/etc/slurm/federation.conf")
NO_SITES = "# no federation sites\n"  # an empty included file makes every slurm command warn
COLLECTOR_PORT = 9618
REGISTRY_PORT = 5000
SITE_CPUS = 2  # slots (HTCondor) and CPUs (SLURM) per site: two jobs at once
SITE_MEMORY_MB = 2048
START_TIMEOUT = 90.0
Log = Callable[[str], object]  # where progress lines go (print, or nothing)


def render(name: str, **values: Any) -> str:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(templates_dir() / "federation"),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    return env.get_template(name).render(**values)


def slurm_node(site: Site) -> str:
    return f"afkit-{site.name}"


def registry_address() -> str:
    return f"{net.submit_address()}:{REGISTRY_PORT}"


def site_dir(root: Path, site: Site) -> Path:
    return root / site.name


def _condor_files(root: Path, site: Site) -> dmn.DaemonFiles:
    d = site_dir(root, site) / "condor"
    return dmn.DaemonFiles(d / "condor_config", d / "log" / "master.out", d / "master.pid")


def _slurmd_files(root: Path, site: Site) -> dmn.DaemonFiles:
    d = site_dir(root, site) / "slurm"
    return dmn.DaemonFiles(d / "slurm.conf", d / "slurmd.log", d / "slurmd.pid")


def _registry_files(root: Path) -> dmn.DaemonFiles:
    d = root / "registry"
    return dmn.DaemonFiles(d / "config.yml", d / "registry.log", d / "registry.pid")


def _run(cmd: list[str], what: str) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise AfkitError(f"{what}: '{' '.join(cmd)}' failed (exit {proc.returncode}): {proc.stderr.strip()}")
    return proc.stdout


def _wait(check: Any, what: str, log: Path, timeout: float = START_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.5)
    raise AfkitError(
        f"{what} did not come up within {timeout:.0f} s", hint=f"its log {log}:\n{dmn.log_tail(log)}"
    )


# ---------------------------------------------------------------- HTCondor


def _condor_val(name: str) -> str:
    return _run(["condor_config_val", name], f"condor_config_val {name}").strip()


def _pool_ready(address: str | None = None) -> bool:
    """The pool's schedd advertises ADDRESS (default the federation address) and its collector answers."""
    address = address or net.submit_address()
    proc = subprocess.run(
        ["condor_status", "-pool", f"{address}:{COLLECTOR_PORT}", "-schedd", "-af", "MyAddress"],
        capture_output=True,
        text=True,
        check=False,
    )
    return proc.returncode == 0 and f"<{address}:" in proc.stdout


def pool_up(log: Log) -> None:
    """The testbed's pool on the federation address (restarted once when the file is new)."""
    text = render("pool.conf.j2", submit_address=net.submit_address())
    if POOL_CONF.is_file() and POOL_CONF.read_text() == text and _pool_ready():
        return
    POOL_CONF.write_text(text)
    _run(["condor_restart", "-master"], "restarting the testbed's HTCondor pool")
    _wait(
        _pool_ready,
        "the testbed's HTCondor pool on the federation address",
        Path("/var/log/condor/MasterLog"),
    )
    log(f"afkit federation: HTCondor pool listening on {net.submit_address()}:{COLLECTOR_PORT}")


def pool_down() -> None:
    """The pool back on loopback only (restarted; returns once its schedd is there again)."""
    if POOL_CONF.is_file():
        POOL_CONF.unlink()
        subprocess.run(["condor_restart", "-master"], capture_output=True, check=False)
        _wait(lambda: _pool_ready("127.0.0.1"), "the testbed's HTCondor pool on 127.0.0.1",
              Path("/var/log/condor/MasterLog"))  # fmt: skip


def site_slots(site: str) -> list[dict[str, str]]:
    """The pool's slots of SITE: name, state, activity (empty when none)."""
    proc = subprocess.run(
        [
            "condor_status",
            "-const",
            f'AFKIT_SITE == "{site}"',
            "-af:t",
            "Name",
            "State",
            "Activity",
            "MyAddress",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    keys = ("name", "state", "activity", "address")
    return [dict(zip(keys, ln.split("\t"), strict=False)) for ln in proc.stdout.splitlines() if ln.strip()]


def _master_pid(files: dmn.DaemonFiles) -> int | None:
    """The pid of the site's condor_master if it runs with our config (its $CONDOR_CONFIG)."""
    try:
        pid = int(files.pidfile.read_text().strip())
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except (OSError, ValueError):
        return None
    return pid if f"CONDOR_CONFIG={files.config}".encode() in environ else None


def condor_down(root: Path, site: Site) -> None:
    files = _condor_files(root, site)
    pid = _master_pid(files)
    if pid is not None:  # SIGTERM: the master shuts its startd down (and the jobs there)
        os.kill(pid, signal.SIGTERM)
        _wait(
            lambda: not dmn.alive(pid),
            f"{site.name}: condor_master stop",
            files.log,
            timeout=30,
        )
    files.pidfile.unlink(missing_ok=True)


def testbed_condor_files() -> list[str]:
    """The testbed's config.d files (as condor_config names them), without the pool's federation file."""
    dirs = [Path(d.strip()) for d in _condor_val("LOCAL_CONFIG_DIR").split(",") if d.strip()]
    files = sorted(f for d in dirs if d.is_dir() for f in d.iterdir() if f.is_file())
    return [str(f) for f in sorted(files, key=lambda f: f.name) if f != POOL_CONF]


# A site without the shared filesystem: its execute node runs in a mount namespace of its own in
# which /tmp and /home (where users keep their campaigns, the submit directories) are new, empty
# tmpfs (each user's home directory made again, empty).
_HIDE_SUBMIT_FILES = (
    "mount -t tmpfs -o mode=1777 afkit-no-shared-fs /tmp && "
    "mount -t tmpfs -o mode=0755 afkit-no-shared-fs /home && "
    "getent passwd | while IFS=: read -r _ _ uid gid _ home _; do "
    'case $home in /home/?*) mkdir -p "$home" && chown "$uid:$gid" "$home" ;; esac; done && '
    'exec "$@"'
)


def _without_submit_files(cmd: list[str]) -> list[str]:
    """CMD where the submit host's files are not seen (above): the site's workers get a job's
    files only by HTCondor's file transfer."""
    unshare = ["unshare", "--mount", "--propagation", "private", "--"]
    return [*unshare, "sh", "-c", _HIDE_SUBMIT_FILES, "sh", *cmd]


def condor_up(root: Path, site: Site) -> None:
    files = _condor_files(root, site)
    if _master_pid(files) is not None:
        return
    local = files.config.parent
    for sub in ("log", "spool", "execute", "lock", "run"):
        (local / sub).mkdir(parents=True, exist_ok=True)
        shutil.chown(local / sub, "condor", "condor")
    (local / "execute").chmod(0o755)
    files.config.write_text(
        render(
            "condor.conf.j2",
            shared_fs=site.shared_fs,
            site=site.name,
            address=site.address,
            submit_address=net.submit_address(),
            local_dir=str(local),
            testbed_files=testbed_condor_files(),
            trust_domain=_condor_val("TRUST_DOMAIN"),
            cpus=SITE_CPUS,
            memory_mb=SITE_MEMORY_MB,
        )
    )
    env = {**os.environ, "CONDOR_CONFIG": str(files.config)}
    cmd = net.in_ns(site.name, "condor_master", "-f")
    dmn.spawn(cmd if site.shared_fs else _without_submit_files(cmd), files, env)
    _wait(
        lambda: bool(site_slots(site.name)), f"{site.name}: HTCondor execute node", local / "log" / "StartLog"
    )


# ---------------------------------------------------------------- SLURM


def _site_slurm_conf(files: dmn.DaemonFiles) -> str:
    """The testbed's slurm.conf for a site's slurmd: its spool, pid and log files in the site's
    directory (the controller's address comes from the federation's SlurmctldAddr)."""
    text = SLURM_CONF.read_text()
    d = files.config.parent
    for key, value in (
        ("SlurmdSpoolDir", d / "spool"),
        ("SlurmdPidFile", d / "slurmd.pidfile"),
        ("SlurmdLogFile", files.log),
    ):
        text = re.sub(rf"^{key}=.*$", f"{key}={value}", text, flags=re.M)
    return text


def node_state(site: Site) -> str:
    proc = subprocess.run(
        ["sinfo", "-h", "-N", "-n", slurm_node(site), "-o", "%T"], capture_output=True, text=True, check=False
    )
    return proc.stdout.strip()


def slurm_up(fed: Federation, root: Path, log: Log) -> None:
    text = render(
        "slurm.conf.j2",
        sites=[{"name": s.name, "node": slurm_node(s), "address": s.address} for s in fed.sites.values()],
        submit_address=net.submit_address(),
        cpus=SITE_CPUS,
        memory_mb=SITE_MEMORY_MB,
    )
    current = SLURM_FED_CONF.read_text() if SLURM_FED_CONF.is_file() else ""
    if current != text:
        SLURM_FED_CONF.write_text(text)
        _run(["scontrol", "reconfigure"], "scontrol reconfigure (the federation's SLURM nodes)")
    for site in fed.sites.values():
        files = _slurmd_files(root, site)
        if dmn.read_pid(files) is not None:
            continue
        (files.config.parent / "spool").mkdir(parents=True, exist_ok=True)
        files.config.write_text(_site_slurm_conf(files))
        slurmd = ["slurmd", "-D", "-f", str(files.config), "-N", slurm_node(site)]
        dmn.spawn(net.in_ns(site.name, *slurmd), files)
    for site in fed.sites.values():
        _wait(
            lambda s=site: node_state(s) == "idle",
            f"{site.name}: slurmd {slurm_node(site)}",
            _slurmd_files(root, site).log,
        )
    log(f"afkit federation: SLURM partitions {', '.join(fed.sites)} up")


def slurm_down(fed: Federation, root: Path) -> None:
    for site in fed.sites.values():
        dmn.stop(_slurmd_files(root, site))
    if SLURM_FED_CONF.is_file() and SLURM_FED_CONF.read_text() != NO_SITES:
        SLURM_FED_CONF.write_text(NO_SITES)
        subprocess.run(["scontrol", "reconfigure"], capture_output=True, check=False)


# ---------------------------------------------------------------- registry


class RegistryGuard(NamedTuple):
    """A guarded registry's certificate and key (HTTPS) and htpasswd file (bcrypt; logins)."""

    cert: Path
    key: Path
    htpasswd: Path


def registry_config(store: Path, guard: RegistryGuard | None) -> str:
    """docker-registry's configuration (distribution 2.8, docs/configuration.md): plain HTTP, or
    with GUARD HTTPS (http.tls) and a login (auth.htpasswd: bcrypt entries only)."""
    text = ("version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n"
            f"    rootdirectory: {store}\n  delete:\n    enabled: true\n"
            f"http:\n  addr: {registry_address()}\n")  # fmt: skip
    if guard is not None:
        text += f"  tls:\n    certificate: {guard.cert}\n    key: {guard.key}\n"
        text += f"auth:\n  htpasswd:\n    realm: afkit-federation\n    path: {guard.htpasswd}\n"
    return text


def registry_up(root: Path, guard: RegistryGuard | None = None) -> None:
    files = _registry_files(root)
    if dmn.read_pid(files) is not None:
        return
    files.config.parent.mkdir(parents=True, exist_ok=True)
    files.config.write_text(registry_config(files.config.parent / "store", guard))
    proc_pid = dmn.spawn(["docker-registry", "serve", str(files.config)], files).pid
    if not dmn.wait_for_port(REGISTRY_PORT, 30, host=net.submit_address()):
        raise AfkitError(
            f"the registry (pid {proc_pid}) did not come up on {registry_address()}",
            hint=f"its log {files.log}:\n{dmn.log_tail(files.log)}",
        )


def registry_down(root: Path) -> None:
    dmn.stop(_registry_files(root))


# ---------------------------------------------------------------- all of it


class SiteWorkers(TypedDict):
    """How a job asks for SITE's batch workers (state.json ``workers``)."""

    htcondor_requirements: str
    slurm_partition: str
    slurm_node: str


class Workers(TypedDict):
    """The batch part of state.json: the image registry and every site's workers."""

    registry: str
    workers: dict[str, SiteWorkers]


class WorkerStatus(TypedDict):
    """A site's workers as ``afkit federation status`` prints them."""

    htcondor_slots: list[dict[str, str]]
    slurm_node: str


def up(fed: Federation, root: Path, log: Log = print, registry: RegistryGuard | None = None) -> Workers:
    """Start the sites' workers and the registry (REGISTRY: HTTPS and a login); return what clients
    need (for state.json)."""
    registry_up(root, registry)
    pool_up(log)
    for site in fed.sites.values():
        condor_up(root, site)
    log(f"afkit federation: HTCondor execute nodes of {', '.join(fed.sites)} in the pool")
    slurm_up(fed, root, log)
    return describe(fed)


def describe(fed: Federation) -> Workers:
    return {
        "registry": registry_address(),
        "workers": {
            s.name: {
                "htcondor_requirements": f'AFKIT_SITE == "{s.name}"',
                "slurm_partition": s.name,
                "slurm_node": slurm_node(s),
            }
            for s in fed.sites.values()
        },
    }


def down(fed: Federation, root: Path) -> None:
    slurm_down(fed, root)
    for site in fed.sites.values():
        condor_down(root, site)
    pool_down()
    registry_down(root)


def status(fed: Federation) -> dict[str, WorkerStatus]:
    return {
        s.name: {"htcondor_slots": site_slots(s.name), "slurm_node": node_state(s)}
        for s in fed.sites.values()
    }
