"""Signals in afkit's processes: Ctrl-C and SIGTERM go to the main thread; children die with
their parent (``pdeathsig_prefix``) or are stopped by its interrupt (``forwarded``).

A common module (below the areas): the bench's host monitor and a campaign job's threads both start
their helper threads inside ``signals_to_main_thread()``; a campaign's own handlers of those
signals are ``afkit.campaign.interrupt``.
"""

from __future__ import annotations

import contextlib
import functools
import shutil
import signal
import subprocess
from collections.abc import Iterator


@functools.cache
def pdeathsig_prefix() -> tuple[str, ...]:
    """``setpriv --pdeathsig KILL --`` where setpriv has the option (util-linux >= 2.33), else none:
    a command started behind it is killed when the thread that started it dies, however it died
    (SIGKILL, or SIGTERM's default action, which runs no cleanup)."""
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return ()
    try:
        usage = subprocess.run([setpriv, "--help"], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ()
    return (setpriv, "--pdeathsig", "KILL", "--") if "--pdeathsig" in usage.stdout else ()


@contextlib.contextmanager
def signals_to_main_thread() -> Iterator[None]:
    """Threads started inside start with SIGINT and SIGTERM blocked (a thread inherits its
    creator's signal mask), so the kernel delivers them to the main thread, the only one that runs
    Python's handlers. A signal the kernel gave to a helper thread (the host monitor, a wave's job
    threads) only woke the main thread when its blocking call ended: a job's payload ran to its end
    before the interrupt stopped it. Signals arriving meanwhile stay pending, none is lost."""
    stops = {signal.SIGINT, signal.SIGTERM}
    old = signal.pthread_sigmask(signal.SIG_BLOCK, stops)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def forwarded(argv: list[str]) -> int:
    """ARGV (``afkit study run``'s ``afkit campaign run ...``) as a child that an interrupt of this
    process stops the way it stops itself, and its exit code. The child is its own process group,
    so a terminal's Ctrl-C reaches it once, through here: SIGINT and SIGTERM to this process are
    passed on to it as SIGINT (it stops its snakemake, which cancels the batch jobs, says what is
    missing and exits 130), and this process waits until it has ended. (subprocess.run killed it
    instead, 0.25 s after a SIGINT: its snakemake, a process group of its own, ran on and started
    new jobs; a SIGTERM ended this process alone.)"""
    proc = subprocess.Popen(argv, process_group=0)

    def forward(_signum: int, _frame: object) -> None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGINT)

    old = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        return proc.wait()
    finally:
        for s, h in old.items():
            signal.signal(s, h)
