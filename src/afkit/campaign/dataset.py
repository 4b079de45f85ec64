"""Dataset manifests; generated datasets are written into the storage's local path.

A generated file is written under a temporary name and renamed; existing files of the right size
are kept (idempotent). Listed files are checked when the storage path is visible from here.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TypedDict

from afkit.atomic import atomic_path, write_atomic
from afkit.campaign.config import DatasetConfig, StorageConfig
from afkit.errors import InvalidError, NotFoundError

CHUNK = 1 << 20


def _generate(path: Path, size: int) -> None:
    if path.is_file() and path.stat().st_size == size:
        return
    with atomic_path(path, mode=0o644) as tmp, tmp.open("wb") as fh:
        left = size
        while left > 0:
            n = min(CHUNK, left)
            fh.write(os.urandom(n))  # incompressible, so caches and compression cannot cheat
            left -= n


class Manifest(TypedDict):
    """``RESULTS/dataset/NAME.json``: the dataset's files on its storage."""

    dataset: str
    files: list[str]
    storage: str


def prepare(name: str, spec: DatasetConfig, storage: StorageConfig, *, output: str, log: str) -> Manifest:
    root = Path(storage["path"]) if storage.get("path") else None
    if "generate" in spec:
        gen = spec["generate"]
        if root is None:
            raise InvalidError(
                f"datasets.{name}.generate: storage {spec['storage']!r} has no 'path' to write the files to",
                hint="set storage.<name>.path (the local mount of its export) or list existing files",
            )
        size = int(gen["size_mb"] * 1e6)
        files = [f"{gen['prefix']}-{i:04d}.dat" for i in range(gen["count"])]
        for f in files:
            _generate(root / f, size)
    else:
        files = [str(f).lstrip("/") for f in spec["files"]]
        if root is not None and root.is_dir():
            missing = [f for f in files if not (root / f).is_file()]
            if missing:
                raise NotFoundError(f"datasets.{name}: missing under {root}: {', '.join(missing)}")
    manifest = Manifest(dataset=name, files=files, storage=spec["storage"])
    write_atomic(output, json.dumps(manifest, indent=1), mode=0o644)
    Path(log).write_text(f"{len(files)} files\n", encoding="utf-8")
    return manifest
