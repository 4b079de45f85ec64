"""The analysis benchmark: read branches of a TTree with uproot, event by event chunk.

By default it "reads events from a branch and does nothing further" (the arrays are
materialised and dropped); ``fill_hist`` also fills a histogram of the values. Bytes are the
compressed bytes uproot requested from the file (``Source.num_requested_bytes``). No branches
named: every branch of the tree (the campaign job's builtin analysis). ``tree`` may be a pattern
(afkit.bench.treepattern, e.g. ``DF_*/O2track``): every matching tree of every file is read.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from afkit.bench import treepattern
from afkit.bench.intervals import IntervalCounter, Record
from afkit.bench.records import JsonlWriter, utc_iso
from afkit.bench.sources import XRD_NOT_FOUND_ERRNO, import_xrootd_client, is_xrootd_url
from afkit.bench.units import mbit_per_s
from afkit.errors import InvalidError, NotFoundError, UsageError

MAX_LISTED = 30
HIST_BINS = 100


@dataclass
class AnalysisConfig:
    files: list[str]
    branches: list[str]
    tree: str | None = None
    step_size: str = "100 MB"
    library: str = "ak"
    fill_hist: bool = False
    duration: float | None = None
    args: dict[str, Any] = field(default_factory=dict)
    interval: float = 1.0  # seconds per interval record


def _listing(names: list[str]) -> str:
    shown = ", ".join(names[:MAX_LISTED])
    return shown + (f", ... ({len(names)} in all)" if len(names) > MAX_LISTED else "")


def not_found_reason(err: FileNotFoundError) -> str:
    """The server's words in uproot's "file not found (MESSAGE)" ('' when it gave none: a local
    file): uproot.source.xrootd passes the XRootDStatus message (XRootD's ToStr, "[ERROR] Server
    responded with an error: [3011] ...", ending in a newline) to uproot._util._file_not_found,
    which puts it in parentheses before a blank line and its usage text."""
    head = str(err).split("\n\n", 1)[0]
    inner = head.partition("(")[2].rstrip().removesuffix(")") if head.startswith("file not found (") else ""
    return " ".join(inner.split())


def open_root(path: str) -> Any:
    """``uproot.open`` with the XRootD bindings for root:// URLs; errors become exit codes."""
    import uproot

    options: dict[str, Any] = {}
    if is_xrootd_url(path):
        import_xrootd_client()
        options["handler"] = uproot.source.xrootd.XRootDSource
        options["timeout"] = 30
    try:
        return uproot.open(path, **options)
    except FileNotFoundError as err:
        reason = not_found_reason(err)
        raise NotFoundError(f"ROOT file '{path}' does not exist" + (f": {reason}" if reason else "")) from err
    except ValueError as err:
        if "not a ROOT file" in str(err):
            raise InvalidError(
                f"'{path}' is not a ROOT file", hint="give ROOT files (the first bytes must be 'root')"
            ) from err
        raise InvalidError(f"cannot read '{path}': {err}") from err
    except OSError as err:
        if str(XRD_NOT_FOUND_ERRNO) in str(err) or "No such file" in str(err):
            raise NotFoundError(f"ROOT file '{path}' does not exist on the server: {err}") from err
        raise InvalidError(f"cannot open '{path}': {err}") from err


def trees_in(rfile: Any) -> list[str]:
    """Key paths of the file's trees, cycles stripped (``events``, ``DF_1/O2track``)."""
    return sorted(
        {
            treepattern.strip_cycles(key)
            for key, cls in rfile.classnames().items()
            if cls in ("TTree", "TNtuple", "TNtupleD")
        },
        key=treepattern.natural_key,
    )


def find_trees(rfile: Any, path: str, pattern: str | None) -> list[tuple[str, Any]]:
    """(key path, tree) of every tree PATTERN names (afkit.bench.treepattern), in natural order;
    no pattern: the file's only tree."""
    trees = trees_in(rfile)
    if pattern is None:
        if len(trees) == 1:
            return [(trees[0], rfile[trees[0]])]
        raise UsageError(
            f"'{path}' holds {len(trees)} trees; say which one with --tree",
            hint=f"trees: {_listing(trees)}" if trees else "the file holds no TTree",
        )
    problem = treepattern.check(pattern)
    if problem:
        raise UsageError(problem)
    matched = treepattern.select(pattern, trees)
    if not matched:
        raise NotFoundError(
            f"no tree matching '{pattern}' in '{path}'"
            if treepattern.is_pattern(pattern)
            else f"no tree '{pattern}' in '{path}'",
            hint=f"trees in the file: {_listing(trees)}" if trees else "the file holds no TTree",
        )
    return [(name, rfile[name]) for name in matched]


def find_branches(tree: Any, path: str, names: list[str]) -> list[Any]:
    keys = tree.keys()
    missing = [n for n in names if n not in keys]
    if missing:
        raise NotFoundError(
            f"no branch {', '.join(repr(m) for m in missing)} in tree '{tree.name}' of '{path}'",
            hint=f"branches: {_listing(keys)}",
        )
    return [tree[n] for n in names]


class _Hist:
    """A fixed-binning histogram; the range is taken from the first chunk."""

    def __init__(self) -> None:
        self.edges: np.ndarray | None = None
        self.counts = np.zeros(HIST_BINS, dtype=np.int64)

    def fill(self, values: np.ndarray) -> None:
        values = values[np.isfinite(values)]
        if values.size == 0:
            return
        if self.edges is None:
            lo, hi = float(values.min()), float(values.max())
            self.edges = np.linspace(lo, hi if hi > lo else lo + 1.0, HIST_BINS + 1)
        counts, _ = np.histogram(values, bins=self.edges)
        self.counts += counts


def _flat_values(chunk: Any, library: str) -> np.ndarray:
    if library == "np":
        parts = [
            np.asarray(np.concatenate(v) if v.dtype == object else v, dtype=float) for v in chunk.values()
        ]
    else:
        import awkward as ak

        parts = [np.asarray(ak.flatten(chunk[f], axis=None), dtype=float) for f in chunk.fields]
    return np.concatenate(parts) if parts else np.zeros(0)


def _close(rfile: Any) -> None:
    with contextlib.suppress(Exception):  # closing is all that is left to do; a closed file too
        rfile.close()


def run_analysis(
    cfg: AnalysisConfig, writer: JsonlWriter, *, barrier: Callable[[], None] | None = None
) -> Record:
    """Read ``cfg.branches`` from every file; interval records as seconds end; return the summary.
    Every file it opened is closed on every path out, an error's too: an XRootD file left open
    (a tree name that is wrong, raised after the open) kept the interpreter from exiting, and the
    job from ending, after its failed record was written."""
    files: list[Any] = []
    try:
        return _run_analysis(cfg, writer, barrier, files)
    finally:
        for rfile in files:
            _close(rfile)


def _run_analysis(
    cfg: AnalysisConfig, writer: JsonlWriter, barrier: Callable[[], None] | None, files: list[Any]
) -> Record:
    opened = []
    for path in cfg.files:  # open and check everything before measuring
        rfile = open_root(path)
        files.append(rfile)
        for name, tree in find_trees(rfile, path, cfg.tree):
            branches = find_branches(tree, path, cfg.branches) if cfg.branches else None
            opened.append((path, rfile, name, tree, branches))
    if barrier is not None:
        barrier()
    counter = IntervalCounter(writer.write, width=cfg.interval)
    hist = _Hist() if cfg.fill_hist else None
    per_file: list[Record] = []
    now = time.time()
    counter.begin(now)
    deadline = now + cfg.duration if cfg.duration else float("inf")
    ended_by = "end-of-data"
    for k, (path, rfile, name, tree, branches) in enumerate(opened):
        source = rfile.file.source
        seen = source.num_requested_bytes
        wanted = None if branches is None else {id(b) for b in branches}
        entries = 0
        for chunk in tree.iterate(
            filter_branch=None if wanted is None else lambda b, wanted=wanted: id(b) in wanted,
            step_size=cfg.step_size,
            library=cfg.library,
        ):
            n = len(next(iter(chunk.values()))) if cfg.library == "np" else len(chunk)
            if hist is not None:
                hist.fill(_flat_values(chunk, cfg.library))
            del chunk
            requested = source.num_requested_bytes
            now = time.time()
            counter.add(now, requested - seen, 1, n)
            seen = requested
            entries += n
            if now >= deadline:
                ended_by = "duration"
                break
        per_file.append(
            {"file": path, "tree": name, "entries": entries, "tree_entries": int(tree.num_entries)}
        )
        if k + 1 == len(opened) or opened[k + 1][1] is not rfile:
            rfile.close()  # its last tree was read
        if ended_by == "duration":
            break
    end = time.time()
    counter.finish(end)
    seconds = counter.seconds
    summary: Record = {
        "type": "summary",
        "kind": "analysis",
        "status": "ok",
        "ended_by": ended_by,
        "events": counter.total_events,
        "bytes": counter.total_bytes,
        "seconds": round(seconds, 6),
        "events_per_s": round(counter.total_events / seconds, 3) if seconds > 0 else 0.0,
        "mbps": round(mbit_per_s(counter.total_bytes, seconds), 3),
        "branches": cfg.branches,
        "library": cfg.library,
        "step_size": cfg.step_size,
        "start": utc_iso(counter.start),
        "end": utc_iso(end),
        "files": per_file,
    }
    if hist is not None:
        summary["hist"] = {
            "entries": int(hist.counts.sum()),
            "range": [float(hist.edges[0]), float(hist.edges[-1])] if hist.edges is not None else None,
            "bins": HIST_BINS,
        }
    print(
        f"afkit bench: {counter.total_events} events in {seconds:.3f} s: "
        f"{summary['events_per_s']:.0f} events/s, {summary['mbps']:.1f} Mbit/s ({ended_by})",
        file=sys.stderr,
    )
    return summary
