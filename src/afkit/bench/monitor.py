"""Host monitor: one sample of the host per wall-clock second, written as JSON lines.

Each record has the CPU use (percent of all cores, and per core), the load average, the
network and disk throughput over the second before it (bytes/s) and how busy the busiest block
device was (percent of the second it had I/O in flight, the kernel's ``io_ticks``). It runs in a
daemon thread that sleeps between samples: its cost is a few reads of ``/proc`` per second.

Standard library only (Linux ``/proc``): the campaign job runs it on worker nodes that have only
the system's Python (afkit's job core, docs/federation.md).
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from afkit.bench.records import JsonlWriter
from afkit.errors import AfkitError
from afkit.signals import signals_to_main_thread

PROC = Path("/proc")
SECTOR = 512  # /proc/diskstats counts 512-byte sectors whatever the device's own size


@dataclass
class Counters:
    """Cumulative counters at one moment: CPU jiffies (busy, total) overall and per core, network
    bytes (all interfaces), disk bytes and per-device milliseconds with I/O in flight."""

    cpu: tuple[int, int] = (0, 0)
    cores: list[tuple[int, int]] = field(default_factory=list)
    net_recv: int = 0
    net_sent: int = 0
    disk_read: int | None = None
    disk_write: int | None = None
    busy_ms: dict[str, int] = field(default_factory=dict)


def _cpu_times(fields: list[str]) -> tuple[int, int]:
    values = [int(v) for v in fields[:8]]  # user nice system idle iowait irq softirq steal
    idle = values[3] + values[4]
    return sum(values) - idle, sum(values)


def _read(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="ascii", errors="replace").splitlines()
    except OSError:
        return []


def counters(proc: Path = PROC) -> Counters:
    """The host's counters now (from PROC, ``/proc``)."""
    c = Counters()
    for line in _read(proc / "stat"):
        name, *rest = line.split()
        if name == "cpu":
            c.cpu = _cpu_times(rest)
        elif name.startswith("cpu"):
            c.cores.append(_cpu_times(rest))
    for line in _read(proc / "net" / "dev")[2:]:
        _, _, data = line.partition(":")
        values = data.split()
        if len(values) >= 9:
            c.net_recv += int(values[0])
            c.net_sent += int(values[8])
    disks = set(os.listdir("/sys/block")) if Path("/sys/block").is_dir() else None
    for line in _read(proc / "diskstats"):
        values = line.split()
        if len(values) < 13 or (disks is not None and values[2] not in disks):
            continue  # partitions: their I/O is counted on their disk
        c.disk_read = (c.disk_read or 0) + int(values[5]) * SECTOR
        c.disk_write = (c.disk_write or 0) + int(values[9]) * SECTOR
        c.busy_ms[values[2]] = int(values[12])
    return c


def _percent(prev: tuple[int, int], now: tuple[int, int]) -> float:
    total = now[1] - prev[1]
    return round(100.0 * (now[0] - prev[0]) / total, 1) if total > 0 else 0.0


def _mem_used(proc: Path = PROC) -> int:
    info = {}
    for line in _read(proc / "meminfo"):
        key, _, rest = line.partition(":")
        info[key] = int(rest.split()[0]) * 1024 if rest.split() else 0
    return info.get("MemTotal", 0) - info.get("MemAvailable", 0)


def busiest_device_percent(prev: dict[str, int], now: dict[str, int], dt: float) -> float | None:
    """Percent of DT the busiest block device had I/O in flight (None without devices)."""
    busy = [(now[d] - prev[d]) / (dt * 1000) * 100 for d in now if d in prev]
    return round(min(max(busy), 100.0), 1) if busy else None


def sample(prev: Counters, dt: float) -> tuple[dict[str, object], Counters]:
    """One record from the counters now and ``prev`` taken ``dt`` seconds before."""
    now = counters()
    rec: dict[str, object] = {
        "type": "monitor",
        "t": round(time.time(), 3),
        "cpu_percent": _percent(prev.cpu, now.cpu),
        "cpu_percent_per_core": [_percent(p, n) for p, n in zip(prev.cores, now.cores, strict=False)],
        "load": [round(x, 3) for x in os.getloadavg()],
        "mem_used_bytes": _mem_used(),
        "net_recv_bps": round((now.net_recv - prev.net_recv) / dt, 1),
        "net_sent_bps": round((now.net_sent - prev.net_sent) / dt, 1),
    }
    if now.disk_read is not None and prev.disk_read is not None:
        rec["disk_read_bps"] = round((now.disk_read - prev.disk_read) / dt, 1)
        rec["disk_write_bps"] = round(((now.disk_write or 0) - (prev.disk_write or 0)) / dt, 1)
    busy = busiest_device_percent(prev.busy_ms, now.busy_ms, dt)
    if busy is not None:
        rec["disk_busy_percent"] = busy
    return rec, now


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
        assert self._writer is not None
        prev = counters()
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
            with signals_to_main_thread():  # Ctrl-C, SIGTERM: handled at once by the main thread
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
