"""Interrupts of a running campaign (Ctrl-C, SIGTERM) inside the snakemake process.

``install()`` (the workflow's ``onstart``, and ``afkit campaign job``) makes SIGINT and SIGTERM stop
the payloads this process started (``afkit.campaign.job``) and the job commands snakemake runs
(the rules' ``exec afkit campaign job``, local executor: each stops its payload) and raise
KeyboardInterrupt, so snakemake cancels
its batch jobs at once (condor_rm, scancel) instead of waiting for them (snakemake's own SIGTERM
handling waits). A job cut off this way leaves no record. ``interrupted()`` tells the workflow's
``onerror`` to exit 130. (Helper threads leave these signals to the main thread:
``afkit.signals.signals_to_main_thread``.)

A child started with :func:`run` (a job's payload, its image pull) is its own process group and
dies with the thread that started it: ``setpriv --pdeathsig KILL`` (util-linux) sets its
parent-death signal before it executes the command, so a job core killed outright (SIGKILL from
the batch system once its grace is over) takes its payload with it: Apptainer's master process
("Apptainer runtime parent") dies, the container's first process has its own parent-death
SIGKILL (apptainer/apptainer cmd/starter/c/starter.c, set_parent_death_signal), and with
``--pid`` (afkit.campaign.job.apptainer_command) everything in the container's PID namespace dies
with it. The batch systems' own tracking misses such processes where it has no cgroups (SLURM's
proctrack/linuxproc follows parent links; HTCondor's procd loses processes reparented to init).
On SIGINT/SIGTERM the children get SIGTERM, and SIGKILL after :data:`GRACE_S` when they are still
there (:func:`reap`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from types import FrameType

from afkit.signals import pdeathsig_prefix

GRACE_S = 5.0  # after SIGTERM, before SIGKILL to the children's process groups

_running: set[subprocess.Popen[str]] = set()
_lock = threading.Lock()
_state = {"interrupted": False}


def register(proc: subprocess.Popen[str]) -> None:
    with _lock:
        _running.add(proc)


def unregister(proc: subprocess.Popen[str]) -> None:
    with _lock:
        _running.discard(proc)


def run(cmd: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """CMD in its own process group, killed when the calling thread dies, stopped by an interrupt;
    its output captured."""
    proc = subprocess.Popen([*pdeathsig_prefix(), *cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, process_group=0, env=env)  # fmt: skip
    register(proc)
    try:
        out, err = proc.communicate()
    finally:
        unregister(proc)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def reap(grace: float = GRACE_S) -> None:
    """After an interrupt: wait up to GRACE seconds for the children to end, then SIGKILL their
    process groups (a payload that ignores SIGTERM, Apptainer forwarding it slowly)."""
    deadline = time.monotonic() + grace
    with _lock:
        procs = list(_running)
    for proc in procs:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)


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
