"""tests/waitsupport.py: wait_until, how tests wait for a condition instead of a fixed time."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest
from waitsupport import WaitTimeout, running, wait_until


def test_returns_the_predicates_value_once_it_holds(tmp_path: Path) -> None:
    flag = tmp_path / "ready"
    # the condition comes true later, made by another thread
    threading.Timer(0.2, flag.write_text, args=("yes",)).start()
    assert wait_until(lambda: flag.is_file() and flag.read_text(), 30, what="the flag file") == "yes"


def test_a_timeout_names_what_was_awaited() -> None:
    with pytest.raises(WaitTimeout, match=r"timed out after 0\.2 s waiting for the flag file"):
        wait_until(lambda: False, 0.2, what="the flag file")


@pytest.mark.parametrize(("load", "wall_min", "wall_max"), [(0.0, 0.3, 1.0), (8.0, 1.2, 3.0)])
def test_a_timeout_is_counted_in_the_cpu_time_the_load_leaves(
    monkeypatch: pytest.MonkeyPatch, load: float, wall_min: float, wall_max: float
) -> None:
    """On 2 cores at load 8 a second of wall time is a quarter of an idle one: a 0.3 s wait lasts
    about 1.2 s; idle, 0.3 s."""
    import os
    import time

    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr(os, "getloadavg", lambda: (load, load, load))
    start = time.monotonic()
    says = rf"0\.3 s waiting for the flag file \(\d+ s of wall time, load {load:.1f} on 2"
    with pytest.raises(WaitTimeout, match=says):
        wait_until(lambda: False, 0.3, 0.01, what="the flag file")
    assert wall_min <= time.monotonic() - start < wall_max


def test_a_wait_ends_at_ten_times_its_timeout_however_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    import os
    import time

    monkeypatch.setattr(os, "getloadavg", lambda: (1e6, 1e6, 1e6))
    start = time.monotonic()
    with pytest.raises(WaitTimeout):
        wait_until(lambda: False, 0.1, 0.01, what="the flag file")
    assert 1.0 <= time.monotonic() - start < 2.5


def test_a_process_that_ends_first_fails_the_wait_at_once_with_its_exit_code_and_output() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "print('it said this'); raise SystemExit(3)"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)  # fmt: skip
    with pytest.raises(WaitTimeout, match=r"exited 3 before the flag file: it said this") as exc:
        wait_until(lambda: False, 300, what="the flag file", proc=proc)
    assert isinstance(exc.value, AssertionError)  # pytest shows it as a failed assertion


def test_running_is_true_for_a_live_process_and_false_for_its_zombie_and_after_reaping() -> None:
    child = subprocess.Popen(["sleep", "30"])
    try:
        assert running(child.pid)
        child.kill()
        # killed but not yet reaped: a zombie, which is not running
        wait_until(lambda: Path(f"/proc/{child.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z",
                   timeout=10, what="the zombie")  # fmt: skip
        assert not running(child.pid)
    finally:
        child.wait()
    assert not running(child.pid)
