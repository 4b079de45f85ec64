"""Start, stop and inspect the xrootd daemons of a scenario — exactly the ones afkit started.

A daemon is started in its own session with its config, log and pidfile in the scenario's
state directory; ``stop`` signals a pid only when that process's command line names the
config file afkit wrote, so a stale pidfile never kills an unrelated process.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from afkit.atomic import write_atomic
from afkit.errors import AfkitError, PrereqError

PORT_TIMEOUT = 30.0
STOP_TIMEOUT = 10.0


@dataclass(frozen=True)
class DaemonFiles:
    config: Path
    log: Path
    pidfile: Path


def port_open(port: int, host: str = "127.0.0.1", timeout: float = 0.5) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        return sock.connect_ex((host, port)) == 0


def wait_for_port(
    port: int, timeout: float, alive: subprocess.Popen[bytes] | None = None, host: str = "127.0.0.1"
) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if port_open(port, host):
            return True
        if alive is not None and alive.poll() is not None:
            return False
        time.sleep(0.1)
    return False


def _cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def listener(port: int) -> str:
    """Who listens on PORT (TCP, any address), as ``pid N (command line)``; "" when unknown (no
    such socket any longer, or its process is not visible to this user)."""
    import psutil

    try:
        conns = psutil.net_connections(kind="tcp")
    except psutil.Error:
        return ""
    for conn in conns:
        if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port and conn.pid:
            cmd = " ".join(_cmdline(conn.pid))[:200]
            return f"pid {conn.pid} ({cmd})" if cmd else f"pid {conn.pid}"
    return ""


def read_pid(files: DaemonFiles) -> int | None:
    """The pid in the pidfile if that process is alive and runs *our* config; else None."""
    try:
        pid = int(files.pidfile.read_text().strip())
    except (OSError, ValueError):
        return None
    return pid if str(files.config) in _cmdline(pid) else None


def log_tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def xrootd_binary() -> str:
    xrootd = shutil.which("xrootd")
    if xrootd is None:
        raise PrereqError("'xrootd' not found on PATH", hint="install xrootd-server (the testbed has it)")
    return xrootd


def service_user() -> str | None:
    """xrootd refuses to run as root: as root, run it as ``$AFKIT_XROOTD_USER`` (default xrootd)."""
    if os.geteuid() != 0:
        return None
    import pwd

    user = os.environ.get("AFKIT_XROOTD_USER", "xrootd")
    try:
        pwd.getpwnam(user)
    except KeyError:
        raise PrereqError(
            f"running as root, but there is no user '{user}' to run xrootd as (it refuses root)",
            hint="create the user (the xrootd packages do) or set AFKIT_XROOTD_USER",
        ) from None
    return user


def check_reachable(user: str | None, state_dir: Path) -> None:
    """Root's daemons run as USER: every existing directory above STATE_DIR must let USER through."""
    if user is None:
        return
    import pwd

    entry = pwd.getpwnam(user)
    for parent in reversed(state_dir.absolute().parents):
        if not parent.is_dir():
            break
        st = parent.stat()
        through = (
            st.st_mode & 0o001
            or (st.st_uid == entry.pw_uid and st.st_mode & 0o100)
            or (st.st_gid == entry.pw_gid and st.st_mode & 0o010)
        )
        if not through:
            raise PrereqError(
                f"xrootd runs as user '{user}', who cannot reach the state directory {state_dir} "
                f"({parent} is mode {st.st_mode & 0o777:04o})",
                hint="give --state-dir (or AFKIT_STORAGE_STATE) a directory that user can reach",
            )


def give_to(user: str | None, *paths: Path) -> None:
    """Hand the directories and files afkit created (not their contents) to the service user."""
    if user is None:
        return
    import pwd

    entry = pwd.getpwnam(user)
    for path in paths:
        os.chown(path, entry.pw_uid, entry.pw_gid, follow_symlinks=False)


def spawn(
    cmd: list[str], files: DaemonFiles, env: dict[str, str] | None = None, out: Path | None = None
) -> subprocess.Popen[bytes]:
    """Start CMD as a daemon of its own session, its output appended to OUT (default
    ``files.log``), its pid written to ``files.pidfile``."""
    out = files.log if out is None else out
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("ab") as sink:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT,
                                start_new_session=True, env=env)  # fmt: skip
    write_atomic(files.pidfile, f"{proc.pid}\n")
    return proc


def start(name: str, files: DaemonFiles, port: int, timeout: float = PORT_TIMEOUT,
          env: dict[str, str] | None = None) -> int:  # fmt: skip
    """Start xrootd with ``files.config`` (and ENV, default this process's); return its pid once
    ``port`` accepts connections."""
    xrootd = xrootd_binary()
    user = service_user()
    if read_pid(files) is not None:
        return int(files.pidfile.read_text())
    if port_open(port):
        holder = listener(port)
        raise PrereqError(
            f"port {port} for {name} is already in use by another program{f': {holder}' if holder else ''}",
            hint="stop it, or choose other ports with AFKIT_STORAGE_BASE_PORT",
        )
    stdout = files.log.with_suffix(".out")
    proc = spawn([xrootd, "-c", str(files.config), "-l", str(files.log), *(["-R", user] if user else [])],
                 files, env=env, out=stdout)  # fmt: skip
    if not wait_for_port(port, timeout, proc):
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        proc.wait()
        files.pidfile.unlink(missing_ok=True)
        raise AfkitError(
            f"xrootd '{name}' did not come up on port {port}",
            hint=f"its log {files.log}:\n{log_tail(files.log)}\n{log_tail(stdout, 5)}",
        )
    return proc.pid


def stop(files: DaemonFiles, timeout: float = STOP_TIMEOUT) -> bool:
    """Stop the daemon of ``files`` if afkit started it; True when one was stopped."""
    pid = read_pid(files)
    if pid is None:
        files.pidfile.unlink(missing_ok=True)
        return False
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and alive(pid):
        time.sleep(0.1)
    if alive(pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    files.pidfile.unlink(missing_ok=True)
    return True


def alive(pid: int) -> bool:
    """Whether PID runs (a zombie does not; one of ours is reaped)."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # reap it if it is our child
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().split(") ", 1)[1][0] != "Z"
    except (OSError, IndexError):
        return False
