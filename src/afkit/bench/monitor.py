"""Host monitor: one psutil sample per wall-clock second, written as JSON lines.

Each record has the CPU use (percent of all cores, and per core), the load average, the
network and disk throughput over the second before it (bytes/s) and how busy the busiest block
device was (percent of the second it had I/O in flight, Linux ``busy_time``). It runs in a daemon thread that
sleeps between samples: its cost is a few system calls per second.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from afkit.bench.records import JsonlWriter
from afkit.errors import AfkitError


def _counters() -> tuple[Any, Any, dict[str, Any]]:
    import psutil

    disk = psutil.disk_io_counters()
    perdisk = psutil.disk_io_counters(perdisk=True) or {}
    return psutil.net_io_counters(), disk, perdisk


def busiest_device_percent(prev: dict[str, Any], now: dict[str, Any], dt: float) -> float | None:
    """Percent of DT the busiest block device had I/O in flight (None without ``busy_time``)."""
    busy = [
        (now[d].busy_time - prev[d].busy_time) / (dt * 1000) * 100
        for d in now
        if d in prev and hasattr(now[d], "busy_time")
    ]
    return round(min(max(busy), 100.0), 1) if busy else None


def sample(
    prev: tuple[Any, Any, dict[str, Any]], dt: float
) -> tuple[dict[str, Any], tuple[Any, Any, dict[str, Any]]]:
    """One record from the counters now and ``prev`` taken ``dt`` seconds before."""
    import os

    import psutil

    net, disk, perdisk = _counters()
    pnet, pdisk, pperdisk = prev
    rec: dict[str, Any] = {
        "type": "monitor",
        "t": round(time.time(), 3),
        "cpu_percent": psutil.cpu_percent(interval=None),
        "cpu_percent_per_core": psutil.cpu_percent(interval=None, percpu=True),
        "load": [round(x, 3) for x in os.getloadavg()],
        "mem_used_bytes": psutil.virtual_memory().used,
        "net_recv_bps": round((net.bytes_recv - pnet.bytes_recv) / dt, 1),
        "net_sent_bps": round((net.bytes_sent - pnet.bytes_sent) / dt, 1),
    }
    if disk is not None and pdisk is not None:
        rec["disk_read_bps"] = round((disk.read_bytes - pdisk.read_bytes) / dt, 1)
        rec["disk_write_bps"] = round((disk.write_bytes - pdisk.write_bytes) / dt, 1)
    busy = busiest_device_percent(pperdisk, perdisk, dt)
    if busy is not None:
        rec["disk_busy_percent"] = busy
    return rec, (net, disk, perdisk)


class HostMonitor:
    """``with HostMonitor(path): ...`` samples the host every second while the block runs."""

    def __init__(self, path: Path | None, interval: float = 1.0) -> None:
        self.path = path
        self.interval = interval
        self.samples = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._writer: JsonlWriter | None = None

    def _run(self) -> None:
        import psutil

        assert self._writer is not None
        psutil.cpu_percent(interval=None)
        psutil.cpu_percent(interval=None, percpu=True)
        prev = _counters()
        last = time.monotonic()
        while not self._stop.wait(self.interval - (time.time() % self.interval)):
            now = time.monotonic()
            rec, prev = sample(prev, max(now - last, 1e-6))
            last = now
            self._writer.write(rec)
            self.samples += 1

    def __enter__(self) -> HostMonitor:
        if self.path is not None:
            self._writer = JsonlWriter(self.path)
            self._thread = threading.Thread(target=self._run, name="afkit-monitor", daemon=True)
            self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._writer is not None:
            if isinstance(exc, AfkitError):
                self._writer.discard()  # nothing was measured: no monitor file either
            else:
                self._writer.close()


def monitor_path_for(output: str | None, explicit: str | None, disabled: bool) -> Path | None:
    """``--monitor FILE`` wins; else ``OUTPUT.monitor.jsonl`` beside a file output; none for stdout."""
    if disabled:
        return None
    if explicit:
        return Path(explicit)
    if output and output != "-":
        out = Path(output)
        stem = out.name.removesuffix(".jsonl").removesuffix(".json")
        return out.with_name(f"{stem}.monitor.jsonl")
    return None
