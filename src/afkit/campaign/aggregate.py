"""Per-job JSON records → tidy CSV tables carrying provenance.

``jobs.csv``: one row per job (its sweep parameters, step durations, bytes, events, rates, status,
campaign hash, image digest, tag and signer fingerprint, site, host, bottleneck verdict and its
reason). ``intervals.csv``: one row per per-interval sample (bytes read in that interval) for
time series. Records of different images are refused unless explicitly allowed: results are never
mixed silently. Which records are the campaign's current ones (made from the job's spec as planned
now) is afkit.campaign.current's to say; every row carries the hash of the campaign the tables
were made for.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TypedDict

from afkit.atomic import write_atomic
from afkit.campaign import jobrecord
from afkit.campaign.contract import Cell, Job, JobRecord
from afkit.campaign.rows import JobRow
from afkit.errors import InvalidError

Row = dict[str, Cell]  # one row of jobs.csv or intervals.csv as written (read back: afkit.campaign.rows)

JOB_COLUMNS = jobrecord.COLUMNS  # derived from the job-record contract (afkit.campaign.jobrecord)
INTERVAL_COLUMNS = jobrecord.INTERVAL_COLUMNS
STEPS = jobrecord.STEPS
# the jobs of a wave are released together: goal for the spread of their start times (issue 10)
SKEW_GOAL_S = 2.0


def load_records(paths: Iterable[Path]) -> list[JobRecord]:
    """The job records at PATHS, each checked against the job-record contract (an error names the
    job and the file)."""
    return [JobRecord.read(Path(p)) for p in paths]


def check_not_mixed(records: Sequence[JobRecord]) -> None:
    for key, what in (("image_sha256", "images"),):
        values = sorted({str(getattr(r, key) or "") for r in records})
        if len(values) > 1:
            raise InvalidError(
                f"job records from different {what} ({key}: {', '.join(values)}) would be mixed",
                hint="rerun the campaign's jobs with one image (afkit campaign run), or pass --allow-mixed "
                "to compare on purpose",
            )


def _cell(value: object) -> Cell:
    return value if isinstance(value, str | int | float) else "" if value is None else str(value)


def job_row(rec: JobRecord) -> Row:
    """REC's row of jobs.csv: its column fields and the derived ones."""
    row: Row = {c: _cell(getattr(rec, c)) for c in JOB_COLUMNS}
    steps = rec.steps or {}
    for s in STEPS:
        row[f"{s}_s"] = round(float(steps[s]), 4) if s in steps else ""
    if rec.start and rec.end:
        row["wall_s"] = round(rec.end - rec.start, 4)
    proc = steps.get("processing")
    if rec.status == "ok" and proc:
        row["throughput_MBps"] = round(float(rec.bytes or 0) / proc / 1e6, 4)
        row["events_per_s"] = round(float(rec.events or 0) / proc, 3)
    row["error"] = str(rec.error or "").replace("\n", " ")
    return row


def interval_rows(rec: JobRecord) -> list[Row]:
    base = {c: _cell(getattr(rec, c)) for c in INTERVAL_COLUMNS if c not in jobrecord.INTERVAL_KEYS}
    return [
        {**base, "time": s.get("time", ""), "t": s["t"], "bytes": s["bytes"]} for s in rec.intervals or []
    ]


def missing_records(expected: Sequence[Job], records: Sequence[JobRecord]) -> list[JobRecord]:
    """Expected jobs that have no record: rows with status 'missing'."""
    have = {(r.bench, r.id) for r in records}
    out = []
    for job in expected:
        if (job.bench, job.id) not in have:
            rec = JobRecord.planned(job)
            rec.status, rec.error = "missing", "no job record (job not run, killed, or still running)"
            out.append(rec)
    return out


def write_csv(path: Path, columns: list[str], rows: Iterable[Mapping[str, object]]) -> None:
    """A CSV table (header COLUMNS; keys of a row beyond them are left out), written atomically."""
    text = io.StringIO()
    w = csv.DictWriter(text, fieldnames=columns, extrasaction="ignore")
    w.writeheader()
    w.writerows(rows)
    write_atomic(path, text.getvalue(), mode=0o644)


def aggregate(
    records: Sequence[JobRecord],
    jobs_csv: Path,
    intervals_csv: Path,
    *,
    expected: Sequence[Job] | None = None,
    allow_mixed: bool = False,
    campaign_hash: str = "",
) -> list[Row]:
    """Write the two tables; return the job rows (with 'missing' rows for expected jobs lacking a
    record). CAMPAIGN_HASH: the campaign version whose current records RECORDS are (every row's
    ``campaign_hash``; without it, the records' own)."""
    if not allow_mixed:
        check_not_mixed(records)
    all_records = [*records, *(missing_records(expected, records) if expected else [])]
    stamp: Row = {"campaign_hash": campaign_hash} if campaign_hash else {}
    rows = [{**job_row(r), **stamp} for r in all_records]
    rows.sort(key=lambda r: (str(r["bench"]), str(r["id"])))
    write_csv(jobs_csv, JOB_COLUMNS, rows)
    write_csv(intervals_csv, INTERVAL_COLUMNS, ({**i, **stamp} for r in records for i in interval_rows(r)))
    return rows


class WaveSkew(TypedDict):
    bench: str
    wave: str
    site: str
    dataset: str
    wave_size: int
    started: int
    skew_s: float
    within_goal: bool


def wave_skews(rows: Iterable[JobRow]) -> list[WaveSkew]:
    """Start skew of each wave of two or more jobs: max(start) - min(start) over its jobs that
    started (failed ones too: they were launched), with ``within_goal`` (<= SKEW_GOAL_S).

    ``start`` is when the job wrapper launched the payload on the worker (afkit.campaign.job), so
    the skew covers the batch system's and the executor's release of the wave, not the payload's
    own set-up."""
    waves: dict[tuple[str, str], list[tuple[float, JobRow]]] = {}
    for r in rows:
        if r.wave and r.wave_size > 1 and r.start is not None:
            waves.setdefault((r.bench, r.wave), []).append((r.start, r))
    out = []
    for (bench, wave), started in sorted(waves.items()):
        starts = [start for start, _ in started]
        first = started[0][1]
        skew = round(max(starts) - min(starts), 3)
        out.append(
            WaveSkew(
                bench=bench,
                wave=wave,
                site=first.site,
                dataset=first.dataset,
                wave_size=first.wave_size,
                started=len(started),
                skew_s=skew,
                within_goal=skew <= SKEW_GOAL_S,
            )
        )
    return out


def read_csv(path: Path) -> list[dict[str, str]]:
    """A CSV table's rows as text (the typed rows of jobs.csv: afkit.campaign.rows.read_jobs)."""
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))
