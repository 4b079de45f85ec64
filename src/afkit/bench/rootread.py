"""The analysis benchmark run by ROOT itself: ``root.exe`` runs afkit's reader macro.

``afkit bench analysis --engine root`` and the campaign's ``payload: root`` run
``root.exe -b -q -l 'afkit_read.C("CONFIG")'`` (the macro ships beside this module,
``rootread/afkit_read.C``) with the ROOT found as ``root.exe`` on PATH: inside an image, the tag's
own ROOT. The macro opens every input with ``TFile::Open`` (paths or ``root://`` URLs), reads the
chosen branches of every tree whose key path matches the tree pattern (afkit.bench.treepattern)
with TTree + TTreeCache (or RDataFrame), and prints cumulative samples (bytes and read calls from
``TFile::GetFileBytesRead``/``GetFileReadCalls``, events) at the first entry of every interval.
This driver turns them into the same interval records and summary as the uproot engine
(afkit.bench.analysis), plus ROOT's own I/O figures under ``root``. Standard library only: the
campaign job runs it inside images that have nothing of afkit's Python dependencies.
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from afkit.bench.intervals import IntervalCounter, Record
from afkit.bench.records import JsonlWriter, utc_iso
from afkit.bench.sources import for_root
from afkit.bench.trace import write_trace
from afkit.bench.units import mbit_per_s
from afkit.errors import AfkitError, ExitCode, PrereqError, UsageError, ended

ROOT_EXE = "root.exe"
READERS = ("ttree", "rdataframe")
WORKS = ("read", "histogram")
PREFIX = "afkit-rootread "
# a sample taken this soon after an interval's end is the work of that interval (the macro takes
# one at the first entry after every boundary, with a clock of a few ms resolution)
SLACK = 0.02


@dataclass
class RootReadConfig:
    files: list[str]
    branches: list[str]
    tree: str | None = None  # a tree pattern (afkit.bench.treepattern); None: the file's only tree
    reader: str = "ttree"
    work: str = "read"
    cache_mb: float | None = None  # None: ROOT's own TTreeCache size; 0: no cache
    duration: float | None = None
    interval: float = 1.0
    root_exe: str = ROOT_EXE
    trace_out: Path | None = None  # every read of the inputs (TTreePerfStats), as JSON lines here
    args: dict[str, Any] = field(default_factory=dict)


def macro_path(reader: str = "ttree") -> Path:
    """The reader macro, package data beside this module (RDataFrame's includes the TTree one)."""
    name = "afkit_read_rdf.C" if reader == "rdataframe" else "afkit_read.C"
    return Path(__file__).resolve().with_name("rootread") / name


def find_root(name: str = ROOT_EXE) -> str:
    """The path of ``root.exe`` on PATH; exit 3 naming what to do when there is none."""
    found = shutil.which(name)
    if found is None:
        raise PrereqError(
            f"ROOT not found: no {name} on PATH",
            hint="run where ROOT is set up (in an image: a tag with ROOT), or use --engine uproot",
        )
    return found


def check_config(cfg: RootReadConfig) -> None:
    if cfg.reader not in READERS:
        raise UsageError(f"reader must be one of {', '.join(READERS)}, not {cfg.reader!r}")
    if cfg.work not in WORKS:
        raise UsageError(f"work must be one of {', '.join(WORKS)}, not {cfg.work!r}")
    if cfg.cache_mb is not None and (cfg.cache_mb < 0 or not math.isfinite(cfg.cache_mb)):
        raise UsageError(f"the tree cache size must be >= 0 MB, got {cfg.cache_mb}")
    if cfg.interval <= 0:
        raise UsageError(f"the interval must be positive, got {cfg.interval}")
    for text in [*cfg.files, *cfg.branches, cfg.tree or ""]:
        if "\n" in text:
            raise UsageError(f"a line break in {text!r}")


def config_text(cfg: RootReadConfig, *, wait: bool) -> str:
    """The macro's configuration: ``key value`` lines (afkit_read.C)."""
    lines = [f"file {for_root(f)}" for f in cfg.files]
    lines += [f"tree {cfg.tree}"] if cfg.tree else []
    lines += [f"branch {b}" for b in cfg.branches]
    lines += [f"reader {cfg.reader}", f"work {cfg.work}", f"width {cfg.interval!r}"]
    lines += [f"cache_mb {-1 if cfg.cache_mb is None else cfg.cache_mb!r}"]
    lines += [f"duration {cfg.duration or 0!r}", f"wait {int(wait)}"]
    lines += [f"trace {int(cfg.trace_out is not None)}"]
    return "\n".join(lines) + "\n"


def command(root_exe: str, config: Path, reader: str = "ttree") -> list[str]:
    """``root.exe -b -q -l 'afkit_read.C("CONFIG")'`` (``afkit_read_rdf.C`` for RDataFrame)."""
    return [root_exe, "-b", "-q", "-l", f'{macro_path(reader)}("{config}")']


@dataclass
class Parsed:
    """What the macro printed, as the driver reads it line by line."""

    counter: IntervalCounter
    version: str = ""
    trees: list[Record] = field(default_factory=list)
    hist: Record | None = None
    error: tuple[int, str] | None = None
    ended_by: str = ""
    end: float = 0.0
    totals: tuple[int, int] = (0, 0)  # ROOT's bytes read and read calls at the end, all files
    cpu: tuple[float, float] = (0.0, 0.0)  # the process's CPU seconds at the start and the end
    reads: list[tuple[float, int, int]] = field(default_factory=list)  # (time after, offset, length)
    _last: tuple[int, int, int] = (0, 0, 0)

    def _add(self, t: float, nbytes: int, calls: int, events: int) -> None:
        b0, c0, e0 = self._last
        width = self.counter.width
        start = math.floor(t / width) * width
        at = start - SLACK / 10 if t - start < min(SLACK, width / 10) and start > self.counter.start else t
        self.counter.add(at, nbytes - b0, calls - c0, events - e0)
        self._last = (nbytes, calls, events)

    def line(self, text: str) -> str | None:
        """Take one line of the macro's stdout; "ready" when the inputs are open."""
        if not text.startswith(PREFIX):
            return None
        body = text[len(PREFIX) :].rstrip("\n")
        kind = body.split(None, 1)[0] if body.strip() else ""
        rest = body[len(kind) + 1 :]
        if kind == "tree":
            name, path, entries, read, vreads, cached, uncached = rest.split("\t")
            self.trees.append({"file": name, "tree": path, "entries": int(read), "tree_entries": int(entries),
                               "vector_reads": int(vreads), "cache_bytes": int(cached),
                               "uncached_read_calls": int(uncached)})  # fmt: skip
            return kind
        words = rest.split()
        if kind == "read":
            self.reads.append((float(words[2]), int(words[0]), int(words[1])))
        elif kind == "error":
            code, _, message = rest.partition(" ")
            self.error = (int(code), message)
        elif kind == "ready":
            self.version = rest.strip()
        elif kind == "start":
            t, nbytes, calls, events = float(words[0]), int(words[1]), int(words[2]), int(words[3])
            self.counter.begin(t)
            self._last = (nbytes, calls, events)
            self.cpu = (float(words[4]), float(words[4]))
        elif kind in ("sample", "done"):
            t, nbytes, calls, events = float(words[0]), int(words[1]), int(words[2]), int(words[3])
            self._add(t, nbytes, calls, events)
            if kind == "done":
                self.counter.finish(t)
                self.end, self.ended_by, self.totals = t, words[5], (nbytes, calls)
                self.cpu = (self.cpu[0], float(words[4]))
        elif kind == "hist":
            self.hist = {"entries": int(float(words[0])), "range": [float(words[1]), float(words[2])],
                         "bins": int(words[3])}  # fmt: skip
        return kind


def root_error(stderr: str, limit: int = 300) -> str:
    """The line of ROOT's stderr that says what went wrong (cling's ``error:``, ``Error in <…>``)."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    marked = [ln for ln in lines if "error" in ln.lower()]
    line = (marked[:1] or lines[-1:] or ["no message"])[0]
    return line if len(line) <= limit else line[: limit - 3] + "..."


# ROOT's messages on stderr: "LEVEL in <WHERE>: TEXT" (core/foundation/src/TError.cxx,
# DefaultErrorHandler); e.g. TNetXNGFile's constructor, when XrdCl::File::Open fails, calls
# Error("Open", "%s", status.ToStr()) (net/netxng/src/TNetXNGFile.cxx): XRootD's own text,
# "Error in <TNetXNGFile::Open>: [ERROR] Server responded with an error: [3011] ...".
ROOT_ERROR_LEVELS = ("Error in <", "SysError in <", "Fatal in <")


def root_errors(stderr: str) -> str:
    """ROOT's own error messages on STDERR, in order, each once, joined with '; ' ('' for none): the
    cause of a failure the macro reports (a TFile::Open that returned no file)."""
    seen: list[str] = []
    for line in stderr.splitlines():
        text = " ".join(line.split())
        if text.startswith(ROOT_ERROR_LEVELS) and text not in seen:
            seen.append(text)
    return "; ".join(seen)


def _summary(cfg: RootReadConfig, parsed: Parsed) -> Record:
    counter = parsed.counter
    seconds = counter.seconds
    vreads = sum(int(t["vector_reads"]) for t in parsed.trees)
    summary: Record = {
        "type": "summary",
        "kind": "analysis",
        "engine": "root",
        "status": "ok",
        "ended_by": parsed.ended_by,
        "events": counter.total_events,
        "bytes": counter.total_bytes,
        "seconds": round(seconds, 6),
        "events_per_s": round(counter.total_events / seconds, 3) if seconds > 0 else 0.0,
        "mbps": round(mbit_per_s(counter.total_bytes, seconds), 3),
        "cpu_s": round(parsed.cpu[1] - parsed.cpu[0], 6),
        "branches": cfg.branches,
        "tree": cfg.tree,
        "reader": cfg.reader,
        "work": cfg.work,
        "cache_mb": cfg.cache_mb,
        "start": utc_iso(counter.start),
        "end": utc_iso(parsed.end),
        "files": parsed.trees,
        "root": {
            "version": parsed.version,
            "bytes_read": parsed.totals[0],
            "read_calls": parsed.totals[1],
            "vector_reads": vreads,
            "cache_bytes": sum(int(t["cache_bytes"]) for t in parsed.trees),
            "uncached_read_calls": sum(int(t["uncached_read_calls"]) for t in parsed.trees),
        },
    }
    if parsed.hist is not None:
        summary["hist"] = parsed.hist
    if cfg.trace_out is not None:
        summary["trace"] = {"file": str(cfg.trace_out), "reads": len(parsed.reads)}
    return summary


def _release(proc: subprocess.Popen[str], barrier: Callable[[], None] | None) -> None:
    """Wait on BARRIER (the other clients), then let the macro start measuring."""
    assert proc.stdin is not None
    try:
        if barrier is not None:
            barrier()
        proc.stdin.write("go\n")
    except BaseException:
        with contextlib.suppress(OSError):
            proc.stdin.write("stop\n")
        raise
    finally:
        with contextlib.suppress(OSError):
            proc.stdin.close()


def _read(proc: subprocess.Popen[str], parsed: Parsed, barrier: Callable[[], None] | None) -> None:
    assert proc.stdout is not None
    for text in proc.stdout:
        if parsed.line(text) == "ready":
            _release(proc, barrier)


def run_rootread(
    cfg: RootReadConfig, writer: JsonlWriter, *, barrier: Callable[[], None] | None = None
) -> Record:
    """Run the macro on ``cfg.files``; interval records as intervals end; return the summary."""
    check_config(cfg)
    root = find_root(cfg.root_exe)
    if not macro_path(cfg.reader).is_file():
        raise PrereqError(f"afkit's ROOT reader macro is missing: {macro_path(cfg.reader)}",
                          hint="reinstall afkit (the macro is package data)")  # fmt: skip
    parsed = Parsed(IntervalCounter(writer.write, width=cfg.interval))
    with tempfile.TemporaryDirectory(prefix="afkit-rootread-") as tmp:
        config = Path(tmp) / "config.txt"
        config.write_text(config_text(cfg, wait=True), encoding="utf-8")
        err_path = Path(tmp) / "stderr.txt"
        with err_path.open("w+", encoding="utf-8", errors="replace") as err:
            proc = _start(command(root, config, cfg.reader), err)
            try:
                _read(proc, parsed, barrier)
                proc.wait()
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
            err.seek(0)
            stderr = err.read()
    if parsed.error is not None:
        code, message = parsed.error
        known = code in {int(c) for c in ExitCode}
        cause = root_errors(stderr)  # ROOT's and XRootD's own words (the record's error, the job's log)
        raise AfkitError(f"ROOT reader: {message}" + (f": {cause}" if cause else ""),
                         code=ExitCode(code) if known else ExitCode.FAILURE)  # fmt: skip
    if proc.returncode != 0 or not parsed.ended_by:
        raise AfkitError(
            f"ROOT reader ({root}) {ended(proc.returncode)}: {root_error(stderr)}",
            hint="run the command by hand to see ROOT's whole output: "
            + " ".join(command(root, config, cfg.reader)),
        )
    summary = _summary(cfg, parsed)
    if cfg.trace_out is not None:
        write_trace(cfg.trace_out, parsed.reads)
    print(
        f"afkit bench: {summary['events']} events in {summary['seconds']:.3f} s: "
        f"{summary['events_per_s']:.0f} events/s, {summary['mbps']:.1f} Mbit/s "
        f"(ROOT {parsed.version}, {cfg.reader}, {parsed.ended_by})",
        file=sys.stderr,
    )
    return summary


def _start(cmd: list[str], err: IO[str]) -> subprocess.Popen[str]:
    env = {**os.environ, "ROOT_HIST": "0"}  # no ~/.root_hist written by a batch job
    return subprocess.Popen(
        cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True,
        bufsize=1, env=env,
    )  # fmt: skip
