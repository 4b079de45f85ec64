"""Dataset manifests; generated datasets are written into the storage's local path.

A generated file is written under a temporary name and renamed; existing files of the right size
are kept (idempotent). Listed files are checked when the storage path is visible from here.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from afkit.errors import InvalidError, NotFoundError

CHUNK = 1 << 20


def _generate(path: Path, size: int) -> None:
    if path.is_file() and path.stat().st_size == size:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    with os.fdopen(fd, "wb") as fh:
        left = size
        while left > 0:
            n = min(CHUNK, left)
            fh.write(os.urandom(n))  # incompressible, so caches and compression cannot cheat
            left -= n
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def prepare(
    name: str, spec: dict[str, Any], storage: dict[str, Any], *, output: str, log: str
) -> dict[str, Any]:
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
    manifest = {"dataset": name, "files": files, "storage": spec["storage"]}
    fd, tmp = tempfile.mkstemp(prefix=".dataset.", dir=Path(output).parent)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(manifest, fh, indent=1)
    os.chmod(tmp, 0o644)
    os.replace(tmp, output)
    Path(log).write_text(f"{len(files)} files\n", encoding="utf-8")
    return manifest
