"""``rootreadspeed``, ROOT's own read-throughput tool: its command line, its output, its verdict.

rootreadspeed (ROOT >= 6.28, root-project/root tree/readspeed/src/ReadSpeed.cxx and
ReadSpeedCLI.cxx) reads the chosen branches of a tree entry by entry with ``TBranch::GetEntry`` and
prints, in ``ReadSpeed::PrintThroughput``::

    Thread pool size:		1
    Real time to setup MT run:	0.13 s        (only with --threads N)
    CPU time to setup MT run:	0.1 s
    Real time:			0.706305 s
    CPU time:			0.46 s
    Uncompressed data read:		0 bytes
    Compressed data read:		69459283 bytes
    ...
    CPU Efficiency: 		65.1277%
    Reading data is likely balanced (more threads may help though).

The verdict is its rule on CPU time / threads / real time: > 80 % "CPU bound (decompression)",
< 50 % "I/O bound", else "balanced". Its CPU time comes from TStopwatch (10 ms ticks): runs
shorter than about a second give no usable verdict.

Over root:// to a server on the same host (loopback, the testbed), rootreadspeed fails with
"Could not open file": it opens with the option ``READ_WITHOUT_GLOBALREGISTRATION``, and
``TFile::GetType`` (io/io/src/TFile.cxx) treats a root:// URL whose host is the local host as a
local file unless the option is exactly ``READ`` (only then does it check that the path exists
locally); the URL's path is then opened as a local path. ``TFile.ForceRemote: 1`` in a
``.rootrc`` of the working directory (or ``?remote=1`` on the URL, which however makes
rootreadspeed reopen the file for every task because the name loses the option) makes it go
through XRootD. :func:`run` writes that ``.rootrc`` whenever a file is a root:// URL.

Standard library only: the campaign's job core runs this inside the image.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from afkit.bench.sources import for_root, is_xrootd_url

FORCE_REMOTE_RC = "TFile.ForceRemote: 1\n"
VERDICTS = {
    "likely CPU bound (decompression).": "decompression-bound",
    "likely I/O bound.": "io-bound",
    "likely balanced (more threads may help though).": "balanced",
}
_NUM = r"([-+0-9.eE]+|-?nan|-?inf)"
_FIELDS = {
    "threads": rf"^Thread pool size:\s*{_NUM}\s*$",
    "setup_real_s": rf"^Real time to setup MT run:\s*{_NUM} s\s*$",
    "real_s": rf"^Real time:\s*{_NUM} s\s*$",
    "cpu_s": rf"^CPU time:\s*{_NUM} s\s*$",
    "uncompressed_bytes": rf"^Uncompressed data read:\s*{_NUM} bytes\s*$",
    "compressed_bytes": rf"^Compressed data read:\s*{_NUM} bytes\s*$",
    "cpu_efficiency_percent": rf"^CPU Efficiency:\s*{_NUM}%\s*$",
}
_REQUIRED = ("threads", "real_s", "cpu_s", "uncompressed_bytes", "compressed_bytes", "cpu_efficiency_percent")


class ReadSpeedError(RuntimeError):
    """rootreadspeed failed or printed something this parser does not know."""


@dataclass(frozen=True)
class ReadSpeed:
    """One rootreadspeed run, as it printed it."""

    threads: int  # "Thread pool size" (0: the sequential path, no --threads)
    real_s: float
    cpu_s: float
    uncompressed_bytes: int
    compressed_bytes: int
    cpu_efficiency_percent: float
    verdict: str  # io-bound | decompression-bound | balanced
    setup_real_s: float | None = None  # --threads N: time to find the clusters (not in real_s)

    @property
    def mbps(self) -> float:
        """Compressed bytes read per real second, in Mbit/s (10^6 bit/s), as afkit counts bytes."""
        return self.compressed_bytes * 8 / 1e6 / self.real_s if self.real_s > 0 else 0.0

    def events_per_s(self, entries: int) -> float:
        """ENTRIES (the trees' entries; rootreadspeed does not print them) per real second."""
        return entries / self.real_s if self.real_s > 0 else 0.0

    def record(self, entries: int | None = None) -> dict[str, Any]:
        """JSON-ready fields, with Mbit/s and (given ENTRIES) events/s."""
        rec: dict[str, Any] = asdict(self)
        rec["mbps"] = round(self.mbps, 3)
        if entries is not None:
            rec["events"] = entries
            rec["events_per_s"] = round(self.events_per_s(entries), 3)
        return rec


def parse(text: str) -> ReadSpeed:
    """The figures and verdict of rootreadspeed's standard output TEXT; ReadSpeedError if absent."""
    found: dict[str, float] = {}
    for key, pattern in _FIELDS.items():
        m = re.search(pattern, text, flags=re.MULTILINE)
        if m:
            found[key] = float(m.group(1))
    missing = [k for k in _REQUIRED if k not in found]
    if missing:
        raise ReadSpeedError(f"rootreadspeed output lacks {', '.join(missing)} (not a finished run?)")
    m = re.search(r"^Reading data is (.*)$", text, flags=re.MULTILINE)
    if not m or m.group(1).strip() not in VERDICTS:
        raise ReadSpeedError("rootreadspeed output has no known 'Reading data is …' verdict line")
    return ReadSpeed(
        threads=int(found["threads"]),
        real_s=found["real_s"],
        cpu_s=found["cpu_s"],
        uncompressed_bytes=int(found["uncompressed_bytes"]),
        compressed_bytes=int(found["compressed_bytes"]),
        cpu_efficiency_percent=found["cpu_efficiency_percent"],
        verdict=VERDICTS[m.group(1).strip()],
        setup_real_s=found.get("setup_real_s"),
    )


def command(
    files: Sequence[str],
    tree: str,
    branches: Sequence[str],
    threads: int = 1,
    exe: str = "rootreadspeed",
    extra_trees: Sequence[str] = (),
) -> list[str]:
    """The command line: FILES, one TREE for all (or, with EXTRA_TREES, the i-th tree for the i-th
    file: a file given once per tree), the BRANCHES; THREADS 0 = the sequential path."""
    if not files or not branches:
        raise ValueError("rootreadspeed needs at least one file and one branch")
    if extra_trees and len(extra_trees) + 1 != len(files):
        raise ValueError("rootreadspeed needs one tree, or one tree per file")
    cmd = [exe, "--files", *files, "--trees", tree, *extra_trees, "--branches", *branches]
    return [*cmd, "--threads", str(threads)] if threads > 0 else cmd


def run(
    files: Sequence[str],
    tree: str,
    branches: Sequence[str],
    threads: int = 1,
    exe: str = "rootreadspeed",
    env: Mapping[str, str] | None = None,
    extra_trees: Sequence[str] = (),
) -> tuple[ReadSpeed, str]:
    """Run rootreadspeed in a scratch working directory (with the ``.rootrc`` that forces root://
    URLs through XRootD when there are any); (result, standard output). ReadSpeedError on failure,
    naming rootreadspeed's own message."""
    # ROOT's form of a URL; a path made absolute: it runs in a scratch cwd
    files = [for_root(f) if is_xrootd_url(f) else os.path.abspath(f) for f in files]
    cmd = command(files, tree, branches, threads, exe, extra_trees)
    with tempfile.TemporaryDirectory(prefix="afkit-readspeed-") as cwd:
        if any(is_xrootd_url(f) for f in files):
            Path(cwd, ".rootrc").write_text(FORCE_REMOTE_RC)
        try:
            proc = subprocess.run(
                cmd, cwd=cwd, env=dict(env) if env is not None else dict(os.environ),
                capture_output=True, text=True, check=False,
            )  # fmt: skip
        except FileNotFoundError as err:
            raise ReadSpeedError(f"'{exe}' not found: ROOT >= 6.28 provides it ({err})") from err
    if proc.returncode != 0:
        tail = (proc.stderr.strip() or proc.stdout.strip()).splitlines()[-3:]
        raise ReadSpeedError(f"rootreadspeed exited {proc.returncode}: {' | '.join(tail)}")
    return parse(proc.stdout), proc.stdout


ENTRIES_MACRO = (
    "{{ Long64_t n = 0; for (auto name : {{{names}}}) {{ auto f = TFile::Open(name); "
    'n += f->Get<TTree>("{tree}")->GetEntries(); delete f; }} printf("afkit-entries %lld\\n", n); }}'
)


def entries(files: Sequence[str], tree: str, root_exe: str = "root.exe") -> int:
    """The TREE's entries summed over FILES, counted by the same ROOT (one untimed ``root.exe`` run):
    rootreadspeed does not print them."""
    code = ENTRIES_MACRO.format(names=", ".join(f'"{f}"' for f in files), tree=tree)
    try:
        proc = subprocess.run(
            [root_exe, "-b", "-q", "-l", "-e", code], capture_output=True, text=True, check=False
        )
    except FileNotFoundError as err:
        raise ReadSpeedError(f"'{root_exe}' not found: the image's ROOT must be on PATH ({err})") from err
    m = re.search(r"^afkit-entries (\d+)$", proc.stdout, flags=re.MULTILINE)
    if not m:
        why = (proc.stderr.strip() or proc.stdout.strip())[-300:]
        raise ReadSpeedError(f"cannot count the entries of tree '{tree}' with {root_exe}: {why}")
    return int(m.group(1))


def payload(spec: Mapping[str, Any], inputs: Sequence[str]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The campaign's ``payload: rootreadspeed``: one rootreadspeed run (one thread) over INPUTS, the
    job's tree and branches. (interval records, summary): one interval (rootreadspeed prints no
    time series) and bytes (compressed, as read), events, and its figures under ``readspeed``."""
    tree = str(spec["tree"])
    if any(c in tree for c in "*?["):
        raise ReadSpeedError(f"payload rootreadspeed reads one tree by name, not the pattern '{tree}'")
    if not spec.get("branches"):
        raise ReadSpeedError("payload rootreadspeed needs the dataset's branches (datasets.NAME.branches)")
    n = entries(inputs, tree)
    start = time.time()
    result, _ = run(list(inputs), tree, list(spec["branches"]), threads=1)
    end = time.time()
    interval = {"type": "interval", "t": end - result.real_s, "bytes": result.compressed_bytes}
    summary = {"bytes": result.compressed_bytes, "events": n, "readspeed": result.record(n), "start": start}
    return [interval], summary
