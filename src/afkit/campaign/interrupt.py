"""Interrupts of a running campaign (Ctrl-C, SIGTERM) inside the snakemake process.

``install()`` (the workflow's ``onstart``, and ``afkit campaign job``) makes SIGINT and SIGTERM stop
the payloads this process started (``afkit.campaign.job``) and the job commands snakemake runs
(the rules' ``exec afkit campaign job``, local executor: each stops its payload) and raise
KeyboardInterrupt, so snakemake cancels
its batch jobs at once (condor_rm, scancel) instead of waiting for them (snakemake's own SIGTERM
handling waits). A job cut off this way leaves no record. ``interrupted()`` tells the workflow's
``onerror`` to exit 130. (Helper threads leave these signals to the main thread:
``afkit.signals.signals_to_main_thread``.)
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from types import FrameType

_running: set[subprocess.Popen[str]] = set()
_lock = threading.Lock()
_state = {"interrupted": False}


def register(proc: subprocess.Popen[str]) -> None:
    with _lock:
        _running.add(proc)


def unregister(proc: subprocess.Popen[str]) -> None:
    with _lock:
        _running.discard(proc)


def stop_payloads(sig: int = signal.SIGTERM) -> None:
    """Signal the process groups of the payloads started by this process, and the job commands of
    the snakemake running in this process."""
    with _lock:
        procs = list(_running)
    for proc in procs:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
    _stop_shell_commands()


def _stop_shell_commands() -> None:
    """SIGTERM to the shell commands snakemake runs in this process (its local jobs; the job rules
    ``exec`` afkit, so the command is afkit's process, which stops its payload)."""
    import sys

    shell = getattr(sys.modules.get("snakemake.shell"), "shell", None)  # only inside snakemake
    if shell is None:
        return
    for jobid in list(getattr(shell, "_processes", {})):
        with contextlib.suppress(ProcessLookupError):
            shell.terminate(jobid)


def _handler(signum: int, frame: FrameType | None) -> None:
    first = not _state["interrupted"]
    _state["interrupted"] = True
    stop_payloads()
    if first:
        raise KeyboardInterrupt(signal.Signals(signum).name)


def install() -> None:
    """In the main thread of the snakemake process (the workflow's onstart)."""
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _handler)


def interrupted() -> bool:
    return _state["interrupted"]
