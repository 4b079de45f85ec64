"""Counting what afkit does in tests by its audit events (``sys.audit``, PEP 578).

afkit raises ``afkit.campaign.validate`` when it validates a campaign, ``afkit.campaign.expand``
when it expands one into jobs and ``afkit.campaign.plan_read`` when it reads a plan file
(afkit.campaign.runplan). :func:`audited` collects them in this process; :func:`audit_env` is an
environment under which every Python process a command starts (snakemake, the rules' step
commands) appends them to a file (``PID EVENT ARGV...``), through a ``sitecustomize`` module put
first on ``PYTHONPATH``.
An audit hook cannot be removed: the one of this process is installed once and collects only
while a :func:`audited` block is open.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

PREFIX = "afkit."
_collecting: list[list[str]] = []
_installed: list[bool] = []

SITECUSTOMIZE = """\
import os
import sys

_LOG = os.environ.get("AFKIT_TEST_AUDIT_LOG")
if _LOG:

    def _afkit_events(event, args):
        if event.startswith("afkit."):
            with open(_LOG, "a", encoding="utf-8") as fh:
                fh.write(f"{os.getpid()} {event} {' '.join(sys.argv[:4])}\\n")

    sys.addaudithook(_afkit_events)
"""


def _hook(event: str, args: tuple[object, ...]) -> None:
    if _collecting and event.startswith(PREFIX):
        _collecting[-1].append(event)


@contextmanager
def audited() -> Iterator[list[str]]:
    """The afkit events raised in this process while the block runs, in order."""
    if not _installed:
        sys.addaudithook(_hook)
        _installed.append(True)
    events: list[str] = []
    _collecting.append(events)
    try:
        yield events
    finally:
        _collecting.pop()


def audit_env(where: Path, env: dict[str, str]) -> tuple[dict[str, str], Path]:
    """ENV with the event-writing sitecustomize (made in WHERE) first on PYTHONPATH, and the log
    file every Python process started with it appends ``PID EVENT`` lines to."""
    folder = where / "audit-site"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
    log = where / "audit.log"
    log.write_text("", encoding="utf-8")
    path = os.pathsep.join(p for p in (str(folder), env.get("PYTHONPATH", "")) if p)
    return {**env, "PYTHONPATH": path, "AFKIT_TEST_AUDIT_LOG": str(log)}, log


def events(log: Path) -> list[str]:
    """The events in LOG (written under :func:`audit_env`), in order."""
    return [line.split(" ")[1] for line in log.read_text(encoding="utf-8").splitlines()]
