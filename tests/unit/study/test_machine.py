"""afkit.study.machine: the machine a study ran on, as its page and verdicts.json show it."""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path

import pytest

from afkit.study import machine


def test_a_run_is_recorded_as_running_then_ended_with_the_load_sampled_between(tmp_path: Path) -> None:
    path = tmp_path / "results" / machine.NAME
    with machine.watch(path, tmp_path, every=0.05) as run:
        during = json.loads(path.read_text())
        while len(run.samples) < 3:  # the sampler thread adds one every 0.05 s
            os.sched_yield()
    after = json.loads(path.read_text())
    assert during["run"] == "running" and after["run"] == "ended"
    assert after["cores"] == os.cpu_count() and after["kernel"] == platform.release()
    assert after["memory_gib"] > 0 and after["load1"]["samples"] >= 4
    assert after["load1"]["max"] >= after["load1"]["median"] >= 0


def test_an_interrupted_run_says_so_and_keeps_its_samples(tmp_path: Path) -> None:
    path = tmp_path / machine.NAME
    with pytest.raises(KeyboardInterrupt), machine.watch(path, tmp_path, every=60):
        raise KeyboardInterrupt
    facts = json.loads(path.read_text())
    assert facts["run"] == "interrupted" and facts["load1"]["samples"] == 2
    assert "(the run interrupted)" in machine.shown(facts)


def test_the_line_names_cores_memory_kernel_device_and_load() -> None:
    facts = {"host": "h", "cores": 2, "memory_gib": 23.4, "kernel": "6.18", "run": "ended",
             "device": {"device": "vda", "read_ahead_kb": "128", "scheduler": "none"},
             "load1": {"samples": 12, "median": 3.1, "max": 8.9}}  # fmt: skip
    assert machine.shown(facts) == (
        "h: 2 cores, 23.4 GiB, kernel 6.18; vda (results): read-ahead 128 KiB, scheduler none; "
        "load during the run: median 3.1, max 8.9 (12 samples)"
    )
    assert machine.shown({}) == "not recorded"


def test_a_run_whose_child_reported_the_interrupt_is_recorded_so(tmp_path: Path) -> None:
    """A study's campaign run exits 130 on Ctrl-C; the study itself raises nothing."""
    with machine.watch(tmp_path / machine.NAME, tmp_path, every=60) as run:
        run.ended = "interrupted"
    assert json.loads((tmp_path / machine.NAME).read_text())["run"] == "interrupted"
