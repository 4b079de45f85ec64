"""A job's Ctrl-C / SIGTERM reaches the main thread, which alone runs Python's signal handlers.

A job process has helper threads (the host monitor; a local wave's job threads). A process-directed
signal the kernel handed to one of them only woke the main thread when its blocking wait for the
payload ended: a 15 s payload ran to its end before the interrupt stopped it (seen with
``afkit campaign run`` and SIGTERM, 2 of 3 tries). Helper threads therefore start with SIGINT and
SIGTERM blocked (afkit.signals.signals_to_main_thread).
"""

from __future__ import annotations

import signal
import threading
from pathlib import Path

import pytest

from afkit.bench.monitor import HostMonitor
from afkit.signals import signals_to_main_thread

STOPS = {signal.SIGINT, signal.SIGTERM}


def _blocked(native_id: int) -> set[int]:
    """The signals thread NATIVE_ID of this process blocks (the kernel's SigBlk mask)."""
    status = Path(f"/proc/self/task/{native_id}/status").read_text()
    mask = int(next(line.split()[1] for line in status.splitlines() if line.startswith("SigBlk:")), 16)
    return {sig for sig in range(1, 65) if mask >> (sig - 1) & 1}


def test_the_host_monitor_thread_leaves_the_stop_signals_to_the_main_thread(tmp_path: Path) -> None:
    with HostMonitor(tmp_path / "monitor.jsonl") as monitor:
        thread = monitor._thread
        assert thread is not None and thread.native_id is not None
        assert _blocked(thread.native_id) >= STOPS
        assert not STOPS & _blocked(threading.get_native_id())  # the main thread still takes them


def test_threads_started_in_the_context_block_the_stop_signals_and_the_caller_does_not() -> None:
    seen: list[set[int]] = []
    with signals_to_main_thread():
        worker = threading.Thread(target=lambda: seen.append(_blocked(threading.get_native_id())))
        worker.start()
    worker.join()
    assert seen[0] >= STOPS
    assert not STOPS & _blocked(threading.get_native_id())


def test_the_job_threads_of_a_local_wave_block_the_stop_signals(monkeypatch: pytest.MonkeyPatch) -> None:
    from afkit.campaign import job

    seen: list[set[int]] = []
    monkeypatch.setattr(job, "run", lambda spec, **_: seen.append(_blocked(threading.get_native_id())))
    job.run_all([object(), object()], [Path("a"), Path("b")], [Path("a.log"), Path("b.log")])  # type: ignore[list-item]
    assert len(seen) == 2 and all(s >= STOPS for s in seen)
    assert not STOPS & _blocked(threading.get_native_id())
