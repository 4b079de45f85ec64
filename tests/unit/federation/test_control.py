"""`afkit federation up` on a federation that is already up (no namespaces are made here)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from afkit.errors import UnsafeError
from afkit_testbed.federation import control, links, net


@pytest.fixture
def running(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A federation 'up' with the default link file: its state file and its WAN namespace."""
    state = tmp_path / "state.json"
    state.write_text(json.dumps({"links": str(links.default_links_file()), "sites": {}}))
    monkeypatch.setattr(control, "state_file", lambda: state)
    monkeypatch.setattr(net, "namespaces", lambda: [links.WAN_NS])
    monkeypatch.setattr(control.os, "geteuid", lambda: 0)
    return state


def test_up_again_with_the_same_link_file_returns_the_running_state(running: Path) -> None:
    said: list[str] = []
    state = control.up(links.load(), log=said.append)
    assert state == json.loads(running.read_text())
    assert said and "already up" in said[0]


def test_up_with_another_link_file_is_refused_rather_than_ignored(running: Path, tmp_path: Path) -> None:
    other = tmp_path / "slow.yaml"
    shutil.copy(links.default_links_file(), other)
    with pytest.raises(UnsafeError, match=r"is up with .*links\.yaml, not .*slow\.yaml") as err:
        control.up(links.load(other), log=lambda _msg: None)
    assert "afkit federation down" in (err.value.hint or "")


def test_up_guarded_on_an_open_federation_switches_it_in_place(
    running: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its storage and registry restarted guarded, its namespaces and batch workers kept (control.switch)."""
    calls: list[bool] = []
    monkeypatch.setattr(control, "switch", lambda fed, guarded, log: calls.append(guarded) or {"switched": 1})
    assert control.up(links.load(), log=lambda _msg: None, guarded=True) == {"switched": 1}
    assert calls == [True]
    assert control.up(links.load(), log=lambda _msg: None) == json.loads(
        running.read_text()
    )  # open: as it is
