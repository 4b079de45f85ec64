"""What a study run writes, where, and whether it fits: ``afkit study run --dry-run`` lists it, and a
real run checks it before it writes anything (``afkit study run`` exits 3 naming the folder, what the
run needs there and what is free).

A study's sizes come from its parameters: at a user's sites the original's (hundreds of GB for
dcotf-xcache), so a run that would fill a disk is refused, not begun. Listed per place: the
generated datasets on each storage (``count x size_mb`` MB each, less the files already there at
that size, which a rerun keeps), the staging of ROOT-written files for a guarded storage (beside the
results), the results folder and the campaign file, and for the studies that run on the host their
device's backing file or data directory. The free space is that of the filesystem holding each
folder (its nearest existing parent), summed per filesystem; a storage whose folder is not visible
from this host (a server elsewhere) is listed with its size and "not visible from here".
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from afkit.errors import PrereqError

MB = 10**6


@dataclass(frozen=True)
class Write:
    what: str  # "dataset aod-gsi: 1 file of 128 MB"
    folder: Path  # where it goes (on this host, or the storage server's own path)
    bytes: int  # what it takes there (a file already there at its size counts 0)
    visible: bool = True  # FOLDER (or the storage's export) is on this host: its free space is checked


def _existing(path: Path) -> Path:
    """PATH's nearest existing ancestor (itself when it exists)."""
    p = path.absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def _kept(folder: Path, names: Iterable[str], size: int) -> int:
    """Bytes of NAMES already under FOLDER: a rerun keeps them (random files of the same size; a
    ROOT file of the same parameters), so they take no new space."""
    total = 0
    for n in names:
        f = folder / n
        if f.is_file() and abs(f.stat().st_size - size) <= max(size // 10, 1):
            total += f.stat().st_size
    return total


def campaign_writes(campaign: dict[str, object], results: Path, campaign_file: Path) -> list[Write]:
    """What a study's campaign (the mapping recipe.campaign made) writes: every generated dataset
    on its storage, the staging of ROOT files for a guarded one, the results and the campaign."""
    from afkit.campaign.dataset import ROOT_KINDS, generated_files

    out: list[Write] = []
    storages = campaign.get("storage")
    datasets = campaign.get("datasets")
    for name, spec in (datasets if isinstance(datasets, dict) else {}).items():
        gen = spec.get("generate") if isinstance(spec, dict) else None
        if not isinstance(gen, dict):
            continue
        store = storages.get(spec.get("storage")) if isinstance(storages, dict) else None
        root = Path(str(store.get("path") or "")) if isinstance(store, dict) else Path()
        size = round(float(gen["size_mb"]) * MB)
        files = generated_files(gen)  # type: ignore[arg-type]
        need = size * len(files) - _kept(root, files, size) if root.is_dir() else size * len(files)
        mb = float(gen["size_mb"])
        what = (
            f"dataset {name}: {len(files)} file(s) of {mb:g} MB on {spec.get('storage')} ({gen['prefix']}-*)"
        )
        out.append(Write(what, root / str(gen["prefix"]).rpartition("/")[0], need, visible=root.is_dir()))
        guarded = isinstance(store, dict) and bool(store.get("credential"))
        if guarded and gen.get("kind", "random") in ROOT_KINDS:
            out.append(Write(f"dataset {name}: ROOT's files staged before they go through the door "
                             "(one at a time; removed after)", results / "dataset", size))  # fmt: skip
    out.append(Write("the results: job records, tables, figures, the page (small)", results, 0))
    out.append(Write("the campaign file and the facility (small)", campaign_file.parent, 0))
    return out


def fits(writes: list[Write]) -> list[str]:
    """For each filesystem (of the visible writes) where the run needs more than is free, one line:
    the folders, what the run needs there and what is free. Empty: it fits."""
    need: dict[int, int] = {}
    folders: dict[int, list[Path]] = {}
    free: dict[int, int] = {}
    for w in writes:
        if not w.visible or w.bytes <= 0:
            continue
        base = _existing(w.folder)
        dev = os.stat(base).st_dev
        need[dev] = need.get(dev, 0) + w.bytes
        folders.setdefault(dev, []).append(w.folder)
        free[dev] = shutil.disk_usage(base).free
    return [
        f"{', '.join(str(f) for f in folders[dev])}: the run writes {need[dev] / MB:,.0f} MB there, "
        f"{free[dev] / MB:,.0f} MB are free"
        for dev in need
        if need[dev] > free[dev]
    ]


def show(writes: list[Write]) -> str:
    """The dry run's listing: one line per write with its size and the free space of its folder."""
    lines = []
    for w in writes:
        if w.visible:
            base = _existing(w.folder)
            where = f"{shutil.disk_usage(base).free / MB:,.0f} MB free"
        else:
            where = "not visible from here: free space not checked"
        lines.append(f"{w.bytes / MB:>12,.0f} MB  {w.folder}  ({where})\n              {w.what}")
    total = sum(w.bytes for w in writes)
    lines.append(f"{total / MB:>12,.0f} MB  in all")
    return "\n".join(lines)


def check(writes: list[Write], study: str) -> None:
    """PrereqError (exit 3) when the run does not fit, before anything is written."""
    short = fits(writes)
    if short:
        raise PrereqError(
            f"study {study} would not fit: " + "; ".join(short),
            hint="free space there, or make the run smaller (--scale S, or smaller sizes in the sites "
            "file's params); afkit study run ... --dry-run lists what it writes",
        )
