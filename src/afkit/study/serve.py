"""What a study on one host serves and reaches while it measures: ``afkit`` run as a command, an
XRootD origin or cache (``afkit storage up``) on this host or in a network namespace, and the box's
file server behind a shaped link (a network namespace joined to this one by a veth pair with a
token-bucket filter, tc-tbf(8), on both ends; nothing but the study's own addresses, 10.78.N.0/24).
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from afkit.errors import AfkitError, PrereqError, UsageError
from afkit.storage import daemon as dmn
from afkit.storage.scenarios import entry_port, get_scenario
from afkit.study.recipe import Facility

NS_DIR = Path("/run/netns")
BOX_NET = ipaddress.IPv4Network("10.78.0.0/16")  # the study's own: the federation uses 10.77.0.0/16


def say(text: str) -> None:
    """A host study's progress line on stderr."""
    print(f"afkit study: {text}", file=sys.stderr, flush=True)


def _in_ns(cmd: list[str], netns: str | None) -> list[str]:
    """CMD, run in network namespace NETNS when one is given."""
    return ["nsenter", f"--net={NS_DIR / netns}", "--", *cmd] if netns else cmd


def afkit(*argv: str, env: dict[str, str] | None = None, netns: str | None = None) -> str:
    """stdout of ``afkit ARGV`` (in network namespace NETNS, if given); AfkitError with the end of
    its stderr when it fails."""
    cmd = _in_ns([sys.executable, "-m", "afkit", *argv], netns)
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})}, check=False)
    if proc.returncode != 0:
        raise AfkitError(f"afkit {' '.join(argv[:3])} failed: {proc.stderr.strip()[-500:]}")
    return proc.stdout


def whole(fac: Facility, key: str) -> int:
    """params.KEY as a whole number >= 0 (UsageError naming it otherwise)."""
    try:
        value = int(str(fac.params[key]))
    except (KeyError, ValueError) as err:
        raise UsageError(f"params.{key} must be a whole number, not {fac.params.get(key)!r}") from err
    if value < 0:
        raise UsageError(f"params.{key} must not be negative, got {value}")
    return value


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """SIGTERM (condor_rm, kill) as an interrupt: the cleanup of a with-block runs as for Ctrl-C."""

    def stop(_sig: int, _frame: object) -> None:
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def summary(stdout: str) -> dict[str, Any]:
    """The summary an ``afkit bench`` command prints as its last line of output."""
    return dict(json.loads(stdout.strip().splitlines()[-1]))


@contextlib.contextmanager
def origin(
    data: Path, state: Path, port: int, *, netns: str | None = None, host: str = "127.0.0.1",
    allow: tuple[str, ...] = (),
) -> Iterator[str]:  # fmt: skip
    """An XRootD origin serving DATA on PORT (in NETNS, reached at HOST; clients from ALLOW too);
    yields its URL prefix ``root://HOST:PORT/``. Down again afterwards."""
    user = dmn.service_user()
    if user:
        dmn.give_to(user, data, *data.iterdir())
    env = {"AFKIT_STORAGE_BASE_PORT": str(port)}
    state.mkdir(parents=True, exist_ok=True)
    state.chmod(0o755)  # the daemon runs as the xrootd user
    extra = [a for h in allow for a in ("--allow", h)]
    try:
        afkit("storage", "up", "origin", "--data", str(data), "--state-dir", str(state), *extra,
              env=env, netns=netns)  # fmt: skip
        yield f"root://{host}:{port}/"
    finally:
        _down(state, env, netns)


@contextlib.contextmanager
def xcache(upstream: str, state: Path, port: int) -> Iterator[str]:
    """An XCache on this host's loopback (base port PORT) in front of UPSTREAM (host:port); yields
    its URL prefix."""
    env = {"AFKIT_STORAGE_BASE_PORT": str(port)}
    state.mkdir(parents=True, exist_ok=True)
    state.chmod(0o755)
    try:
        afkit("storage", "up", "xcache", "--origin", upstream, "--state-dir", str(state), env=env)
        yield f"root://127.0.0.1:{entry_port(get_scenario('xcache'), port)}/"
    finally:
        _down(state, env, None)


def _down(state: Path, env: dict[str, str], netns: str | None) -> None:
    cmd = [sys.executable, "-m", "afkit", "storage", "down", "all", "--state-dir", str(state)]
    subprocess.run(_in_ns(cmd, netns), env={**os.environ, **env}, capture_output=True, check=False)


def _ip(*argv: str, check: bool = True) -> None:
    proc = subprocess.run(["ip", *argv], capture_output=True, text=True, check=False)
    if check and proc.returncode != 0:
        raise AfkitError(f"ip {' '.join(argv)} failed: {proc.stderr.strip()}")


def tbf(rate_bit: int, dev: str, netns: str | None = None) -> list[str]:
    """tc's token bucket at RATE_BIT on DEV's egress (burst: 10 ms of data, at least 64 KiB)."""
    burst = max(rate_bit // 8 // 100, 64 * 1024)
    where = ["-n", netns] if netns else []
    return ["tc", *where, "qdisc", "replace", "dev", dev, "root", "tbf",
            "rate", f"{rate_bit}bit", "burst", str(burst), "latency", "100ms"]  # fmt: skip


def addresses(index: int) -> tuple[str, str]:
    """(this host's end, the server's end) of shaped link INDEX (1-250)."""
    if not 1 <= index <= 250:
        raise ValueError(f"link index {index} is not in 1-250")
    base = BOX_NET.network_address + (index << 8)
    return str(base + 1), str(base + 2)


@contextlib.contextmanager
def shaped_server(name: str, index: int, rate_bit: int) -> Iterator[str]:
    """Network namespace NAME (a file server) joined to this one by its own veth pair, shaped to
    RATE_BIT bit/s on both ends; yields the server's address. A namespace of that name left by a
    killed run is afkit's (the name is) and is deleted first; afterwards it is deleted again (with
    it its end of the pair, and so the pair)."""
    if os.geteuid() != 0:
        raise PrereqError("a network namespace needs root", hint="run the study as root (sudo)")
    here_if, there_if = f"afk{index}h", f"afk{index}s"
    here, there = addresses(index)
    _ip("netns", "del", name, check=False)
    _ip("link", "del", here_if, check=False)
    try:
        _ip("netns", "add", name)
        _ip("-n", name, "link", "set", "lo", "up")
        _ip("link", "add", here_if, "type", "veth", "peer", "name", there_if, "netns", name)
        _ip("addr", "add", f"{here}/24", "dev", here_if)
        _ip("link", "set", here_if, "up")
        _ip("-n", name, "addr", "add", f"{there}/24", "dev", there_if)
        _ip("-n", name, "link", "set", there_if, "up")
        for cmd in (tbf(rate_bit, here_if), tbf(rate_bit, there_if, name)):
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                raise AfkitError(f"{' '.join(cmd)} failed: {proc.stderr.strip()}")
        yield there
    finally:
        _ip("netns", "del", name, check=False)
        _ip("link", "del", here_if, check=False)
