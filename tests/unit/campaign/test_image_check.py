"""The campaign's image is checked once, before any snakemake call: ``afkit campaign validate``
and ``run`` refuse a missing, unreadable or invalid SIF and a registry tag that does not exist,
with one error line and the documented exit code, in seconds, starting nothing.

The commands run as the user runs them (``python -m afkit`` in the campaign's directory). A SIF
this user cannot read: mode 000; tests run as root here, whom mode bits do not stop, so the
command then runs under ``setpriv`` without CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH (util-linux):
the kernel refuses root the file as it refuses any other user (a real EACCES, not a stand-in).
An ``oras://`` tag the registry does not hold: a fake ``apptainer`` on PATH fails the pull as
the real one does (the message below); the real registry's answer is
tests/integration/test_campaign_oras.py's.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from afkit.campaign import runner
from afkit.campaign.image import SIF_MAGIC
from afkit.campaign.runplan import RunPlan
from afkit.errors import ExitCode

SIF = b"#!/usr/bin/env run-singularity\n\0" + SIF_MAGIC + b"01\0" + b"x" * 64
# apptainer pull of an oras tag the registry does not hold: cmd/internal/cli/pull.go ("While
# pulling image from oci registry: %v") around internal/pkg/client/oras/pull.go ("failed to get
# checksum for %s: %s") around go-containerregistry's transport.Error ("GET URL: CODE: MESSAGE;
# DETAIL", pkg/v1/remote/transport/error.go) with the distribution registry's MANIFEST_UNKNOWN.
REF = "oras://127.0.0.1:5000/afkit/bench:nope"
FATAL = ("FATAL:   While pulling image from oci registry: failed to get checksum for "
         f"{REF}: GET http://127.0.0.1:5000/v2/afkit/bench/manifests/nope: MANIFEST_UNKNOWN: "
         "manifest unknown; map[Tag:nope]")  # fmt: skip
FAKE_APPTAINER = f"""#!/bin/sh
printf '%s\\n' "$*" >> "$FAKE_CALLS"
echo '{FATAL}' >&2
exit 255
"""
LIMIT_S = 5.0  # docs/campaigns.md, "Faults": refused in seconds, not after every site's snakemake
CPU_S = 2.5  # afkit's start-up and check: 0.6 s of CPU


class Took(NamedTuple):
    wall: float
    cpu: float  # seconds of CPU of the process and its children


def afkit(
    cwd: Path, *args: str, prefix: tuple[str, ...] = ()
) -> tuple[subprocess.CompletedProcess[str], Took]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    proc = subprocess.run([*prefix, sys.executable, "-m", "afkit", *args], cwd=cwd, capture_output=True,
                          text=True, check=False)  # fmt: skip
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)  # the process and all it waited for
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return proc, Took(wall, cpu)


def quick(took: Took) -> None:
    """Refused in under LIMIT_S; or, on a host so loaded that afkit's own start-up nears that (2
    cores shared by parallel test workers: 9 s measured at load 17 for what takes 1 s idle), with
    under CPU_S of work by afkit and everything it started (snakemake alone needs more)."""
    assert took.wall < LIMIT_S or took.cpu < CPU_S, f"{took.wall:.1f} s, {took.cpu:.1f} s of CPU"


def without_dac_override() -> tuple[str, ...]:
    """The prefix under which mode 000 stops this user (root: no DAC override capabilities)."""
    if os.geteuid() != 0:
        return ()
    setpriv = shutil.which("setpriv")
    assert setpriv, "setpriv (util-linux) is needed to drop root's DAC override for this test"
    return (setpriv, "--bounding-set", "-dac_override,-dac_read_search", "--")


def refused_once(proc: subprocess.CompletedProcess[str], code: ExitCode, text: str, cwd: Path) -> None:
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("afkit: error:")]
    assert proc.returncode == code, proc.stderr
    assert len(errors) == 1 and text in errors[0], proc.stderr
    assert "valid;" not in proc.stdout
    assert "afkit: $" not in proc.stderr  # no snakemake call was started
    assert not (cwd / ".snakemake").exists()


def _missing(sif: Path) -> tuple[ExitCode, str]:
    return ExitCode.NOT_FOUND, f"image.sif: no such SIF file: {sif}"


def _directory(sif: Path) -> tuple[ExitCode, str]:
    sif.mkdir()
    return ExitCode.INVALID, f"image.sif: {sif} is not a file"


def _not_a_sif(sif: Path) -> tuple[ExitCode, str]:
    sif.write_text("#!/bin/sh\necho I am a shell script\n")
    return ExitCode.INVALID, f"image.sif: {sif} is not a SIF image"


def _unreadable(sif: Path) -> tuple[ExitCode, str]:
    sif.write_bytes(SIF)
    sif.chmod(0)
    return ExitCode.PREREQ, f"image.sif: cannot read {sif}: permission denied"


CASES = {"missing": _missing, "directory": _directory, "not-a-sif": _not_a_sif, "unreadable": _unreadable}


@pytest.mark.parametrize("action", ["validate", "run"])
@pytest.mark.parametrize("case", list(CASES))
def test_a_bad_sif_is_refused_once_before_anything_starts(
    case: str, action: str, raw: dict[str, Any], write: Any, tmp_path: Path
) -> None:
    code, text = CASES[case](tmp_path / "fake.sif")  # the campaign's image.sif, beside its file
    prefix = without_dac_override() if case == "unreadable" else ()
    campaign = str(write(raw))
    proc, took = afkit(tmp_path, "campaign", action, campaign, prefix=prefix)
    refused_once(proc, code, text, tmp_path)
    assert not (tmp_path / "results").exists()  # nothing written, no empty image.log
    quick(took)


def test_validate_of_a_good_sif_says_valid_and_nothing_else(
    raw: dict[str, Any], write: Any, tmp_path: Path
) -> None:
    (tmp_path / "fake.sif").write_bytes(SIF)
    write(raw)
    proc, _ = afkit(tmp_path, "campaign", "validate", "campaign.yaml")
    assert proc.returncode == 0, proc.stderr
    [line] = proc.stdout.splitlines()
    assert line.startswith("campaign.yaml: valid; campaign unit")


@pytest.fixture
def apptainer_without_the_tag(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake apptainer on PATH whose pull fails as the real one's does for a missing tag; its calls."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "apptainer").write_text(FAKE_APPTAINER, encoding="utf-8")
    (bindir / "apptainer").chmod(0o755)
    calls = tmp_path / "apptainer.calls"
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}/usr/bin:/bin")
    monkeypatch.setenv("FAKE_CALLS", str(calls))
    monkeypatch.delenv("AFKIT_REGISTRY_INSECURE", raising=False)
    return calls


def test_run_with_an_oras_tag_that_does_not_exist_is_exit_5_once_before_any_site(
    raw: dict[str, Any], write: Any, tmp_path: Path, apptainer_without_the_tag: Path
) -> None:
    raw["image"] = {"sif": REF}
    campaign = str(write(raw))
    proc, took = afkit(tmp_path, "campaign", "run", campaign)
    refused_once(proc, ExitCode.NOT_FOUND, f"image.sif: cannot pull {REF}: {FATAL}", tmp_path)
    [pull] = apptainer_without_the_tag.read_text().splitlines()  # one pull, for every site
    assert pull.startswith("pull ") and pull.endswith(REF)
    [image_dir] = tmp_path.glob("results/unit-*/image")
    assert sorted(p.name for p in image_dir.iterdir()) == ["image.log"]  # no SIF, no partial file
    assert FATAL in (image_dir / "image.log").read_text()  # the log the message names says why
    quick(took)


def test_validate_of_an_oras_tag_says_in_one_line_it_was_not_checked(
    raw: dict[str, Any], write: Any, tmp_path: Path, apptainer_without_the_tag: Path
) -> None:
    raw["image"] = {"sif": REF}
    proc, _ = afkit(tmp_path, "campaign", "validate", str(write(raw)))
    assert proc.returncode == 0, proc.stderr
    valid, note = proc.stdout.splitlines()
    assert "valid; campaign unit" in valid
    assert note == (f"image {REF}: a registry reference, not checked from here (afkit campaign run pulls it "
                    "before any job: exit 5 when it cannot)")  # fmt: skip
    assert not apptainer_without_the_tag.exists() and not (tmp_path / "results").exists()


def test_a_call_that_failed_without_making_the_image_starts_no_later_site(
    raw: dict[str, Any], make: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    # an image built from a tag fails in the first site's call: the second site would only fail again
    monkeypatch.chdir(tmp_path)
    failing = [sys.executable, "-c", "import sys; sys.exit(1)"]
    calls = [runner.Call(site, failing, ()) for site in ("here", "far")]
    monkeypatch.setattr(runner, "plan_calls", lambda *a, **k: calls)
    assert runner.run(RunPlan.make(make(raw)), tmp_path / "campaign.yaml") == 1
    err = capfd.readouterr().err
    assert err.count("afkit: $") == 1
    assert "the campaign's image was not made" in err and "no later site starts" in err
