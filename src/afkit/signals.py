"""Signals in afkit's threaded processes: Ctrl-C and SIGTERM go to the main thread.

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
