"""The KIT coordinated-caches study's measurements (kit-htda), on one worker node, as root.

1. Figure 1: for each data source and each number of concurrent processes N, ``afkit bench multi``
   starts N readers at once, each reading its own file paced to the study's demand (a CPU-bound
   analysis's pace: each process as if on a core of its own), for ``point_s`` seconds; a source
   with ``background`` readers gets that many more in the same release (the original's readers on
   other hosts, on the same link). Recorded per point: the N processes' summed rate, every reader's
   summed rate, the processes' processing share (their rate against their demand: the share of its
   time a process computes rather than waits for data), the host's CPU usage.
2. Figure 6: the same workflow, ``cache_jobs`` jobs at once each reading one file of the slowest
   network source whole at the demand, with the worker node's cache disabled (the jobs read the
   source) and enabled (an XCache on this node in front of it, filled by one pass before: HTDA
   places jobs where their files are already cached), alternating; every job's walltime.

In the box (no ``sources`` given) the sources are made here: two file servers, each a network
namespace behind its own veth pair shaped by tc-tbf to ``slow_mbit`` and ``fast_mbit``, each with
an XRootD origin; and a directory on this node's disk for the local source (its files' pages
dropped before each point). Records: DATA/points.jsonl, DATA/jobs.jsonl, DATA/setup.json.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import shutil
import threading
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from afkit.atomic import write_atomic
from afkit.bench.multi import read_summaries, run_clients
from afkit.bench.offsets import BlockPlan
from afkit.bench.readbench import ReadConfig
from afkit.bench.records import JsonObject, read_jsonl
from afkit.bench.units import parse_rate, parse_size
from afkit.errors import AfkitError, PrereqError, UsageError
from afkit.storage import daemon as dmn
from afkit.study import serve
from afkit.study.model import Study
from afkit.study.recipe import Facility
from afkit.study.writes import Write

PLACE = Path("/var/lib/afkit/study")  # the origins' data: where the xrootd user reaches it
MB = 1_000_000
BLOCK = "64KiB"  # each request: small against a second of the demand, so the paced reads stay even


@dataclass
class Source:
    name: str
    kind: str  # network | local
    prefix: str  # root://HOST:PORT/ + path below it, or a local directory
    path: Path  # where this host writes the source's files
    link_mbit: float = 0.0  # a network source's link (0: not given)
    background: int = 0
    emulated: str = ""  # in the box: how
    netns: str = ""  # in the box: the file server's network namespace and address there
    address: str = ""
    client: str = ""  # this node's address on the link (the origin allows it)
    files: list[str] = field(default_factory=list)


def _clients(fac: Facility) -> list[int]:
    raw = fac.params.get("clients")
    if not isinstance(raw, list) or not raw or not all(isinstance(n, int) and n >= 1 for n in raw):
        raise UsageError(f"params.clients must be a list of whole numbers >= 1, not {raw!r}")
    return sorted(set(raw))


def demand_bps(fac: Facility) -> float:
    rate = parse_rate(str(fac.params.get("demand", "")))
    if rate <= 0:
        raise UsageError(f"params.demand must be a positive rate, not {fac.params.get('demand')!r}")
    return rate


def _given_sources(fac: Facility) -> list[Source]:
    """A sites file's ``params.sources``: NAME: {url, path, link_mbit, background} (network) or
    NAME: {dir} (local)."""
    raw = fac.params.get("sources") or {}
    if not isinstance(raw, dict):
        raise UsageError("params.sources must map a source's name to its url and path, or its dir")
    out = []
    for name, s in raw.items():
        if not isinstance(s, dict) or not (("url" in s and "path" in s) or "dir" in s):
            raise UsageError(
                f"params.sources.{name}: give url and path (a file server: its root:// URL and the "
                "directory it serves, written from this host) or dir (a local disk's directory)"
            )
        if "dir" in s:
            out.append(Source(str(name), "local", str(s["dir"]), Path(str(s["dir"]))))
        else:
            out.append(Source(str(name), "network", str(s["url"]).rstrip("/") + "/", Path(str(s["path"])),
                              float(s.get("link_mbit") or 0), int(s.get("background") or 0)))  # fmt: skip
    return out


@contextlib.contextmanager
def _box_sources(fac: Facility, work: Path) -> Iterator[list[Source]]:
    """The box's sources: the slow and the fast file server (namespaces behind shaped links; their
    origins start in _served once their files are there), the node's own disk."""
    servers = (("slow", serve.whole(fac, "slow_mbit"), 0),
               ("fast", serve.whole(fac, "fast_mbit"), serve.whole(fac, "background")))  # fmt: skip
    made = []
    with contextlib.ExitStack() as stack:
        for index, (name, mbit, bg) in enumerate(servers, start=1):
            ns = f"afkit-htda-{name}"
            address = stack.enter_context(serve.shaped_server(ns, index, mbit * MB))
            how = f"an XRootD origin in network namespace {ns}, behind a veth pair with tbf at {mbit} Mbit/s"
            made.append(Source(name, "network", "", work / name, float(mbit), bg, how, ns, address))
            made[-1].client = serve.addresses(index)[0]
        how = "a directory on this node's own disk, its files' pages dropped before each point"
        made.append(Source("ssd", "local", str(work / "ssd"), work / "ssd", emulated=how))
        for src in made:
            src.path.mkdir(parents=True, exist_ok=True)
        yield made


def _files(src: Source, count: int, file_mb: int, prefix: str) -> list[str]:
    """COUNT files of FILE_MB MB made for SRC (afkit bench gen random, into its path)."""
    serve.afkit("bench", "gen", "random", "--size", f"{file_mb}MB", "--copies", str(count),
                "--outdir", str(src.path), "--prefix", prefix)  # fmt: skip
    return sorted(p.name for p in src.path.glob(f"{prefix}*"))


def _rate(s: JsonObject) -> float:
    seconds = float(str(s.get("seconds") or 0))
    return float(str(s.get("bytes") or 0)) / seconds if seconds > 0 else 0.0


def _cpu(outdir: Path) -> float | None:
    path = outdir / "monitor.jsonl"
    if not path.is_file():
        return None
    cpu = [float(str(r["cpu_percent"])) for r in read_jsonl(path) if "cpu_percent" in r]
    return round(sum(cpu) / len(cpu), 1) if cpu else None


def point(src: Source, n: int, fac: Facility, outdir: Path, rep: int) -> dict[str, object]:
    """N processes (and SRC's background readers) reading SRC at once: the point's record."""
    d = demand_bps(fac)
    readers = n + src.background
    if readers > len(src.files):
        raise UsageError(
            f"source {src.name}: {readers} readers need {readers} files, it has {len(src.files)}"
        )
    urls = [
        src.prefix + f if src.kind == "network" else str(Path(src.prefix) / f) for f in src.files[:readers]
    ]
    clients = _read(urls, fac, outdir, loop=True, drop=src.kind == "local")
    mine = clients[src.background :]  # the first readers are the background's
    local = sum(_rate(c) for c in mine)
    total = sum(_rate(c) for c in clients)
    return {
        "type": "point",
        "source": src.name,
        "kind": src.kind,
        "rep": rep,
        "clients": n,
        "background": src.background,
        "readers": readers,
        "demand_MBps": d / MB,
        "rate_MBps": round(local / MB, 4),
        "total_MBps": round(total / MB, 4),
        "share": round(local / (n * d), 4),
        "cpu_percent": _cpu(outdir),
        "link_MBps": src.link_mbit / 8,
        "errors": sum(1 for c in clients if c.get("error")),
    }


def _fig1(sources: list[Source], fac: Facility, out: Path, work: Path) -> None:
    clients, reps = _clients(fac), serve.whole(fac, "repetitions") or 1
    total = len(sources) * len(clients) * reps
    done = 0
    with (out / "points.jsonl").open("w", encoding="utf-8") as fh:
        for rep in range(reps):
            for src in sources:
                for n in clients:
                    rec = point(src, n, fac, work / "points" / f"{src.name}-{n}", rep)
                    fh.write(json.dumps(rec) + "\n")
                    fh.flush()
                    done += 1
                    serve.say(f"point {done}/{total}: {src.name}, {n} process{'es' if n > 1 else ''}"
                         f"{f' (+{src.background} background)' if src.background else ''}: "
                         f"{rec['rate_MBps']:.2f} MB/s, processing share {rec['share']:.2f}")  # fmt: skip


def _read(
    urls: list[str], fac: Facility, outdir: Path, *, loop: bool, drop: bool = False
) -> list[JsonObject]:
    """One reader per URL, threads of this process released together (afkit bench multi --threads),
    each paced to the demand in BLOCK requests: for point_s seconds (LOOP: from the file's start
    again), else its file once; their records in OUTDIR, their summaries returned in URLS' order."""
    shutil.rmtree(outdir, ignore_errors=True)
    plan = BlockPlan(block=parse_size(BLOCK, what="block size"))
    duration = float(serve.whole(fac, "point_s")) if loop else None
    rate = demand_bps(fac)
    stop = threading.Event()  # Ctrl-C: the threads end their reads at once, not at their deadline
    configs = [ReadConfig(urls=[u], plan=plan, duration=duration, repeat=loop, rate=rate, drop_cache=drop,
                          reconnect_timeout=0, stop=stop) for u in urls]  # fmt: skip
    args: dict[str, object] = {"clients": len(urls), "demand": str(fac.params["demand"]), "block": BLOCK}
    try:
        code = run_clients(configs, outdir, no_monitor=not loop, kind="multi", args=args, threads=True)
    except BaseException:
        stop.set()
        raise
    if code != 0:
        raise AfkitError(f"the readers of {outdir.name} failed (exit {code}): their records are in {outdir}")
    return read_summaries(outdir, len(urls))


def _walltimes(urls: list[str], fac: Facility, outdir: Path) -> list[float]:
    return [float(str(c.get("seconds") or 0)) for c in _read(urls, fac, outdir, loop=False)]


def _fig6(src: Source, fac: Facility, out: Path, work: Path, jobs: list[str]) -> None:
    """The workflow's walltimes without and with the node's cache in front of SRC."""
    netloc = urlsplit(src.prefix).netloc
    path = urlsplit(src.prefix).path  # '/' or '//DIR/'
    reps = serve.whole(fac, "cache_repetitions") or 1
    with serve.xcache(netloc, work / "xcache", serve.whole(fac, "port") + 200) as cache:
        cache_prefix = cache.rstrip("/") + path if path.startswith("//") else cache + path.lstrip("/")
        direct = [src.prefix + j for j in jobs]
        cached = [cache_prefix + j for j in jobs]
        serve.say(f"cache: filling the node's XCache with the workflow's {len(jobs)} files")
        _walltimes(cached, fac, work / "jobs" / "fill")
        with (out / "jobs.jsonl").open("w", encoding="utf-8") as fh:
            for rep in range(reps):
                for which in ("disabled", "enabled") if rep % 2 == 0 else ("enabled", "disabled"):
                    urls = cached if which == "enabled" else direct
                    times = _walltimes(urls, fac, work / "jobs" / f"{which}-{rep}")
                    for i, t in enumerate(times):
                        fh.write(json.dumps({"type": "job", "cache": which, "rep": rep, "job": i,
                                             "walltime_s": t}) + "\n")  # fmt: skip
                    fh.flush()
                    serve.say(f"cache {which}, repetition {rep + 1}/{reps}: median walltime "
                         f"{sorted(times)[len(times) // 2]:.1f} s of {len(times)} jobs")  # fmt: skip


@contextlib.contextmanager
def _served(src: Source, fac: Facility, work: Path) -> Iterator[None]:
    """The box's file server SRC: its origin in its namespace."""
    if not src.netns:
        yield
        return
    with serve.origin(src.path, work / "storage" / src.name, serve.whole(fac, "port"), netns=src.netns,
                      host=src.address, allow=(src.client,)) as url:  # fmt: skip
        src.prefix = url + "/"
        yield


def run(study: Study, fac: Facility, out: Path, image: Path | None, work: Path | None = None) -> None:
    """The study's measurements (module docstring) into OUT; WORK (default PLACE/NAME) holds the
    box's files, the origins' and the cache's state and the per-point results."""
    del image  # the readers are afkit's own: no image needed
    given = _given_sources(fac)
    if not given and not fac.scaled:  # a sites file: the node's own sources, never the box's
        raise UsageError(f"{fac.where}: params.sources names no data source",
                         hint="name your node's file servers (url, path) and local disks (dir): "
                         "docs/studies.md, kit-htda")  # fmt: skip
    if not given and os.geteuid() != 0:
        raise PrereqError(f"study {study.name} in the box runs as root",
                          hint="it makes network namespaces and shaped links: run it with sudo")  # fmt: skip
    # where root's origins (as the xrootd user) reach the files; another user's own cache otherwise
    place = PLACE if os.geteuid() == 0 else Path.home() / ".cache" / "afkit" / "study"
    work = (work or place / study.name).absolute()
    out = out.absolute()
    clients = _clients(fac)
    file_mb, jobs_n = serve.whole(fac, "file_mb"), serve.whole(fac, "cache_jobs")
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.json*"):
        old.unlink()  # a new run: no record of an earlier one stays beside this run's
    shutil.rmtree(work, ignore_errors=True)  # afkit's own place, from an earlier or a killed run
    work.mkdir(parents=True)
    dmn.check_reachable(dmn.service_user(), work)
    made: list[Path] = []
    try:
        with (
            serve.interruptible(),
            contextlib.nullcontext(given) if given else _box_sources(fac, work) as sources,
        ):
            for src in sources:
                src.files = _files(src, max(clients) + src.background, file_mb, "afkit-htda-read")
                made += [src.path / f for f in src.files]
            network = [s for s in sources if s.kind == "network"]
            slowest = min(network, key=lambda s: s.link_mbit or float("inf")) if network else None
            jobs = []
            if slowest is not None and jobs_n:
                jobs = _files(slowest, jobs_n, serve.whole(fac, "cache_file_mb"), "afkit-htda-job")
                made += [slowest.path / j for j in jobs]
            setup = {"sources": [{k: v for k, v in asdict(s).items() if k != "files"} for s in sources],
                     "host": platform.node(), "kernel": platform.release(), "cores": os.cpu_count(),
                     "demand_MBps": demand_bps(fac) / MB}  # fmt: skip
            with contextlib.ExitStack() as stack:
                for src in sources:
                    stack.enter_context(_served(src, fac, work))
                write_atomic(out / "setup.json", json.dumps(setup, indent=2, default=str) + "\n", mode=0o644)
                _fig1(sources, fac, out, work)
                if slowest is not None and jobs:
                    _fig6(slowest, fac, out, work, jobs)
    finally:
        for f in made:  # the files afkit wrote into a user's sources
            f.unlink(missing_ok=True)
        shutil.rmtree(work, ignore_errors=True)


def writes(study: Study, fac: Facility, image: Path | None, work: Path | None = None) -> list[Write]:
    """What a run writes (afkit.study.writes): each source's read files (the most clients of a
    point and the source's background readers, ``file_mb`` each) and the cache workflow's files
    on the slowest file server; in the box all under WORK (default PLACE/NAME), removed after."""
    del image
    most, file_mb = max(_clients(fac)), serve.whole(fac, "file_mb") * MB
    cache = serve.whole(fac, "cache_jobs") * serve.whole(fac, "cache_file_mb") * MB
    given = _given_sources(fac)
    if not given:
        place = PLACE if os.geteuid() == 0 else Path.home() / ".cache" / "afkit" / "study"
        work = work or place / study.name
        reads = (most + most + serve.whole(fac, "background") + most) * file_mb  # slow, fast, ssd
        return [Write("the box's file servers' and local disk's files, removed after the run", work,
                      reads + cache)]  # fmt: skip
    out = []
    network = [s for s in given if s.kind == "network"]
    slowest = min(network, key=lambda s: s.link_mbit or float("inf")) if network else None
    for src in given:
        size = (most + src.background) * file_mb + (cache if src is slowest else 0)
        out.append(Write(f"source {src.name}: the read files, removed after the run", src.path, size))
    return out
