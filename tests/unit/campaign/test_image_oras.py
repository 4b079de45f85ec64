"""``image: {sif: oras://...}``: the pull command, pulled once, a clear error and no partial file.

A fake ``apptainer`` on PATH stands in for the real one (the real pull is in
tests/integration/test_campaign_oras.py): it logs its arguments and either writes the "pulled"
file (its second-to-last argument) or fails like apptainer does for an unknown tag.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from afkit.campaign.image import oras_pull_command, resolve_image
from afkit.errors import NotFoundError, PrereqError

REF = "oras://registry.example.org:5050/afkit/bench:v1"
PAYLOAD = b"#!/usr/bin/env run-singularity\n\0SIF_MAGIC0001" + b"p" * 100

FAKE = """#!/bin/sh
printf '%s\\n' "$*" >> "{calls}"
if [ "$FAKE_FAIL" = 1 ]; then
  printf 'partial' > "$3"
  echo 'INFO:    Downloading oras image'
  echo 'FATAL:   While pulling image from oci registry: MANIFEST_UNKNOWN: manifest unknown' >&2
  exit 255
fi
for last; do :; done
dest=""
for a; do [ "$a" = "$last" ] && break; dest=$a; done
printf '{payload}' > "$dest"
"""


@pytest.fixture
def fake_apptainer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    calls = tmp_path / "calls.txt"
    script = bindir / "apptainer"
    payload = PAYLOAD.decode("latin-1").replace("\0", "\\000")
    script.write_text(FAKE.format(calls=calls, payload=payload), encoding="utf-8")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:/usr/bin:/bin")
    monkeypatch.delenv("AFKIT_REGISTRY_INSECURE", raising=False)
    monkeypatch.delenv("FAKE_FAIL", raising=False)
    return calls


def _resolve(tmp_path: Path, ref: str = REF) -> dict[str, object]:
    wd = tmp_path / "res" / "image"
    return resolve_image({"sif": ref}, base_dir=str(tmp_path), workdir=str(wd), output=str(wd / "image.json"),
                         log=str(wd / "image.log"))  # fmt: skip


def test_pull_command_is_https_unless_insecure_is_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AFKIT_REGISTRY_INSECURE", raising=False)
    assert oras_pull_command(REF, Path("/r/x.part")) == ["apptainer", "pull", "/r/x.part", REF]
    monkeypatch.setenv("AFKIT_REGISTRY_INSECURE", "yes")  # only "1" switches HTTPS off
    assert "--no-https" not in oras_pull_command(REF, Path("/r/x.part"))
    monkeypatch.setenv("AFKIT_REGISTRY_INSECURE", "1")
    assert oras_pull_command(REF, Path("/r/x.part")) == ["apptainer", "pull", "--no-https", "/r/x.part", REF]


def test_pulled_once_with_digest_and_source(tmp_path: Path, fake_apptainer: Path) -> None:
    info = _resolve(tmp_path)
    wd = tmp_path / "res" / "image"
    sif = wd / "image.sif"
    assert sif.read_bytes() == PAYLOAD
    assert info["sha256"] == hashlib.sha256(PAYLOAD).hexdigest()
    assert info["path"] == str(sif.resolve()) and info["source"] == REF
    assert json.loads((wd / "image.json").read_text()) == info
    assert not (wd / ".image.sif.part").exists()
    assert fake_apptainer.read_text().splitlines() == [f"pull {wd / '.image.sif.part'} {REF}"]
    assert (wd / "image.log").read_text().startswith(f"$ apptainer pull {wd / '.image.sif.part'} {REF}\n")

    # the SIF is there: resolving again does not call apptainer
    assert _resolve(tmp_path)["sha256"] == info["sha256"]
    assert len(fake_apptainer.read_text().splitlines()) == 1


def test_insecure_env_adds_no_https(
    tmp_path: Path, fake_apptainer: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AFKIT_REGISTRY_INSECURE", "1")
    _resolve(tmp_path)
    [call] = fake_apptainer.read_text().splitlines()
    assert call.startswith("pull --no-https ")


def test_failed_pull_is_clear_and_leaves_nothing(
    tmp_path: Path, fake_apptainer: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_FAIL", "1")
    with pytest.raises(NotFoundError, match=r"cannot pull oras://.*:v1: FATAL: .*manifest unknown") as exc:
        _resolve(tmp_path)
    wd = tmp_path / "res" / "image"
    assert str(wd / "image.log") in str(exc.value)
    assert exc.value.hint and "AFKIT_REGISTRY_INSECURE=1" in exc.value.hint
    assert not (wd / ".image.sif.part").exists()
    assert not (wd / "image.sif").exists()
    assert not (wd / "image.json").exists()


def test_no_apptainer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(PrereqError, match="apptainer not found"):
        _resolve(tmp_path)
