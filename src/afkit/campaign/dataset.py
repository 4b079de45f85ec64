"""Dataset manifests; generated datasets are written into the storage's local path, or, for a
guarded storage (one with a credential), through its XRootD door with its token.

A generated file is written under a temporary name and renamed; existing files of the right size
(random) or written with the same parameters (ao2d, esd) are kept (idempotent), others rewritten.
Listed files are checked when the storage path is visible from here.

``generate.kind``: ``random`` (random bytes, here), ``ao2d`` or ``esd`` (afkit.bench.rootgen): the
files are written by the ROOT of the campaign's image (the tag's ROOT), ``root.exe`` run inside
it with ``apptainer exec`` (afkit's package bound at /afkit for the macro, the storage path at
its own path), so the dataset of such a campaign needs its image first. Through a guarded
storage's door, ROOT writes each file into a staging folder beside the manifest, afkit copies it
through the door and removes it; ROOT reads the file already on the server (with the token, bound
into its container as a job's is) to keep it when it holds the same parameters.
"""

from __future__ import annotations

import functools
import json
import os
import posixpath
import shutil
import sys
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple, TypedDict

from afkit.atomic import atomic_path, write_atomic
from afkit.bench import rootgen
from afkit.bench.sources import for_root
from afkit.campaign.config import CampaignConfig, DatasetConfig, Generate, StorageConfig, listed_files
from afkit.campaign.contract import CredentialSpec, ImageInfo
from afkit.errors import InvalidError, NotFoundError, PrereqError, UnsafeError

ROOT_KINDS = ("ao2d", "esd")  # written by the image's ROOT

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


class Door(NamedTuple):
    """A guarded storage's XRootD door: its URL and the export its files are under. Generated
    files are written through it (with the credential this process's client presents: the
    storage's token, afkit.campaign.credentials), as a user who cannot write the storage's disk
    does: a new file needs the token's storage.create scope, one written again storage.modify.
    CREDENTIAL: the credential's files, for a client in the image (ROOT's)."""

    url: str
    export: str
    credential: CredentialSpec = CredentialSpec()

    def path(self, name: str) -> str:
        """The namespace path of NAME (a dataset's file, under the export)."""
        return posixpath.normpath(posixpath.join("/", self.export, name))

    def url_of(self, path: str) -> str:
        return f"{self.url}/{path}"


def _size_through(door: Door, path: str) -> int | None:
    """The size of PATH on DOOR's server; None when it has no such file."""
    from afkit.bench.sources import import_xrootd_client

    status, info = import_xrootd_client().FileSystem(door.url).stat(path)
    return int(info.size) if status.ok else None


def _generate_through(door: Door, name: str, size: int) -> None:
    """A random file of SIZE bytes at NAME (under the export) through DOOR: kept when the server
    has it at that size, else written whole (refused by the server without the token's scope)."""
    path = door.path(name)
    have = _size_through(door, path)
    if have != size:
        _write_through(door, path, size, lambda _offset, n: os.urandom(n), exists=have is not None)


def _write_through(
    door: Door, path: str, size: int, chunk_at: Callable[[int, int], bytes], *, exists: bool
) -> None:
    """SIZE bytes at PATH through DOOR, CHUNK_AT(offset, n) giving them; a file that EXISTS is
    written over."""
    from afkit.bench.sources import import_xrootd_client

    client = import_xrootd_client()
    from XRootD.client.flags import AccessMode, OpenFlags

    url = door.url_of(path)
    handle = client.File()
    # a new file (storage.create), or one written over (storage.modify)
    flags = (OpenFlags.DELETE if exists else OpenFlags.NEW) | OpenFlags.MAKEPATH
    # readable by all, as xrdcp writes (the storage's own site reads its disk: storage.path)
    mode = AccessMode.UR | AccessMode.UW | AccessMode.GR | AccessMode.OR
    status, _ = handle.open(url, flags, mode)
    if not status.ok:
        scope = "storage.modify" if flags & OpenFlags.DELETE else "storage.create"
        raise PrereqError(f"the storage refused writing {path} ({door.url}): {status.message.strip()}",
                          hint=f"the token needs {scope}:{posixpath.dirname(path)}")  # fmt: skip
    try:
        offset = 0
        while offset < size:
            chunk = chunk_at(offset, min(CHUNK, size - offset))
            status, _ = handle.write(chunk, offset)
            if not status.ok:
                why = status.message.strip()
                raise PrereqError(f"writing {path} on {door.url} failed at byte {offset}: {why}")
            offset += len(chunk)
    finally:
        handle.close()


def generated_files(gen: Generate) -> list[str]:
    """The paths (under the storage root) of a ``generate:`` dataset's files."""
    suffix = "root" if gen.get("kind", "random") in ROOT_KINDS else "dat"
    return [f"{gen['prefix']}-{i:04d}.{suffix}" for i in range(gen["count"])]


def image_root_command(
    image_json: str, storage_dir: Path, apptainer_args: list[str], credential: CredentialSpec | None = None
) -> tuple[list[str], str]:
    """(``apptainer exec … IMAGE root.exe``, the macro's path inside) for the image of IMAGE_JSON;
    with CREDENTIAL's files bound read-only and named in ROOT's environment, as a job's are."""
    from afkit.campaign.job import CONTAINER_PACKAGE, credential_binds, package_dir
    from afkit.image import apptainer

    image = ImageInfo.read(Path(image_json))
    cred_binds, cred_env = credential_binds(credential or CredentialSpec())
    binds = [f"{package_dir()}:{CONTAINER_PACKAGE}:ro", f"{storage_dir}:{storage_dir}", *cred_binds]
    options = ["--cleanenv", "--no-home", "--contain", "--pwd", "/", *apptainer_args]
    options += [f"--env={k}={v}" for k, v in sorted(cred_env.items())]  # paths, never the secret
    cmd = apptainer.exec_command(
        image.path, ["root.exe"], options=options, binds=binds, global_options=["-q"]
    )
    return cmd, f"{CONTAINER_PACKAGE}/{rootgen.MACRO.relative_to(package_dir())}"


def apptainer_args_for(cfg: CampaignConfig, dataset: str) -> list[str]:
    """The apptainer_args of the first site next to the dataset's storage (else of the first site)."""
    sites = list(cfg["sites"].values())
    near = [s for s in sites if s.get("storage") == cfg["datasets"][dataset]["storage"]]
    return list((near or sites)[0].get("apptainer_args", [])) if sites else []


def _root_writer(
    name: str, gen: Generate, image_json: str | None, storage_dir: Path, args: list[str],
    credential: CredentialSpec | None = None,
) -> Callable[..., dict[str, Any]]:  # fmt: skip
    """write(DEST, SEED, LABEL, kept_at=..., kept_bytes=...): one file of the dataset by the image's
    ROOT (seeing STORAGE_DIR, with CREDENTIAL's files when given), its record; kept when it holds
    these parameters, written again when it is the campaign's own with other ones."""
    if not image_json:
        raise InvalidError(f"datasets.{name}.generate: kind {gen['kind']} needs the campaign's image")
    shape = rootgen.SHAPES[gen["kind"]]
    events = rootgen.events_per_file(int(gen["size_mb"] * 1e6), 1, shape.event_bytes, gen["kind"])
    setting = rootgen.parse_compression(str(gen.get("compression", "default")))
    cmd, macro = image_root_command(image_json, storage_dir, args, credential=credential)

    def write(
        dest: Path, seed: int, label: str, kept_at: str | None = None, kept_bytes: int = 0
    ) -> dict[str, Any]:
        one = functools.partial(rootgen.write, cmd, shape, dest, events, compression=setting, seed=seed,
                                df_events=max(1, rootgen.DF_BYTES // shape.event_bytes),
                                progress=rootgen.progress_printer(label), macro=macro, kept_at=kept_at,
                                kept_bytes=kept_bytes)  # fmt: skip
        try:  # kept when written with these parameters
            return one(force=False)
        except UnsafeError:  # the campaign's own file, written with other parameters: rewritten
            return one(force=True)

    return write


def _generate_root(
    name: str, gen: Generate, root: Path, files: list[str], image_json: str | None, args: list[str]
) -> list[Mapping[str, object]]:
    write = _root_writer(name, gen, image_json, root, args)
    (root / files[0]).parent.mkdir(parents=True, exist_ok=True)
    records: list[Mapping[str, object]] = []
    for i, f in enumerate(files):
        records.append(write(root / f, 1 + i, f))
        print(json.dumps(records[-1]), file=sys.stderr)
    return records


def _generate_root_through(
    name: str, gen: Generate, door: Door, files: list[str], image_json: str | None, args: list[str],
    stage: Path,
) -> list[Mapping[str, object]]:  # fmt: skip
    """FILES of a ROOT kind through DOOR: each written by the image's ROOT into STAGE, then copied
    through the door and removed from STAGE; kept when the server's file holds the same parameters
    (ROOT reads it there, with the door's credential)."""
    write = _root_writer(name, gen, image_json, stage, args, door.credential)
    records: list[Mapping[str, object]] = []
    for i, f in enumerate(files):
        path, local = door.path(f), stage / f"{i:04d}.root"
        have = _size_through(door, path)
        rec = write(local, 1 + i, f, kept_at="" if have is None else for_root(door.url_of(path)),
                    kept_bytes=have or 0)  # fmt: skip
        if not rec["kept"]:
            with local.open("rb") as fh:

                def chunk_at(offset: int, n: int, fh: BinaryIO = fh) -> bytes:
                    fh.seek(offset)
                    return fh.read(n)

                _write_through(door, path, local.stat().st_size, chunk_at, exists=have is not None)
            local.unlink()
        rec["file"] = door.url_of(path)
        records.append(rec)
        print(json.dumps(rec), file=sys.stderr)
    return records


class Manifest(TypedDict):
    """``RESULTS/dataset/NAME.json``: the dataset's files on its storage."""

    dataset: str
    files: list[str]
    storage: str


def prepare(
    name: str,
    spec: DatasetConfig,
    storage: StorageConfig,
    *,
    output: str,
    log: str,
    image: str | None = None,
    apptainer_args: list[str] | None = None,
    door: Door | None = None,
) -> Manifest:
    root = Path(storage["path"]) if storage.get("path") else None
    generated: list[Mapping[str, object]] = []
    if "generate" in spec and door is not None:
        # a guarded storage: through its door, with the token (not its disk)
        gen = spec["generate"]
        files = generated_files(gen)
        if gen.get("kind", "random") in ROOT_KINDS:
            stage = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=Path(output).parent))
            try:
                generated = _generate_root_through(name, gen, door, files, image, apptainer_args or [], stage)
            finally:
                shutil.rmtree(stage, ignore_errors=True)  # the folder made here
        else:
            for f in files:
                _generate_through(door, f, int(gen["size_mb"] * 1e6))
    elif "generate" in spec:
        gen = spec["generate"]
        if root is None:
            raise InvalidError(
                f"datasets.{name}.generate: storage {spec['storage']!r} has no 'path' to write the files to",
                hint="set storage.<name>.path (the local mount of its export) or list existing files",
            )
        files = generated_files(gen)
        if gen.get("kind", "random") in ROOT_KINDS:
            generated = _generate_root(name, gen, root, files, image, apptainer_args or [])
        else:
            for f in files:
                _generate(root / f, int(gen["size_mb"] * 1e6))
    else:
        files = listed_files(spec, storage)
        if root is not None and root.is_dir():
            missing = [f for f in files if not (root / f).is_file()]
            if missing:
                raise NotFoundError(f"datasets.{name}: missing under {root}: {', '.join(missing)}")
    manifest = Manifest(dataset=name, files=files, storage=spec["storage"])
    write_atomic(output, json.dumps(manifest, indent=1), mode=0o644)
    lines = [json.dumps(r) for r in generated]
    Path(log).write_text("\n".join([*lines, f"{len(files)} files"]) + "\n", encoding="utf-8")
    return manifest
