"""Signature verification: what ``apptainer verify --json`` reports becomes a pass or a clear
refusal (exit 6). A fake ``apptainer`` prints the JSON the real one prints (cmd/internal/cli/pgp.go,
keyList); the real sign/verify round trip is in tests/integration/test_image_signing.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from afkit.campaign.image import refusal, resolve_image
from afkit.errors import ExitCode, InvalidError, NotFoundError
from afkit.image import apptainer

FP = "0123456789abcdef0123456789abcdef01234567"
OTHER = "fedcba9876543210fedcba9876543210fedcba98"


def _json(*signers: tuple[str, bool, bool]) -> str:
    keys = [
        {"Signer": {"Partition": "FS", "Name": "afkit", "Fingerprint": fp, "KeyLocal": True,
                    "KeyCheck": key_ok, "DataCheck": data_ok}}
        for fp, key_ok, data_ok in signers
    ]  # fmt: skip
    return json.dumps({"Signatures": len(signers), "SignerKeys": keys or None})


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    script = tmp_path / "apptainer"
    script.write_text('#!/bin/sh\n[ "$1" = verify ] || exit 2\ncat "$J"\nexit "$(cat "$J.rc")"\n')
    script.chmod(0o755)
    monkeypatch.setenv("J", str(tmp_path / "out.json"))
    return script


def _say(fake: Path, text: str, rc: int) -> None:
    """What the fake apptainer verify prints, and its exit code."""
    fake.with_name("out.json").write_text(text)
    fake.with_name("out.json.rc").write_text(str(rc))


def test_signed_by_the_expected_key_passes(fake: Path) -> None:
    _say(fake, _json((FP, True, True)), 0)
    assert apptainer.verify("x.sif", FP.upper(), binary=str(fake)) == FP.upper()


def test_unsigned_image_is_refused(fake: Path) -> None:
    _say(fake, _json(), 255)
    with pytest.raises(InvalidError) as exc:
        apptainer.verify("x.sif", FP, binary=str(fake))
    assert exc.value.code == ExitCode.INVALID and "x.sif is not signed" in str(exc.value)


def test_other_signer_is_refused_and_named(fake: Path) -> None:
    _say(fake, _json((OTHER, True, True)), 0)
    with pytest.raises(InvalidError) as exc:
        apptainer.verify("x.sif", FP, binary=str(fake))
    assert f"signed by {OTHER.upper()}, not by the expected {FP.upper()}" in str(exc.value)


def test_modified_image_is_refused(fake: Path) -> None:
    _say(fake, _json((FP, True, False)), 255)
    with pytest.raises(InvalidError) as exc:
        apptainer.verify("x.sif", FP, binary=str(fake))
    assert "does not match the content (FS modified after signing)" in str(exc.value)


def test_unknown_signing_key_is_refused(fake: Path) -> None:
    _say(fake, _json(("", False, True)), 255)
    with pytest.raises(InvalidError, match="not in the keyring"):
        apptainer.verify("x.sif", FP, binary=str(fake))


def test_malformed_fingerprint_is_a_validation_error(fake: Path) -> None:
    with pytest.raises(InvalidError, match="bad fingerprint"):
        apptainer.verify("x.sif", "1234", binary=str(fake))


@pytest.mark.parametrize("secret", [False, True], ids=["public key", "signing key"])
def test_a_missing_key_file_hints_at_an_export_command_apptainer_takes(
    fake: Path, tmp_path: Path, secret: bool
) -> None:
    """`apptainer key export [--secret] [--armor] <output-file>` takes one argument (it asks which
    key on stdin): no fingerprint; --secret only for the signing key, never for a public one."""
    with pytest.raises(NotFoundError) as exc:
        if secret:
            apptainer.sign("x.sif", tmp_path / "none.asc", binary=str(fake))
        else:
            apptainer.verify("x.sif", FP, binary=str(fake), public_key=tmp_path / "none.pub")
    want = "apptainer key export --secret --armor FILE" if secret else "apptainer key export --armor FILE"
    assert f"'{want}'" in (exc.value.hint or ""), exc.value.hint
    assert "FINGERPRINT" not in (exc.value.hint or "")


def test_commands_never_ask_a_key_server() -> None:
    assert apptainer.verify_command("a.sif", binary="apptainer") == [
        "apptainer",
        "verify",
        "--local",
        "--json",
        "a.sif",
    ]
    assert apptainer.sign_command("a.sif", binary="apptainer") == [
        "apptainer",
        "sign",
        "--keyidx",
        "0",
        "a.sif",
    ]


def _sif(tmp_path: Path) -> Path:
    sif = tmp_path / "img.sif"
    sif.write_bytes(b"#!/usr/bin/env run-singularity\n\0SIF_MAGIC\x0001" + b"p" * 64)
    return sif


def test_campaign_records_the_verified_fingerprint(
    fake: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AFKIT_APPTAINER", str(fake))
    _say(fake, _json((FP, True, True)), 0)
    wd = tmp_path / "res" / "image"
    info = resolve_image({"sif": str(_sif(tmp_path)), "fingerprint": FP}, base_dir=str(tmp_path),
                         workdir=str(wd), output=str(wd / "image.json"),
                         log=str(wd / "image.log"))  # fmt: skip
    assert info["fingerprint"] == FP.upper()
    assert json.loads((wd / "image.json").read_text())["fingerprint"] == FP.upper()
    assert refusal(tmp_path / "res") is None


def test_campaign_refuses_an_unsigned_image_before_any_job(
    fake: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AFKIT_APPTAINER", str(fake))
    _say(fake, _json(), 255)
    wd = tmp_path / "res" / "image"
    with pytest.raises(InvalidError):
        resolve_image({"sif": str(_sif(tmp_path)), "fingerprint": FP}, base_dir=str(tmp_path),
                      workdir=str(wd), output=str(wd / "image.json"), log=str(wd / "image.log"))  # fmt: skip
    assert not (wd / "image.json").exists()
    refused = refusal(tmp_path / "res")
    assert refused is not None and refused.code == ExitCode.INVALID and "is not signed" in str(refused)
