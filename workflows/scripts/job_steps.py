#!/usr/bin/env python3
"""The job payload, run *inside* the Apptainer image: time each step of a job, HammerCloud-style.

Steps: ``setup`` (container start + software environment: the imports the payload needs),
``stage_in`` (copy mode: inputs copied to the job's scratch; 0 in direct mode), ``processing``
(reading or analysing the inputs with N clients) and ``stage_out`` (the job's output written back).
Prints one JSON object (the step record) on stdout. Standard library + XRootD/uproot from the image.

Usage: job_steps.py SPEC.json   (the spec is written by afkit.campaign.job on the worker node)
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from typing import Any

UNITS = {"": 1, "k": 1024, "m": 1024 * 1024}
# An unreachable endpoint must fail the job in seconds, not hang it for minutes in connection
# retries (XrdCl's defaults: 5 retries x 120 s). Values from the job's environment (XRD_*, passed
# through by the wrapper) win.
XRD_DEFAULTS = {"XRD_CONNECTIONRETRY": "1", "XRD_CONNECTIONWINDOW": "15", "XRD_REQUESTTIMEOUT": "120"}
# written into images built from a CVMFS tag by `afkit image build` (tag, environment, ...)
IMAGE_INFO = "/.afkit/image.json"


def size(text: str) -> int:
    text = str(text).strip().lower()
    unit = text[-1] if text and text[-1] in "km" else ""
    return int(text[: len(text) - len(unit)] or 0) * UNITS[unit]


def one_line(message: str, limit: int = 300) -> str:
    """The root cause for the job record (jobs.csv): the message's first line, and the file it
    names when that is on the next line (uproot: 'file not found' / 'path')."""
    lines = [ln.strip() for ln in message.strip().splitlines() if ln.strip()]
    if not lines:
        return message.strip()
    out = lines[0]
    if len(lines) > 1 and (lines[1].startswith(("in file", "'", '"'))):
        out += " " + lines[1]
    return out if len(out) <= limit else out[: limit - 3] + "..."


def is_remote(url: str) -> bool:
    return "://" in url


class Counter:
    """Bytes read so far, sampled every ``interval`` seconds into per-interval records."""

    def __init__(self, interval: float) -> None:
        self.total = 0
        self.lock = threading.Lock()
        self.interval = interval
        self.samples: list[dict[str, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.t0 = time.time()
        self.external = False  # samples supplied by an external payload (afkit bench)

    def add(self, n: int) -> None:
        with self.lock:
            self.total += n

    def _run(self) -> None:
        last = 0
        while not self._stop.wait(self.interval):
            if self.external:
                continue
            self._sample(last)
            last = self.samples[-1]["total"]

    def _sample(self, last: int) -> None:
        now = time.time()
        with self.lock:
            total = self.total
        self.samples.append(
            {"t": round(now - self.t0, 3), "time": now, "bytes": total - last, "total": total}
        )

    def start(self) -> None:
        self.t0 = time.time()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        if self.external:
            return
        last = self.samples[-1]["total"] if self.samples else 0
        if self.total != last or not self.samples:
            self._sample(int(last))


def open_reader(url: str) -> tuple[Any, Any]:
    """(read(offset, length) -> bytes, close()) for a local path or an XRootD URL."""
    if is_remote(url):
        from XRootD import client  # type: ignore[import-not-found]

        fh = client.File()
        status, _ = fh.open(url, timeout=60)
        if not status.ok:
            raise OSError(f"cannot open {url}: {status.message.strip()}")

        def read(off: int, n: int) -> bytes:
            st, data = fh.read(off, n, timeout=60)
            if not st.ok:
                raise OSError(f"read of {url} failed: {st.message.strip()}")
            return data or b""

        return read, fh.close
    f = open(url, "rb")  # noqa: SIM115

    def read_local(off: int, n: int) -> bytes:
        f.seek(off)
        return f.read(n)

    return read_local, f.close


def read_file(url: str, block: int, stride: int, counter: Counter, deadline: float | None) -> None:
    read, close = open_reader(url)
    try:
        off = 0
        while True:
            data = read(off, block)
            if not data:
                return
            counter.add(len(data))
            off += len(data) + stride
            if deadline is not None and time.time() >= deadline:
                return
    finally:
        close()


def process_read(spec: dict[str, Any], inputs: list[str], counter: Counter) -> dict[str, Any]:
    block, stride = size(spec["block_size"]), size(spec["stride"])
    loop = spec["type"] == "read"
    deadline = time.time() + float(spec["duration"]) if loop else None

    def client(k: int) -> None:
        order = inputs[k % len(inputs) :] + inputs[: k % len(inputs)]
        while True:
            for url in order:
                read_file(url, block, stride, counter, deadline)
                if deadline is not None and time.time() >= deadline:
                    return
            if not loop:
                return

    with ThreadPoolExecutor(max_workers=spec["clients"]) as pool:
        for fut in [pool.submit(client, k) for k in range(spec["clients"])]:
            fut.result()
    return {"events": 0}


def process_analysis(spec: dict[str, Any], inputs: list[str], counter: Counter) -> dict[str, Any]:
    import uproot  # type: ignore[import-not-found]

    events = 0
    lock = threading.Lock()

    def client(_k: int) -> None:
        nonlocal events
        for url in inputs:
            # root:// through the XRootD bindings (uproot's default, fsspec-xrootd, is not needed)
            opts = {"handler": uproot.source.xrootd.XRootDSource} if is_remote(url) else {}
            with uproot.open(url, **opts) as f:
                tree = f[spec["tree"]]
                tree.arrays(library="np")  # read and decompress every branch
                n = tree.num_entries
                counter.add(int(tree.compressed_bytes))
            with lock:
                events += int(n)

    with ThreadPoolExecutor(max_workers=spec["clients"]) as pool:
        for fut in [pool.submit(client, k) for k in range(spec["clients"])]:
            fut.result()
    return {"events": events}


def afkit_bench_command(spec: dict[str, Any], inputs: list[str], out_dir: str) -> tuple[list[str], str]:
    """(command, JSON-lines file with the interval records and the summary) of `afkit bench`."""
    bench = [sys.executable, "-m", "afkit", "bench"]
    n = int(spec["clients"])
    if spec["type"] == "analysis":
        opts = [a for b in spec["branches"] for a in ("-b", b)] + ["-t", spec["tree"]]
        if n == 1:
            out = os.path.join(out_dir, "bench.jsonl")
            return [*bench, "analysis", *opts, "-o", out, "--no-monitor", *inputs], out
        return [
            *bench,
            "multi-analysis",
            "-n",
            str(n),
            "--outdir",
            out_dir,
            "--no-monitor",
            *opts,
            *inputs,
        ], (os.path.join(out_dir, "sum.jsonl"))
    opts = ["--block", str(spec["block_size"]), "--stride", str(spec["stride"])]
    if spec["type"] == "read":
        opts += ["--duration", str(spec["duration"])]
    if n == 1:
        out = os.path.join(out_dir, "bench.jsonl")
        return [*bench, "read", *opts, "-o", out, "--no-monitor", *inputs], out
    return [*bench, "multi", "-n", str(n), "--outdir", out_dir, "--no-monitor", *opts, *inputs], os.path.join(
        out_dir, "sum.jsonl"
    )


def ended(returncode: int) -> str:
    """How a program ended, for a one-line error: "exited 1", "was killed by SIGSEGV"."""
    if returncode < 0:
        try:
            return f"was killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"was killed by signal {-returncode}"
    return f"exited {returncode}"


def process_afkit_bench(spec: dict[str, Any], inputs: list[str], counter: Counter) -> dict[str, Any]:
    """Processing by the image's `afkit bench` (docs/benchmarks.md): its per-second interval records
    become the job's intervals, its summary the job's bytes and events."""
    counter.external = True
    out_dir = os.path.join(spec["scratch"], "bench")
    os.makedirs(out_dir, exist_ok=True)
    cmd, out = afkit_bench_command(spec, inputs, out_dir)
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    records = []
    if os.path.exists(out):
        with open(out, encoding="utf-8") as fh:
            records = [json.loads(line) for line in fh if line.strip()]
    summary = next((r for r in reversed(records) if r.get("type") == "summary"), {})
    if proc.returncode != 0 or summary.get("status", "ok") != "ok":
        cause = summary.get("error") or " | ".join(proc.stderr.strip().splitlines()[-3:]) or "no message"
        raise RuntimeError(f"afkit bench {ended(proc.returncode)}: {cause}")
    intervals = [r for r in records if r.get("type") == "interval"]
    t0 = intervals[0]["t"] if intervals else time.time()
    counter.samples = [
        {"t": float(r["t"] - t0), "time": float(r["t"]), "bytes": int(r["bytes"])} for r in intervals
    ]
    counter.total = int(summary.get("bytes", sum(s["bytes"] for s in counter.samples)))
    return {"events": int(summary.get("events", 0)), "afkit_bench": summary.get("kind", "")}


def stage_in(spec: dict[str, Any]) -> tuple[list[str], int]:
    if spec["access"] != "copy":
        return list(spec["urls"]), 0
    dest_dir = os.path.join(spec["scratch"], "input")
    os.makedirs(dest_dir, exist_ok=True)
    local, total = [], 0
    for i, url in enumerate(spec["urls"]):
        dest = os.path.join(dest_dir, f"{i:04d}-{os.path.basename(url.rstrip('/'))}")
        if is_remote(url):
            from XRootD import client  # type: ignore[import-not-found]

            proc = client.CopyProcess()
            proc.add_job(url, dest, force=True)
            st = proc.prepare()
            if st.ok:
                st, results = proc.run()
                if st.ok and results and not results[0]["status"].ok:
                    st = results[0]["status"]
            if not st.ok:
                raise OSError(f"stage-in of {url} failed: {st.message.strip()}")
        else:
            shutil.copyfile(url, dest)
        total += os.path.getsize(dest)
        local.append(dest)
    return local, total


def stage_out(spec: dict[str, Any], result: dict[str, Any]) -> int:
    src = os.path.join(spec["scratch"], "output.json")
    with open(src, "w", encoding="utf-8") as fh:
        json.dump(result, fh)
    dest = spec["stage_out"]
    tmp = dest + ".part"
    shutil.copyfile(src, tmp)
    os.replace(tmp, dest)
    return os.path.getsize(dest)


def software_env(info_path: str = IMAGE_INFO) -> dict[str, Any]:
    """The tag environment of an image built by `afkit image build`, as the job sees it: the tag,
    how many of its variables there are, those the job's environment lacks (or has with another
    value) and the values of the profile's required ones. Empty for other images."""
    try:
        with open(info_path, encoding="utf-8") as fh:
            info = json.load(fh)
    except (OSError, ValueError):
        return {}
    env = info.get("env", [])
    missing = []
    for var in env:
        have, want = os.environ.get(var["name"]), str(var["value"])
        # as `afkit image validate`: Apptainer may append to path lists (LD_LIBRARY_PATH)
        if have is None or not (have == want or have.startswith(want if var.get("inherit") else want + ":")):
            missing.append(var["name"])
    return {
        "tag": info.get("tag", ""),
        "vars": len(env),
        "missing": missing,
        "required": {name: os.environ.get(name) for name in info.get("required", [])},
    }


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[1] in ("-h", "--help"):
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as fh:
        spec = json.load(fh)
    steps: dict[str, float] = {}
    rec: dict[str, Any] = {"host": os.uname().nodename, "container_start": time.time()}
    software = software_env()  # before the job's own settings change the environment
    if software:
        rec["software_env"] = software
    for key, value in {**XRD_DEFAULTS, **spec.get("env", {})}.items():
        os.environ[key] = str(value)
    try:
        if spec["type"] == "analysis":
            import uproot  # type: ignore[import-not-found] # noqa: F401
        if any(is_remote(u) for u in spec["urls"]):
            from XRootD import client  # type: ignore[import-not-found] # noqa: F401
        t = time.time()
        steps["setup"] = t - float(spec["t_launch"])
        inputs, staged = stage_in(spec)
        steps["stage_in"] = time.time() - t
        counter = Counter(float(spec["interval"]))
        counter.start()
        t = time.time()
        try:
            if spec.get("payload") == "afkit-bench":
                out = process_afkit_bench(spec, inputs, counter)
            elif spec["type"] == "analysis":
                out = process_analysis(spec, inputs, counter)
            else:
                out = process_read(spec, inputs, counter)
        finally:
            counter.stop()
        steps["processing"] = time.time() - t
        rec.update(out)
        rec.update(
            {
                "bytes": counter.total,
                "bytes_staged": staged,
                "intervals": counter.samples,
                "processing_start": t,
            }
        )
        t = time.time()
        rec["bytes_out"] = stage_out(spec, {"bytes": counter.total, "events": rec["events"]})
        steps["stage_out"] = time.time() - t
        rec["status"] = "ok"
    except Exception as err:  # the record carries the failure; the wrapper decides what it means
        traceback.print_exc(file=sys.stderr)  # the whole story goes to the job's log
        rec["status"] = "failed"
        rec["error"] = one_line(f"{type(err).__name__}: {err}")
    rec["steps"] = steps
    print(json.dumps(rec))
    return 0 if rec["status"] == "ok" else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
