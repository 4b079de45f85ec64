"""The processing step of a campaign job: N clients of afkit's benchmark engine read the inputs.

Three payloads (docs/campaigns.md, "What a job does"):

- ``builtin``: N client threads of the job's own process (afkit.bench.multi.run_threads), released
  together; every client reads every input, in rotated order so that N clients work with fewer
  files. Read jobs: afkit.bench.readbench over and over for ``duration``; train and steps jobs:
  once; analysis jobs: afkit.bench.analysis over every branch.
- ``afkit-bench``: ``python -m afkit bench read|multi|analysis|multi-analysis``: N client
  processes that split the files and stop at the end of their data (docs/benchmarks.md).
- ``root`` (analysis jobs): as ``builtin``, but each client thread runs the image's own ROOT on
  afkit's reader macro (afkit.bench.rootread); the job adds ROOT's read counts.

What the step measures are the payload's metrics, each declared once as a field of the job record
(afkit.campaign.contract.JobRecord: its type, unit, the payloads that produce it and its source in
the payload's summary); :func:`measured` takes them from the summaries, summing counts over a
builtin or root payload's clients, and :func:`process` gives them as part of the payload's result
(afkit.campaign.contract.PayloadResult).

Either way the clients' interval records are summed and become the job's ``intervals``
(afkit.campaign.jobrecord): ``time`` is the end of an interval, ``t`` that time since the start of
processing. The clients' ``gap`` records (a read that failed, the reconnect that followed and
whether it came back: afkit.bench.readbench) become the job's ``gaps``. A processing step that
fails raises ProcessingFailed, which carries the intervals and gaps seen until then: a failed
job's record shows where its read stopped. Standard library only: uproot (analysis) and the
XRootD bindings (``root://``) are imported when a client needs them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, cast

from afkit.bench.intervals import IntervalRecord, Record, sum_series
from afkit.bench.multi import client_path, run_threads
from afkit.bench.offsets import BlockPlan, parse_stride
from afkit.bench.readbench import ReadConfig
from afkit.bench.records import read_jsonl
from afkit.bench.units import parse_rate, parse_size
from afkit.campaign.contract import INT, METRICS, STR, PayloadResult
from afkit.errors import AfkitError, ended

if TYPE_CHECKING:
    from afkit.bench.analysis import AnalysisConfig
    from afkit.bench.rootread import RootReadConfig
    from afkit.campaign.contract import PayloadSpec

Interval = dict[str, float]  # {t, time, bytes} (afkit.campaign.contract.INTERVAL_KEYS)


def _at(summary: Mapping[str, object], source: str) -> object:
    """The value at SOURCE ("a.b": key b of the object under key a) of SUMMARY; None when absent."""
    value: object = summary
    for key in source.split("."):
        value = value.get(key) if isinstance(value, dict) else None
    return value


def measured(payload: str, summaries: Sequence[Mapping[str, object]]) -> dict[str, object]:
    """The metrics PAYLOAD produces (afkit.campaign.contract.METRICS: each declared once, with its
    source), from its summaries: a builtin or root payload's clients' (counts summed over the
    clients), else its one summary. A metric the summaries lack is its declared ``missing`` value,
    or left out."""
    out: dict[str, object] = {}
    for metric in METRICS:
        if not metric.made_by(payload):
            continue
        values = [v for v in (_at(s, metric.source) for s in summaries) if v is not None]
        if not values:
            if metric.missing is not None:
                out[metric.name] = metric.missing
        elif metric.types == INT:
            out[metric.name] = sum(int(cast(int, v)) for v in values)
        else:
            out[metric.name] = str(values[0]) if metric.types == STR else values[0]
    return out


def client_config(
    spec: PayloadSpec, urls: list[str], width: float
) -> ReadConfig | AnalysisConfig | RootReadConfig:
    """What one builtin (or root) client does with URLS (SPEC: the job's payload spec, afkit.campaign.job)."""
    job = spec.job
    if job.payload == "root":
        from afkit.bench.rootread import RootReadConfig

        opts = spec.root
        return RootReadConfig(files=urls, branches=list(job.branches), tree=spec.tree, reader=opts.reader,
                              work=opts.work, cache_mb=opts.cache_mb, interval=width)  # fmt: skip
    if job.type == "analysis":
        from afkit.bench.analysis import AnalysisConfig

        return AnalysisConfig(files=urls, branches=[], tree=spec.tree, library="np", interval=width)
    plan = BlockPlan(block=parse_size(job.block_size, what="block size"), stride=parse_stride(job.stride))
    loop = job.type == "read"
    duration = float(job.duration) if loop else None
    rate = parse_rate(job.demand) if job.demand else None
    return ReadConfig(urls=urls, plan=plan, duration=duration, repeat=loop, interval=width, rate=rate)


def builtin(
    spec: PayloadSpec, inputs: list[str], out_dir: Path, width: float
) -> tuple[list[IntervalRecord], list[Mapping[str, object]]]:
    """(summed interval records, the clients' summaries) of the builtin payload's client threads
    (the root payload's: their summaries are afkit.bench.rootread's)."""
    n = spec.job.clients
    configs = [
        client_config(spec, inputs[k % len(inputs) :] + inputs[: k % len(inputs)], width) for k in range(n)
    ]
    summaries = run_threads(configs, out_dir)
    series = sum_series((read_jsonl(client_path(out_dir, k)) for k in range(n)), width)
    return series, [cast("Mapping[str, object]", s) for s in summaries]


def afkit_bench_command(spec: PayloadSpec, inputs: list[str], out_dir: Path) -> tuple[list[str], Path]:
    """(command, JSON-lines file with the interval records and the summary) of `afkit bench`."""
    bench = [sys.executable, "-m", "afkit", "bench"]
    job = spec.job
    n = job.clients
    if job.type == "analysis":
        kind = ["analysis"] if n == 1 else ["multi-analysis", "-n", str(n)]
        opts = [a for b in job.branches for a in ("-b", b)] + ["-t", spec.tree]
    else:
        kind = ["read"] if n == 1 else ["multi", "-n", str(n)]
        opts = ["--block", job.block_size, "--stride", job.stride]
        opts += ["--duration", str(job.duration)] if job.type == "read" else []
    if n == 1:
        return [
            *bench,
            *kind,
            *opts,
            "-o",
            str(out_dir / "bench.jsonl"),
            "--no-monitor",
            *inputs,
        ], out_dir / "bench.jsonl"
    return [*bench, *kind, "--outdir", str(out_dir), "--no-monitor", *opts, *inputs], out_dir / "sum.jsonl"


class ProcessingFailed(RuntimeError):
    """The processing step failed; the intervals and gaps recorded before it did (None: unknown)."""

    def __init__(
        self,
        message: str,
        intervals: list[Interval] | None = None,
        gaps: list[dict[str, object]] | None = None,
    ) -> None:
        super().__init__(message)
        self.intervals, self.gaps = intervals, gaps


def gap_records(out_dir: Path) -> list[Record]:
    """The clients' gap records in OUT_DIR's JSON-lines files (each once), oldest first:
    {t (wall clock of the failure), seconds, url, recovered}."""
    seen: dict[tuple[object, object], Record] = {}
    for path in sorted(out_dir.glob("*.jsonl")):
        for rec in read_jsonl(path):
            if rec.get("type") == "gap":
                seen.setdefault((rec.get("t"), rec.get("url")), {k: v for k, v in rec.items() if k != "type"})
    return sorted(seen.values(), key=lambda g: float(g.get("t", 0)))


def afkit_bench(spec: PayloadSpec, inputs: list[str], out_dir: Path) -> tuple[list[Record], Record]:
    """(interval records, summary) of `afkit bench` run as a command by the image's Python."""
    cmd, out = afkit_bench_command(spec, inputs, out_dir)
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    records = read_jsonl(out) if out.is_file() else []
    summary = next((r for r in reversed(records) if r.get("type") == "summary"), {})
    if proc.returncode != 0 or summary.get("status", "ok") != "ok":
        cause = summary.get("error") or " | ".join(proc.stderr.strip().splitlines()[-3:]) or "no message"
        raise RuntimeError(f"afkit bench {ended(proc.returncode)}: {cause}")
    return records, summary


def job_intervals(
    records: list[IntervalRecord] | list[Record], width: float, start: float, end: float
) -> list[Interval]:
    """The job record's intervals from interval records of WIDTH seconds (processing START..END)."""
    out = []
    for rec in records:
        if rec.get("type") == "interval":
            until = min(float(rec["t"]) + width, end)
            out.append({"t": round(until - start, 3), "time": round(until, 6), "bytes": int(rec["bytes"])})
    return out


def failed_at(message: str, out_dir: Path, width: float, start: float) -> ProcessingFailed:
    """The failure with what the step leaves: the interval records its clients wrote (the first
    client's, or the files' sum for several) and their gaps; none when they cannot be read
    (a client killed in the middle of a line)."""
    try:
        series = [read_jsonl(p) for p in sorted(out_dir.glob("*.jsonl")) if p.name != "sum.jsonl"]
        gaps = gap_records(out_dir)
    except (OSError, ValueError, AfkitError):  # read_jsonl: InvalidError on a torn line
        return ProcessingFailed(message)
    records = sum_series(series, width) if len(series) > 1 else (series[0] if series else [])
    return ProcessingFailed(message, job_intervals(records, width, start, time.time()), gaps or None)


def process(spec: PayloadSpec, inputs: list[str], out_dir: Path) -> PayloadResult:
    """The processing step: what it measured (the payload's metrics, afkit.campaign.contract.METRICS,
    with its intervals and gaps) as the part of the payload's result it gives."""
    os.makedirs(out_dir, exist_ok=True)
    start = time.time()
    payload = spec.job.payload
    width = 1.0 if payload == "afkit-bench" else spec.job.interval
    records: list[IntervalRecord] | list[Record]
    summaries: list[Mapping[str, object]]
    try:
        if payload == "afkit-bench":
            records, summary = afkit_bench(spec, inputs, out_dir)
            summaries = [summary]
        elif payload == "rootreadspeed":  # the anchor of analysis benchmarks
            from afkit.bench import readspeed

            records, summary = readspeed.payload(
                {"tree": spec.tree, "branches": list(spec.job.branches)}, inputs
            )
            summaries = [summary]
        else:
            records, summaries = builtin(spec, inputs, out_dir, width)
    except Exception as err:
        raise failed_at(str(err), out_dir, width, start) from err
    intervals = job_intervals(records, width, start, time.time())
    values = measured(payload, summaries)
    values.setdefault("bytes", sum(int(i["bytes"]) for i in intervals))  # a summary without bytes
    return PayloadResult(intervals=intervals, gaps=gap_records(out_dir) or None).updated(values)
