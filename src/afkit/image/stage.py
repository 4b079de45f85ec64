"""Stage a closure: the units' files under their absolute paths in ``WORKDIR/rootfs``, from the store.

Symlinks whose target lies inside the closure are kept; ones that leave it (to elsewhere in the
repository) are resolved, i.e. the target's content is staged at the link's place; links out of
the repository are kept as they are (they name the OS) and reported.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from afkit.errors import InvalidError, PrereqError
from afkit.image import elf
from afkit.image.model import Unit
from afkit.image.store import Store
from afkit.progress import bar

MIB = 1 << 20


@dataclass
class FileTask:
    src: Path
    rel: str  # destination, relative to the repository root
    st: os.stat_result


@dataclass
class Plan:
    dirs: list[str] = field(default_factory=list)
    files: list[FileTask] = field(default_factory=list)
    links: list[tuple[str, str]] = field(default_factory=list)  # (rel, target)
    kept_outside: list[str] = field(default_factory=list)
    resolved: list[str] = field(default_factory=list)

    @property
    def total_bytes(self) -> int:
        return sum(t.st.st_size for t in self.files)


@dataclass
class Stats:
    files: int = 0
    bytes: int = 0
    copied_files: int = 0
    copied_bytes: int = 0
    reused_files: int = 0
    reused_bytes: int = 0
    symlinks: int = 0
    resolved_symlinks: int = 0
    seconds: float = 0.0
    elf: list[dict[str, Any]] = field(default_factory=list)


class Walker:
    """Turn units into a Plan, deciding for each symlink."""

    def __init__(self, src: Path, units: list[Unit], image_root: str) -> None:
        self.src = src
        self.real_src = Path(os.path.realpath(src))
        self.roots = sorted(u.rel for u in units)
        self.image_root = image_root
        self.plan = Plan()
        self._seen: set[str] = set()

    def run(self) -> Plan:
        parents: set[str] = set()
        for rel in self.roots:
            self._check_root(rel)
        for rel in self.roots:
            parts = rel.split("/")
            parents.update("/".join(parts[:i]) for i in range(1, len(parts)))
        self.plan.dirs.extend(sorted(parents))
        for rel in self.roots:
            self._entry(self.src / rel, rel, depth=0)
        return self.plan

    def _check_root(self, rel: str) -> None:
        """A unit must be a plain path that stays inside the repository: the tree (or its
        modulefiles' environment) must not make staging read or write elsewhere."""
        parts = rel.split("/")
        if rel.startswith("/") or any(p in ("", ".", "..") for p in parts):
            raise InvalidError(
                f"refusing to stage {rel!r}: not a plain path inside the repository",
                hint="the repository's modulefiles name a path with '..'; report it to its maintainers",
            )
        parent = os.path.realpath(os.path.dirname(self.src / rel))
        if self._rel(Path(parent)) is None:
            raise InvalidError(
                f"refusing to stage {rel!r}: a directory on its way is a symlink out of the repository",
                hint="the repository's tree links outside itself; report it to its maintainers",
            )

    def in_closure(self, rel: str) -> bool:
        return any(rel == r or rel.startswith(r + "/") for r in self.roots)

    def holds_closure(self, rel: str) -> bool:
        """REL is in the closure or a directory above a unit (it exists in the image)."""
        return self.in_closure(rel) or any(r.startswith(rel + "/") for r in self.roots)

    def _rel(self, path: Path) -> str | None:
        text = str(path)
        for root in (str(self.src), str(self.real_src), f"/cvmfs/{self.src.name}"):
            if text == root:
                return ""
            if text.startswith(root + "/"):
                return text[len(root) + 1 :]
        return None

    def _entry(self, path: Path, rel: str, depth: int) -> None:
        if rel in self._seen:
            return
        self._seen.add(rel)
        if path.is_symlink():
            self._symlink(path, rel, depth)
        elif path.is_dir():
            self.plan.dirs.append(rel)
            for child in sorted(os.listdir(path)):
                self._entry(path / child, f"{rel}/{child}", depth)
        elif path.is_file():
            self.plan.files.append(FileTask(path, rel, path.stat()))

    def _symlink(self, path: Path, rel: str, depth: int) -> None:
        target = os.readlink(path)
        resolved = Path(os.path.realpath(path))
        target_rel = self._rel(resolved)
        if target_rel is not None:
            resolved = self.src / target_rel  # an absolute /cvmfs/<repo> target, read where mounted
        if target_rel is not None and resolved.exists() and self.holds_closure(target_rel):
            if os.path.isabs(target):
                inside = self._rel(Path(target))
                if inside is not None:
                    target = f"{self.image_root}/{inside}" if inside else self.image_root
            self.plan.links.append((rel, target))
        elif target_rel is not None and resolved.exists() and depth < 20:
            self.plan.resolved.append(rel)
            if resolved.is_dir():
                self.plan.dirs.append(rel)
                for child in sorted(os.listdir(resolved)):
                    self._entry(resolved / child, f"{rel}/{child}", depth + 1)
            else:
                self.plan.files.append(FileTask(resolved, rel, resolved.stat()))
        else:
            self.plan.kept_outside.append(f"{rel} -> {target}")
            self.plan.links.append((rel, target))


def walk(src: Path, units: list[Unit], image_root: str) -> Plan:
    return Walker(src, units, image_root).run()


def bytes_to_copy(plan: Plan, store: Store) -> int:
    return sum(t.st.st_size for t in plan.files if store.lookup(t.rel, t.st) is None)


def check_space(where: Path, needed: int, what: str) -> None:
    """Exit 3 with the numbers when WHERE has less than NEEDED bytes free."""
    free = shutil.disk_usage(where).free
    if free < needed:
        raise PrereqError(
            f"not enough free space in {where} for {what}: need {needed / MIB:.1f} MiB, "
            f"have {free / MIB:.1f} MiB",
            hint="free some space, or give -o a directory on a bigger file system",
        )


class Router:
    """Where each closure path goes: under the layer directory of the unit holding it (units
    built as their own squashfs layer), else under DEST; files of SKIP units are not staged."""

    def __init__(
        self, dest: Path, layers: dict[str, Path] | None = None, skip: set[str] | None = None
    ) -> None:
        self.dest = dest
        self.layers = layers or {}
        self.skip = skip or set()

    def unit_of(self, rel: str) -> str | None:
        for root in self.layers:
            if rel == root or rel.startswith(root + "/"):
                return root
        return None

    def place(self, rel: str) -> Path | None:
        """The path REL is created at; None for a skipped unit's path."""
        unit = self.unit_of(rel)
        if unit is None:
            return self.dest / rel
        if unit in self.skip:
            return None
        return self.layers[unit] / rel


def execute(
    plan: Plan,
    dest: Path,
    store: Store,
    jobs: int | None = None,
    quiet: bool = False,
    router: Router | None = None,
) -> Stats:
    """Create PLAN under DEST (the repository's place in the rootfs) from the store; with ROUTER,
    each layer unit under its own directory and skipped units (already built layers) not at all."""
    start = time.monotonic()
    route = router or Router(dest)
    stats = Stats(files=len(plan.files), bytes=plan.total_bytes)
    dest.mkdir(parents=True, exist_ok=True)
    for rel in sorted(set(plan.dirs), key=lambda r: r.count("/")):
        place = route.place(rel)
        if place is not None:
            place.mkdir(parents=True, exist_ok=True)
    todo = [(t, route.place(t.rel)) for t in plan.files]
    staged_bytes = sum(t.st.st_size for t, place in todo if place is not None)
    progress = bar(staged_bytes, f"staging {len(plan.files)} files", quiet=quiet)
    lock = threading.Lock()
    elves: list[dict[str, Any]] = []

    def one(task: FileTask, target: Path | None) -> None:
        entry = store.lookup(task.rel, task.st)
        if target is None:  # in a layer built earlier: only its ELF facts are needed
            if entry and entry.get("elf"):
                with lock:
                    elves.append({"path": task.rel, **entry["elf"]})
            return
        copied = entry is None
        placed = False
        if entry is None:  # new content is copied straight to its place, the blob linked from it
            entry, placed = store.add_placing(task.src, task.rel, task.st, {}, place=target)
        blob = store.blob_path(entry["sha256"], bool(entry["x"]))
        if entry.get("head_elf") and "elf" not in entry:
            info = elf.read(blob)
            meta = {"elf": None if info is None else {"interp": info.interp, "needed": list(info.needed)}}
            store.update_meta(task.rel, task.st, meta)
            entry = {**entry, **meta}
        if not placed:
            try:
                os.link(blob, target)
            except FileNotFoundError:
                target.parent.mkdir(parents=True, exist_ok=True)
                os.link(blob, target)
        with lock:
            if copied:
                stats.copied_files += 1
                stats.copied_bytes += task.st.st_size
            else:
                stats.reused_files += 1
                stats.reused_bytes += task.st.st_size
            if entry.get("elf"):
                elves.append({"path": task.rel, **entry["elf"]})
        progress.update(task.st.st_size)

    workers = jobs or min(8, 2 * (os.cpu_count() or 1))
    pool = ThreadPoolExecutor(max_workers=workers)
    try:
        futures = [pool.submit(one, task, place) for task, place in todo]
        done, _ = wait(futures, return_when=FIRST_EXCEPTION)
        for fut in done:
            fut.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        progress.close()
        store.save()
    for rel, target in plan.links:
        link = route.place(rel)
        if link is None:
            continue
        link.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, link)
    stats.symlinks = len(plan.links)
    stats.resolved_symlinks = len(plan.resolved)
    stats.elf = sorted(elves, key=lambda e: e["path"])
    stats.seconds = time.monotonic() - start
    return stats
