"""The campaign image: a SIF path, an ``oras://`` reference, or a tag built with ``afkit image build``.

Writes ``image.json`` with the image's absolute path, sha256 and tag: the provenance every job record
carries (results from different images are never mixed silently).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from afkit.errors import AfkitError, InvalidError, NotFoundError, PrereqError


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _run(cmd: list[str], log: Path) -> None:
    with log.open("a", encoding="utf-8") as fh:
        fh.write("$ " + " ".join(cmd) + "\n")
        fh.flush()
        proc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, check=False)
    if proc.returncode != 0:
        raise AfkitError(f"{cmd[0]} {cmd[1]} failed (exit {proc.returncode}); see {log}")


def _from_build(build: dict[str, Any], workdir: Path, log: Path) -> dict[str, Any]:
    out = workdir / "build"
    cmd = [sys.executable, "-m", "afkit", "image", "build", "--profile", build["profile"],
           "--tag", build["tag"], "--output", str(out)]  # fmt: skip
    if build.get("base"):
        cmd += ["--base", build["base"]]
    _run(cmd, log)
    manifests = sorted(out.glob("*.json"))
    if not manifests:
        raise NotFoundError(f"afkit image build wrote no manifest in {out}", hint=f"see {log}")
    manifest = json.loads(manifests[-1].read_text(encoding="utf-8"))
    sif = manifests[-1].with_suffix(".sif")
    return {"path": str(sif.resolve()), "sha256": manifest.get("sha256") or sha256_of(sif),
            "tag": manifest.get("tag", build["tag"]), "source": "build"}  # fmt: skip


def _from_oras(ref: str, workdir: Path, log: Path) -> dict[str, Any]:
    if shutil.which("apptainer") is None:
        raise PrereqError("apptainer not found on PATH (needed to pull the campaign image)")
    sif = workdir / "image.sif"
    if not sif.exists():
        tmp = workdir / ".image.sif.part"
        tmp.unlink(missing_ok=True)
        _run(["apptainer", "pull", str(tmp), ref], log)
        tmp.replace(sif)
    return {"path": str(sif.resolve()), "sha256": sha256_of(sif), "tag": "", "source": ref}


def resolve_image(
    image: dict[str, Any], *, base_dir: str, workdir: str, output: str, log: str
) -> dict[str, Any]:
    wd, logp = Path(workdir), Path(log)
    wd.mkdir(parents=True, exist_ok=True)
    logp.write_text("", encoding="utf-8")
    if "build" in image:
        info = _from_build(image["build"], wd, logp)
    elif str(image.get("sif", "")).startswith("oras://"):
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
    info["python"] = image.get("python", "auto")
    fd, tmp = tempfile.mkstemp(prefix=".image.", dir=Path(output).parent)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(info, fh, indent=1)
    os.chmod(tmp, 0o644)
    os.replace(tmp, output)
    with logp.open("a", encoding="utf-8") as fh:
        fh.write(f"image {info['path']} sha256 {info['sha256']}\n")
    return info
