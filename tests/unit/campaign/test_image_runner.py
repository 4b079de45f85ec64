"""The campaign image record (SIF checks, digest) and the snakemake command lines of `campaign run`."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

from afkit.campaign import plan, runner
from afkit.campaign.image import resolve_image
from afkit.campaign.runplan import RunPlan
from afkit.errors import InvalidError, NotFoundError


def test_sif_path_gives_path_and_digest(tmp_path: Path) -> None:
    sif = tmp_path / "img.sif"
    data = b"#!/usr/bin/env run-singularity\n\0SIF_MAGIC\x0001" + b"x" * 1000
    sif.write_bytes(data)
    out = tmp_path / "res" / "image.json"
    out.parent.mkdir()
    info = resolve_image({"sif": "img.sif"}, base_dir=str(tmp_path), workdir=str(out.parent), output=str(out),
                         log=str(out.with_suffix(".log")))  # fmt: skip
    assert info["sha256"] == hashlib.sha256(data).hexdigest()
    assert json.loads(out.read_text()) == info
    assert info["path"] == str(sif.resolve())
    assert out.stat().st_mode & 0o777 == 0o644


def test_missing_sif(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="no such SIF file"):
        resolve_image({"sif": "/nonexistent/x.sif"}, base_dir=str(tmp_path), workdir=str(tmp_path),
                      output=str(tmp_path / "i.json"), log=str(tmp_path / "i.log"))  # fmt: skip


def test_not_a_sif(tmp_path: Path) -> None:
    (tmp_path / "x.sif").write_text("hello")
    with pytest.raises(InvalidError, match="not a SIF image"):
        resolve_image({"sif": "x.sif"}, base_dir=str(tmp_path), workdir=str(tmp_path),
                      output=str(tmp_path / "i.json"), log=str(tmp_path / "i.log"))  # fmt: skip
    assert not (tmp_path / "i.json").exists()


def test_one_executor_is_one_call(raw: dict[str, Any], make: Any, tmp_path: Path) -> None:
    raw["sites"]["far"]["executor"] = "local"
    calls = [c.argv for c in runner.plan_calls(RunPlan.make(make(raw)), tmp_path / "c.yaml")]
    assert len(calls) == 1
    assert calls[0][calls[0].index("--profile") + 1].endswith("workflows/profiles/local")
    assert "--config" not in calls[0]


def test_mixed_executors_run_per_site(raw: dict[str, Any], make: Any, tmp_path: Path) -> None:
    raw["benchmarks"][0]["sites"] = ["here", "far"]
    c = make(raw)
    calls = runner.plan_calls(RunPlan.make(c), tmp_path / "c.yaml", dry_run=True)
    assert len(calls) == 2
    here, far = (call.argv for call in calls)
    assert here[here.index("--profile") + 1].endswith("profiles/local")
    assert far[far.index("--profile") + 1].endswith("profiles/slurm")
    assert "afkit_site=far" in far
    assert not any("site/" in a or a.endswith(".done") for a in far)  # no marker file as the target
    assert "--dry-run" in far


def test_a_site_without_jobs_gets_no_call(raw: dict[str, Any], make: Any, tmp_path: Path) -> None:
    """far (slurm) runs no benchmark: its call would start snakemake to make nothing."""
    [planned] = runner.plan_calls(RunPlan.make(make(raw)), tmp_path / "c.yaml")
    call = planned.argv
    assert planned.site == "here"
    assert "afkit_site=here" in call and call[call.index("--profile") + 1].endswith("profiles/local")


def test_retry_targets_only_the_given_records(raw: dict[str, Any], make: Any, tmp_path: Path) -> None:
    c = make(raw)
    calls = runner.plan_calls(
        RunPlan.make(c), tmp_path / "c.yaml", targets={"here": ["results/x/job/read/a.json"]}
    )
    [call] = calls  # the site without targets gets no call
    assert "results/x/job/read/a.json" in call.argv
    assert "afkit_site=here" in call.argv
    assert call.records == (Path("results/x/job/read/a.json"),)


def test_a_run_expands_the_campaign_once_for_all_its_calls(
    raw: dict[str, Any], make: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Which sites get a call and each call's records come from one expansion of the campaign."""
    raw["benchmarks"][0]["sites"] = ["here", "far"]
    c = make(raw)
    expanded: list[str] = []
    real = plan.expand
    monkeypatch.setattr(plan, "expand", lambda campaign: expanded.append(campaign.name) or real(campaign))
    started: list[list[str]] = []

    class Finished:
        """A snakemake call that had nothing left to do."""

        def __init__(self, cmd: list[str], **_: Any) -> None:
            started.append(cmd)
            self.pid, self.stderr = 0, io.StringIO("")

        def wait(self, timeout: float | None = None) -> int:
            return 0

    monkeypatch.setattr(runner.subprocess, "Popen", Finished)
    assert runner.run(RunPlan.make(c), tmp_path / "c.yaml") == 0
    assert [next(a for a in cmd if a.startswith("afkit_site=")) for cmd in started] == [
        "afkit_site=here", "afkit_site=far"]  # fmt: skip
    assert expanded == [c.name]
