"""``--layers``: the big packages of a closure as squashfs overlay partitions of the SIF, reused
from one build to the next (the adjacent daily recompresses only the packages that changed).

What Apptainer allows (apptainer/apptainer at 917d665): a SIF may carry, beside its primary
system partition, partitions of type ``PartOverlay`` in squashfs (``pkg/image/sif.go``: every
partition whose type is data or overlay is listed, of any file system ``checkPartitionType``
knows); at run time every squashfs overlay partition of the image's group is mounted read-only
and added as an overlayfs lower directory above the root file system
(``internal/pkg/runtime/engine/apptainer/container_linux.go``, ``case image.SQUASHFS``:
``ov.AddLowerDir``). ``apptainer sif add`` (the SIF library's siftool) appends such a partition to
an existing SIF. So the image stays one self-contained file; what it needs from the runtime is
``enable overlay`` not set to ``no`` in ``apptainer.conf`` (then overlay partitions are not
mounted, and the validation fails on the missing packages instead of running a partial image).

squashfs-tools cannot do this inside one file system: appending with ``mksquashfs`` only adds
entries at the root of an existing image (colliding names are renamed ``NAME_1``) and never
removes any, so the previous daily's packages would stay and the new ones could not be placed
under ``/cvmfs/<repo>/<arch>/Packages``.

A unit becomes a layer when it is a directory of at least ``$AFKIT_LAYER_MIN_MB`` MiB (default
64), at most ``MAX_LAYERS`` of them (the biggest; overlayfs mount options are limited to one
page). A layer is identified by the sha256 of its paths, sizes, mtimes, modes and links and the
compression, and kept in ``DIR/.data/layers/<digest>.sqfs``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from afkit.atomic import atomic_path
from afkit.errors import AfkitError, ExitCode, PrereqError
from afkit.image.stage import Plan
from afkit.progress import bar

MAX_LAYERS = 24
FORMAT = 1
# apptainer sif add: data type 4 = partition, partition type 4 = overlay, file system 1 = squashfs,
# architecture 2 = amd64 (apptainer/sif pkg/sif: DataPartition, PartOverlay, FsSquash, HdrArchAMD64);
# group 1 is the primary partition's (overlays of another group are ignored at run time).
SIF_ADD_ARGS = ("--datatype", "4", "--parttype", "4", "--partfs", "1", "--partarch", "2", "--groupid", "1")


@dataclass(frozen=True)
class Layer:
    unit: str  # the unit's path relative to the repository root
    digest: str
    bytes: int
    files: int

    def path(self, store_root: Path) -> Path:
        return store_root / "layers" / f"{self.digest}.sqfs"


def min_bytes() -> int:
    text = os.environ.get("AFKIT_LAYER_MIN_MB", "64")
    try:
        return max(0, int(text)) << 20
    except ValueError:
        return 64 << 20


def choose(plan: Plan, unit_dirs: list[str], compression: str | None) -> list[Layer]:
    """The layers of PLAN: directory units of at least min_bytes(), the biggest first."""
    sizes: dict[str, list[int]] = {u: [0, 0] for u in unit_dirs}
    head = f"afkit-layer {FORMAT} {compression or 'gzip'}\n".encode()
    digests = {u: hashlib.sha256(head) for u in unit_dirs}

    def unit_of(rel: str) -> str | None:
        return next((u for u in unit_dirs if rel == u or rel.startswith(u + "/")), None)

    for task in sorted(plan.files, key=lambda t: t.rel):
        unit = unit_of(task.rel)
        if unit is not None:
            sizes[unit][0] += task.st.st_size
            sizes[unit][1] += 1
            mode = task.st.st_mode & 0o7777
            digests[unit].update(f"f {task.rel} {task.st.st_size} {task.st.st_mtime_ns} {mode:o}\n".encode())
    for rel, target in sorted(plan.links):
        unit = unit_of(rel)
        if unit is not None:
            digests[unit].update(f"l {rel} {target}\n".encode())
    for rel in sorted(set(plan.dirs)):
        unit = unit_of(rel)
        if unit is not None:
            digests[unit].update(f"d {rel}\n".encode())
    big = sorted((u for u in unit_dirs if sizes[u][0] >= min_bytes()), key=lambda u: -sizes[u][0])
    return [Layer(u, digests[u].hexdigest(), sizes[u][0], sizes[u][1]) for u in big[:MAX_LAYERS]]


def mksquashfs() -> str:
    found = shutil.which("mksquashfs")
    if not found:
        raise PrereqError("mksquashfs not found (needed for --layers)", hint="install squashfs-tools")
    return found


def squash_args(compression: str | None) -> list[str]:
    """The options Apptainer's SIF assembler gives mksquashfs (internal/pkg/build/assemblers/
    sif.go: -noappend, -comp gzip unless the build's --mksquashfs-args name one), and -all-root
    as a root or --fakeroot build owns the files."""
    return ["-noappend", "-comp", compression or "gzip", "-all-root"]


def _run(cmd: list[str], what: str, hint: str) -> None:
    """Run CMD; a failure is an AfkitError naming WHAT, the exit code and the end of stderr."""
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise AfkitError(
            f"{what} failed (exit {proc.returncode}): {proc.stderr.strip()[-500:]}",
            hint=hint,
            code=ExitCode.FAILURE,
        )


def squash(tree: Path, target: Path, compression: str | None, quiet: bool = False) -> None:
    """mksquashfs TREE into TARGET (a temporary name, then rename: never half a layer)."""
    with atomic_path(target) as tmp:  # -noappend: mksquashfs overwrites the empty temporary file
        cmd = [mksquashfs(), str(tree), str(tmp), *squash_args(compression), "-no-progress", "-quiet"]
        _run(cmd, f"mksquashfs of {tree}", "check free space in the working directory")


def build_missing(layers: list[Layer], trees: dict[str, Path], store_root: Path, comp: str | None) -> None:
    """Squash every layer not yet in the store (TREES: unit -> its staged layer tree)."""
    todo = [layer for layer in layers if not layer.path(store_root).is_file()]
    with bar(sum(layer.bytes for layer in todo), f"squashing {len(todo)} layers") as progress:
        for layer in todo:
            squash(trees[layer.unit], layer.path(store_root), comp)
            progress.update(layer.bytes)


def add_to_sif(binary: str, sif: Path, layers: list[Layer], store_root: Path) -> None:
    """Append every layer to SIF as a squashfs overlay partition of the primary's group."""
    for layer in layers:
        cmd = [binary, "sif", "add", *SIF_ADD_ARGS, str(sif), str(layer.path(store_root))]
        _run(cmd, " ".join(cmd), "Apptainer >= 1.1 is needed for 'apptainer sif add'")
