"""The campaign watchdog: a snakemake call that can no longer finish is stopped (``afkit campaign
run|retry``, afkit.campaign.runner).

afkit reads snakemake's log lines as they are printed. The call is stopped when

- snakemake's executor logs a critical error (``CRITICAL ERROR in check_active_jobs``: its status
  loop died and it would never see a job end) and then every record of the call exists, or every
  job it submitted has left the batch system and it has printed nothing for ``QUIET_S`` seconds
  (it submits nothing more); or
- every record of the call exists, every job it submitted has left the batch system, and snakemake
  has printed nothing for ``STALL_S`` seconds (it stopped making progress).

afkit then finishes the campaign from the records (the tables and the report are made from what
is on disk); a record that is missing makes the exit code 1, with the cause named.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from afkit.campaign import executors

STALL_S = 60.0  # seconds without a line from snakemake once every job has ended
QUIET_S = 10.0  # after a critical executor error: snakemake has stopped submitting
# an executor whose status loop died: it logs this and never reports a job's end again
CRITICAL = re.compile(r"CRITICAL ERROR in check_active_jobs.*|Error in check_active_jobs.*")


class Watchdog:
    """Fed snakemake's log lines; ``cause()`` says why the call must be stopped, or None."""

    def __init__(self, records: list[Path], *, stall_s: float | None = None,
                 queues: dict[str, Callable[[Iterable[str]], int | None]] | None = None) -> None:  # fmt: skip
        self.records = records
        self.stall_s = STALL_S if stall_s is None else stall_s
        batch = [e for e in executors.REGISTRY.values() if e.batch]
        # executor -> how many of the given batch job ids are still queued or running (None: unknown)
        self.queues = {e.name: e.queued for e in batch} if queues is None else queues
        # executor -> the line its snakemake plugin logs for a submitted batch job
        self.patterns = {e.name: e.submitted for e in batch if e.submitted is not None}
        self.submitted: dict[str, set[str]] = {}
        self.critical = ""
        self.last_line = time.monotonic()
        self._lock = threading.Lock()

    def feed(self, line: str) -> None:
        with self._lock:
            self.last_line = time.monotonic()
            for system, pattern in self.patterns.items():
                for m in pattern.finditer(line):
                    self.submitted.setdefault(system, set()).add(m.group(1))
            found = CRITICAL.search(line)
            if found and not self.critical:
                self.critical = found.group(0).strip()

    def cancel_submitted(self) -> None:
        """Cancel the batch jobs snakemake submitted (after it was killed: it cancelled none)."""
        with self._lock:
            submitted = {s: sorted(ids) for s, ids in self.submitted.items() if ids}
        for system, ids in submitted.items():
            executors.get(system).cancel(ids)

    def missing(self) -> list[Path]:
        return [p for p in self.records if not p.is_file()]

    def _queue_empty(self) -> bool | None:
        """Every submitted job has left the batch system (None: a batch system could not say)."""
        with self._lock:
            submitted = {s: sorted(ids) for s, ids in self.submitted.items() if ids}
        known = True
        for system, ids in submitted.items():
            queued = self.queues[system](ids)
            if queued is None:
                known = False
            elif queued:
                return False
        return True if known else None

    def cause(self, now: float | None = None) -> str | None:
        now = time.monotonic() if now is None else now
        with self._lock:
            critical, quiet = self.critical, now - self.last_line
        if critical:
            # its jobs still run and write their records; snakemake just never sees them end
            if self.missing() and (quiet < QUIET_S or self._queue_empty() is False):
                return None
            return f"snakemake's executor failed ({critical}): it would never see its jobs end"
        if quiet >= self.stall_s and not self.missing() and self._queue_empty() is not False:
            return (f"snakemake made no progress for {quiet:.0f} s although every job of the call "
                    "has ended and written its record")  # fmt: skip
        return None
