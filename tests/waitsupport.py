"""Waiting in tests: ``wait_until`` polls a condition instead of sleeping a fixed time.

Shared by the unit and the integration tests (``pythonpath = ["tests"]`` in pyproject.toml's
pytest settings puts this folder on ``sys.path``). A test waits for something it can observe (a
file appears, a record is written, a process is gone, a port answers), never for a number of
seconds; the timeout only bounds a wait that would otherwise hang. Its bats twin is
``wait_until`` in ``tests/bats/waiting.bash``.

A timeout is what the awaited work needs on an idle machine: it is counted in the CPU time a
runnable process gets, not in wall time. Each second of waiting counts ``cores / max(cores, load)``
(``os.getloadavg``'s one-minute load): at make test's own load of 8-13 on 2 cores a 60 s wait lasts
up to 4-6 minutes of wall time, idle it lasts 60 s. So a test's patience follows the machine, not
the machine its author had; a wall-time cap (``WALL_CAP`` times the timeout) still ends a wait that
would never hold, and pytest-timeout / BATS_TEST_TIMEOUT bound the whole test.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


WALL_CAP = 10  # a wait ends after at most this many times its timeout in wall time, however loaded


def cpu_share() -> float:
    """The share of a core that one second of wall time gives a runnable process now:
    cores / max(cores, the one-minute load average); 1 on an idle machine."""
    cores = os.cpu_count() or 1
    try:
        load = os.getloadavg()[0]
    except OSError:
        return 1.0
    return cores / max(float(cores), load)


class WaitTimeout(AssertionError):
    """The awaited condition did not hold in time (or the process it depended on ended first)."""


def _ended(proc: subprocess.Popen[Any], what: str) -> WaitTimeout:
    """The failure for PROC having ended before WHAT: its exit code and the tail of its output."""
    out: Any
    err: Any
    try:
        out, err = proc.communicate(timeout=10)
    except (ValueError, OSError, subprocess.TimeoutExpired):  # its pipes were read or closed already
        out, err = "", ""
    tail = "".join(x if isinstance(x, str) else x.decode(errors="replace") for x in (out or "", err or ""))
    return WaitTimeout(f"{proc.args!r} exited {proc.returncode} before {what}: {tail[-3000:]}")


def wait_until(
    predicate: Callable[[], T],
    timeout: float,
    interval: float = 0.1,
    *,
    what: str,
    proc: subprocess.Popen[Any] | None = None,
) -> T:
    """Call PREDICATE every INTERVAL seconds until it returns a true value, and return that value.

    Raise WaitTimeout naming WHAT (the awaited condition, e.g. "the job's first interval record")
    when TIMEOUT seconds of an idle machine pass first (wall seconds weighed by cpu_share(); at most
    WALL_CAP x TIMEOUT of wall time), or at once when PROC (the process that should bring the
    condition about) ends before it holds. PREDICATE is called once more at the deadline.
    """
    start = last = time.monotonic()
    spent = 0.0  # idle-machine seconds
    while True:
        value = predicate()
        if value:
            return value
        if proc is not None and proc.poll() is not None:
            value = predicate()  # it may have made the condition true just before it ended
            if value:
                return value
            raise _ended(proc, what)
        now = time.monotonic()
        spent += (now - last) * cpu_share()
        last = now
        wall = now - start
        if spent >= timeout or wall >= WALL_CAP * timeout:
            value = predicate()
            if value:
                return value
            raise WaitTimeout(
                f"timed out after {timeout:g} s waiting for {what} ({wall:.0f} s of wall time, "
                f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)"
            )
        time.sleep(min(interval, max(0.001, timeout - spent)))


def running(pid: int) -> bool:
    """PID is a live process, not a zombie waiting for its parent (/proc/PID/stat's state field,
    after the command name in parentheses, which may itself hold spaces and ')')."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _default_sigint() -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def ctrl_c_when(argv: list[str], cwd: Path, log: Path, marker: str, what: str) -> int:
    """Run ARGV in CWD in a session of its own (its stderr in LOG), wait until LOG holds MARKER
    (WHAT: for the timeout's message), then send SIGINT to its process group as a terminal's
    Ctrl-C does; its exit code (a process still there after 120 s is killed)."""
    import signal

    return interrupt_when(argv, cwd, log, marker, what, signal.SIGINT, group=True)


def interrupt_when(
    argv: list[str], cwd: Path, log: Path, marker: str, what: str, sig: int, *, group: bool
) -> int:
    """As ctrl_c_when, with signal SIG sent to ARGV's process group (GROUP: a terminal's Ctrl-C)
    or to its process alone (``kill PID``, a batch system's or a service manager's SIGTERM)."""
    import os
    import signal

    with log.open("w") as err:
        # the program gets Ctrl-C as a terminal's foreground job does, with SIGINT's default
        # disposition, whatever this test run inherited (a run started with '&' by a script ignores
        # SIGINT, and so would every program it starts)
        proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True,
                                preexec_fn=_default_sigint)  # fmt: skip
        try:
            wait_until(lambda: marker in log.read_text(), 300, what=what, proc=proc)
            if group:
                os.killpg(proc.pid, sig)
            else:
                proc.send_signal(sig)
            return proc.wait(timeout=120)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
