"""The campaign image: a SIF path, an ``oras://`` reference, or a tag built with ``afkit image build``.

Writes ``image.json`` with the image's absolute path, sha256, tag and signer fingerprint: the
provenance every job record carries (results from different images are never mixed silently).
With ``image.fingerprint`` the image must carry a valid signature by that key before any job runs
(``apptainer verify``, afkit.image.apptainer.verify); a refusal is also written to
``<results>/image/refused.json`` so that ``afkit campaign run`` can exit 6 with its message.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from afkit.errors import AfkitError, ExitCode, InvalidError, NotFoundError, PrereqError
from afkit.image import apptainer
from afkit.image.workdir import MARKER


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def build_base(build: dict[str, Any], base_dir: str) -> str | None:
    """The ``--base`` of the build: the campaign's (a relative ``localimage:`` path is relative to
    the campaign file), else ``$AFKIT_BASE_IMAGE``, else None (the profile's default)."""
    base = build.get("base") or os.environ.get("AFKIT_BASE_IMAGE") or None
    if base and base.startswith("localimage:") and build.get("base"):
        path = Path(base.removeprefix("localimage:"))
        if not path.is_absolute():
            base = f"localimage:{(Path(base_dir) / path).resolve()}"
    return base


def build_command(build: dict[str, Any], outdir: Path, base: str | None) -> list[str]:
    cmd = [sys.executable, "-m", "afkit", "image", "build", "--profile", build["profile"],
           "--tag", build["tag"], "--output", str(outdir.resolve())]  # fmt: skip
    if base:
        cmd += ["--base", base]
    return [*cmd, "-y"]


def _from_build(build: dict[str, Any], base_dir: str, workdir: Path, log: Path) -> dict[str, Any]:
    """``afkit image build ... --output WORKDIR -y``: WORKDIR (``<results>/image``) is the builder's
    working directory, so its store is reused by a rebuild. The builder cleans WORKDIR, so its
    output goes to a temporary log beside WORKDIR, moved to LOG afterwards."""
    base = build_base(build, base_dir)
    cmd = build_command(build, workdir, base)
    if not (workdir / MARKER).is_file():
        # a build that failed before adopting WORKDIR left only this rule's files: the builder
        # refuses a non-empty directory it did not create
        for name in (log.name, "image.json"):
            (workdir / name).unlink(missing_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{log.name}.", dir=workdir.parent)
    tmp_log = Path(tmp_name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write("$ " + " ".join(cmd) + "\n")
            fh.flush()
            proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=fh, text=True, check=False)
            fh.write(proc.stdout)
        os.chmod(tmp_log, 0o644)
        workdir.mkdir(parents=True, exist_ok=True)
        os.replace(tmp_log, log)
    finally:
        tmp_log.unlink(missing_ok=True)
    if proc.returncode != 0:
        raise AfkitError(
            f"afkit image build --profile {build['profile']} --tag {build['tag']} failed "
            f"(exit {proc.returncode}); see {log}",
            hint="run the same command by hand (first line of the log) to see the builder's message",
        )
    lines = proc.stdout.strip().splitlines()
    sif = Path(lines[-1]) if lines else workdir / "missing.sif"
    manifest_path = sif.with_suffix(".json")
    if not sif.is_file() or not manifest_path.is_file():
        raise NotFoundError(
            f"afkit image build left no SIF and manifest in {workdir} (printed: {sif})", hint=f"see {log}"
        )
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    sha = manifest.get("sif_sha256")
    if not sha:
        raise InvalidError(f"{manifest_path}: the builder's manifest has no sif_sha256", hint=f"see {log}")
    return {
        "path": str(sif.resolve()),
        "sha256": sha,
        "tag": manifest.get("tag", build["tag"]),
        "source": "build",
        "profile": manifest.get("profile", build["profile"]),
        "base": manifest.get("base", base or ""),
        "manifest": str(manifest_path.resolve()),
    }


INSECURE_ENV = "AFKIT_REGISTRY_INSECURE"


def oras_pull_command(ref: str, dest: Path) -> list[str]:
    """``apptainer pull [--no-https] DEST REF``. Plain HTTP only when ``$AFKIT_REGISTRY_INSECURE=1``
    (a test registry; never the default). Apptainer itself already falls back to HTTP for a
    registry on localhost / 127.0.0.1."""
    return apptainer.pull_command(ref, dest, insecure=os.environ.get(INSECURE_ENV, "") == "1")


def _apptainer_error(log: Path) -> str:
    """The last FATAL/ERROR line apptainer wrote to LOG (empty when none)."""
    lines = [ln.strip() for ln in log.read_text(encoding="utf-8", errors="replace").splitlines()]
    errs = [ln for ln in lines if ln.startswith(("FATAL", "ERROR"))]
    return errs[-1] if errs else ""


def _from_oras(ref: str, workdir: Path, log: Path) -> dict[str, Any]:
    """Pull REF once into WORKDIR/image.sif (through a partial file, removed on failure)."""
    if apptainer.command_name() is None:
        raise PrereqError("apptainer not found on PATH (needed to pull the campaign image)")
    sif = workdir / "image.sif"
    if not sif.exists():
        tmp = workdir / ".image.sif.part"
        tmp.unlink(missing_ok=True)
        cmd = oras_pull_command(ref, tmp)
        with log.open("a", encoding="utf-8") as fh:
            fh.write("$ " + " ".join(cmd) + "\n")
            fh.flush()
            proc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, check=False)
        if proc.returncode != 0 or not tmp.is_file():
            tmp.unlink(missing_ok=True)
            why = _apptainer_error(log) or f"exit {proc.returncode}"
            raise NotFoundError(
                f"image.sif: cannot pull {ref}: {why} (see {log})",
                hint="check the reference (oras://HOST[:PORT]/PATH:TAG), the registry and your "
                "'apptainer registry login'; for a plain-HTTP test registry set "
                f"{INSECURE_ENV}=1",
            )
        tmp.replace(sif)
    return {"path": str(sif.resolve()), "sha256": sha256_of(sif), "tag": "", "source": ref}


REFUSED = "refused.json"


def check_signature(image: dict[str, Any], info: dict[str, Any], base_dir: str, workdir: Path) -> str:
    """The verified signer fingerprint ('' when the campaign names none). A refusal (InvalidError,
    exit 6) is written to WORKDIR/refused.json first; a pass removes an earlier one."""
    refused = workdir / REFUSED
    if not image.get("fingerprint"):
        refused.unlink(missing_ok=True)
        return ""
    key = image.get("key")
    if key and not Path(key).is_absolute():
        key = str(Path(base_dir) / key)
    try:
        fingerprint = apptainer.verify(info["path"], image["fingerprint"], public_key=key)
    except AfkitError as err:
        fd, tmp = tempfile.mkstemp(prefix=f".{REFUSED}.", dir=workdir)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump({"error": str(err), "hint": err.hint or "", "code": int(err.code)}, fh)
        os.chmod(tmp, 0o644)
        os.replace(tmp, refused)
        raise
    refused.unlink(missing_ok=True)
    return fingerprint


def refusal(results_dir: Path) -> AfkitError | None:
    """The image refusal the last run recorded (message, hint, exit code), if any."""
    path = results_dir / "image" / REFUSED
    if not path.is_file():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    return AfkitError(data["error"], hint=data["hint"] or None, code=ExitCode(data["code"]))


def resolve_image(
    image: dict[str, Any], *, base_dir: str, workdir: str, output: str, log: str
) -> dict[str, Any]:
    wd, logp = Path(workdir), Path(log)
    wd.mkdir(parents=True, exist_ok=True)
    if "build" in image:
        info = _from_build(image["build"], base_dir, wd, logp)
        info["fingerprint"] = check_signature(image, info, base_dir, wd)
        _write_info(info, image, output, logp)
        return info
    logp.write_text("", encoding="utf-8")
    if str(image.get("sif", "")).startswith("oras://"):
        info = _from_oras(image["sif"], wd, logp)
    else:
        sif = Path(image.get("sif", ""))
        sif = sif if sif.is_absolute() else Path(base_dir) / sif
        if not sif.is_file():
            raise NotFoundError(
                f"image.sif: no such SIF file: {sif}", hint="build it (scripts/mkbase bench) or fix the path"
            )
        with sif.open("rb") as fh:
            head = fh.read(64)
        if b"SIF_MAGIC" not in head:
            raise InvalidError(f"image.sif: {sif} is not a SIF image", hint="give a .sif built by apptainer")
        info = {
            "path": str(sif.resolve()),
            "sha256": sha256_of(sif),
            "tag": image.get("tag", ""),
            "source": "sif",
        }
    info["fingerprint"] = check_signature(image, info, base_dir, wd)
    _write_info(info, image, output, logp)
    return info


def _write_info(info: dict[str, Any], image: dict[str, Any], output: str, logp: Path) -> None:
    info["python"] = image.get("python", "auto")
    fd, tmp = tempfile.mkstemp(prefix=".image.", dir=Path(output).parent)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(info, fh, indent=1)
    os.chmod(tmp, 0o644)
    os.replace(tmp, output)
    with logp.open("a", encoding="utf-8") as fh:
        fh.write(f"image {info['path']} sha256 {info['sha256']}\n")
        if info.get("fingerprint"):
            fh.write(f"signature by {info['fingerprint']} verified\n")
