"""Stage a closure: the units' files under their absolute paths in ``WORKDIR/rootfs``, from the store.

Symlinks whose target lies inside the closure are kept; ones that leave it (to elsewhere in the
repository) are resolved, i.e. the target's content is staged at the link's place; links out of
the repository are kept as they are (they name the OS) and reported.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

from afkit.errors import InvalidError, PrereqError
from afkit.image import elf
from afkit.image.model import ElfFacts, ElfFile, Unit
from afkit.image.store import IndexEntry, Store
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
    elf: list[ElfFile] = field(default_factory=list)


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
            self._directory(path, rel, depth)
        elif path.is_file():
            self.plan.files.append(FileTask(path, rel, path.stat()))

    def _directory(self, path: Path, rel: str, depth: int) -> None:
        """A directory and what it holds, its entries' types from the directory listing (one
        ``stat`` per regular file, not four: tens of thousands of files in a real closure)."""
        self.plan.dirs.append(rel)
        with os.scandir(path) as listing:
            children = sorted(listing, key=lambda e: e.name)
        for child in children:
            child_rel = f"{rel}/{child.name}"
            if child_rel in self._seen:
                continue
            self._seen.add(child_rel)
            if child.is_symlink():
                self._symlink(Path(child.path), child_rel, depth)
            elif child.is_dir(follow_symlinks=False):
                self._directory(Path(child.path), child_rel, depth)
            elif child.is_file(follow_symlinks=False):
                self.plan.files.append(
                    FileTask(Path(child.path), child_rel, child.stat(follow_symlinks=False))
                )

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
                self._directory(resolved, rel, depth + 1)
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


# Above this many files staging runs in worker processes: per file it is a dozen system calls
# and some Python, so under one interpreter lock threads leave cores idle (the
# scale fixture: 45,105 files; docs/image-builder.md); below it, starting the processes costs more.
POOL_FILES = 2000
BATCH_FILES = 256
BATCH_BYTES = 64 * MIB


@dataclass
class _Item:
    """One file to create, as sent to a worker process (plain values: cheap to pickle)."""

    src: str
    rel: str
    st: os.stat_result
    target: str
    entry: IndexEntry | None  # the index's entry for an unchanged source file


def _stage_one(store: Store, item: _Item) -> tuple[IndexEntry, bool]:
    """Create ITEM's file at its target from the store, adding new content on the way;
    (its index entry, True when its content was copied)."""
    entry = item.entry if item.entry and store.present(item.entry) else None
    copied = entry is None
    placed = False
    if entry is None:  # new content is copied straight to its place, the blob linked from it
        entry, placed = store.add_placing(item.src, item.rel, item.st, place=item.target)
    blob = store.blob(entry["sha256"], bool(entry["x"]))
    if entry.get("head_elf") and "elf" not in entry:
        info = elf.read(Path(blob))
        entry = entry.copy()  # not the index's own entry: that is updated by the caller
        entry["elf"] = None if info is None else {"interp": info.interp, "needed": list(info.needed)}
    if not placed:
        try:
            os.link(blob, item.target)
        except FileNotFoundError:
            os.makedirs(os.path.dirname(item.target), exist_ok=True)
            os.link(blob, item.target)
    return entry, copied


_WORKER_STORE: list[Store] = []


def _worker_init(root: str) -> None:
    _WORKER_STORE[:] = [Store(Path(root), index=False)]


def _worker_batch(items: list[_Item]) -> list[tuple[IndexEntry, bool]]:
    return [_stage_one(_WORKER_STORE[0], item) for item in items]


def _batches(items: list[_Item]) -> list[range]:
    """ITEMS' indices in runs of at most BATCH_FILES files and about BATCH_BYTES bytes."""
    out: list[range] = []
    start = size = 0
    for i, item in enumerate(items):
        if i - start >= BATCH_FILES or size >= BATCH_BYTES:
            out.append(range(start, i))
            start, size = i, 0
        size += item.st.st_size
    if start < len(items):
        out.append(range(start, len(items)))
    return out


def execute(
    plan: Plan,
    dest: Path,
    store: Store,
    jobs: int | None = None,
    quiet: bool = False,
    router: Router | None = None,
) -> Stats:
    """Create PLAN under DEST (the repository's place in the rootfs) from the store; with ROUTER,
    each layer unit under its own directory and skipped units (already built layers) not at all.
    JOBS: worker processes (1: in this process; default: the cores, at most 8, from POOL_FILES files)."""
    start = time.monotonic()
    route = router or Router(dest)
    stats = Stats(files=len(plan.files), bytes=plan.total_bytes)
    dest.mkdir(parents=True, exist_ok=True)
    for rel in sorted(set(plan.dirs), key=lambda r: r.count("/")):
        place = route.place(rel)
        if place is not None:
            place.mkdir(parents=True, exist_ok=True)
    elves: list[ElfFile] = []
    items: list[_Item] = []
    tasks: list[FileTask] = []
    for task in plan.files:
        place = route.place(task.rel)
        entry = store.known(task.rel, task.st)
        if place is None:  # in a layer built earlier: only its ELF facts are needed
            facts = entry.get("elf") if entry else None
            if facts:
                elves.append(_elf_file(task.rel, facts))
            continue
        items.append(_Item(str(task.src), task.rel, task.st, str(place), entry))
        tasks.append(task)
    progress = bar(sum(i.st.st_size for i in items), f"staging {len(plan.files)} files", quiet=quiet)

    def done(task: FileTask, entry: IndexEntry, copied: bool) -> None:
        store.remember(task.rel, task.st, entry)
        if copied:
            stats.copied_files += 1
            stats.copied_bytes += task.st.st_size
        else:
            stats.reused_files += 1
            stats.reused_bytes += task.st.st_size
        facts = entry.get("elf")
        if facts:
            elves.append(_elf_file(task.rel, facts))
        progress.update(task.st.st_size)

    workers = jobs or (min(8, os.cpu_count() or 1) if len(items) >= POOL_FILES else 1)
    try:
        if workers <= 1:
            for task, item in zip(tasks, items, strict=True):
                done(task, *_stage_one(store, item))
        else:
            _in_processes(items, tasks, store.root, workers, done)
    finally:
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


def _elf_file(rel: str, facts: ElfFacts) -> ElfFile:
    return {"path": rel, "interp": facts["interp"], "needed": facts["needed"]}


def _in_processes(
    items: list[_Item],
    tasks: list[FileTask],
    root: Path,
    workers: int,
    done: Callable[[FileTask, IndexEntry, bool], None],
) -> None:
    """Stage ITEMS in batches over WORKERS processes, calling DONE for each file of a finished
    batch (in this process, which owns the index); the first failure stops the rest."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])
    pool = ProcessPoolExecutor(workers, mp_context=context, initializer=_worker_init, initargs=(str(root),))
    try:
        futures = {pool.submit(_worker_batch, items[b.start : b.stop]): b for b in _batches(items)}
        for fut in as_completed(futures):
            batch = futures[fut]
            for task, (entry, copied) in zip(tasks[batch.start : batch.stop], fut.result(), strict=True):
                done(task, entry, copied)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
