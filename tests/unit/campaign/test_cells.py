"""One definition of a cell (afkit.campaign.cells), used by every table and figure: the schema's
sweep keys are cell keys; no series or row of the report's builders ever combines two values of a
cell key (a property test over synthetic tables); the newcomer's stride sweep (issue 31)."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path
from statistics import mean

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from afkit.campaign import cells, compare, figures, payload_table, report, scaling
from afkit.campaign.rows import IntervalRow, JobRow
from afkit.paths import workflow_files

# the schema's sweep keys as jobs.csv names them (jobs: a train's concurrent jobs, nodes: an
# analysis' nodes, both the wave's size); repetitions are a cell's samples, not a key
SWEEP_COLUMN = {"jobs": "wave_size", "nodes": "wave_size", "repetitions": None}


def test_every_sweep_key_of_the_schema_is_a_cell_key() -> None:
    schema = yaml.safe_load(workflow_files().schema.read_text(encoding="utf-8"))
    sweep = schema["properties"]["benchmarks"]["items"]["properties"]["sweep"]["properties"]
    columns = {SWEEP_COLUMN.get(k, k) for k in sweep} - {None}
    assert columns <= set(cells.NAMES), columns - set(cells.NAMES)


def test_a_benchmarks_fixed_parameters_in_jobs_csv_are_cell_keys() -> None:
    # what the plan sets per benchmark (afkit.campaign.plan.expand) and jobs.csv carries
    assert {"bench", "site", "dataset", "demand", "payload", "duration", "interval"} <= set(cells.NAMES)


def test_sizes_are_named_and_ordered_by_their_bytes() -> None:
    assert [cells.size_text(v) for v in ("8M", "64k", "0", "10MB", "random", "")] == [
        "8 MiB", "64 KiB", "0", "10 MB", "random", ""]  # fmt: skip
    stride = cells.BY_NAME["stride"]
    assert sorted(["8M", "random", "512k", "0"], key=stride.sort_key) == ["0", "512k", "8M", "random"]


# ------------------------------------------------------------------ the newcomer's stride sweep


def _stride_sweep() -> tuple[list[JobRow], list[IntervalRow]]:
    """frankfurt, one read benchmark swept over stride 0 and 8M, one repetition each: the jobs
    measured 7,331 and 11,097 MB/s (issue 31)."""
    rows, intervals = [], []
    for i, (stride, mbps) in enumerate((("0", 7331.0), ("8M", 11097.0))):
        rows.append(JobRow(campaign="c", bench="read", type="read", id=f"j{i}", site="frankfurt",
                           dataset="ao2d", scenario="origin", access="direct", clients=1, block_size="8M",
                           stride=stride,
                           repetition=0, duration=10.0, interval=1.0, url="root://se:1094//f", status="ok",
                           start=100.0, end=111.0, processing_start=100.5, processing_s=10.0,
                           bytes=int(mbps * 1e7), throughput_MBps=mbps))  # fmt: skip
        intervals += [IntervalRow(f"j{i}", t, mbps * 1e6, 100.5 + t) for t in (1.0, 2.0, 3.0)]
    return rows, intervals


def test_the_stride_sweep_has_one_cells_row_per_stride() -> None:
    rows, _ = _stride_sweep()
    table = report.cell_table(rows)
    assert [(c["keys"]["stride"], c["mbps"], c["repetitions"]) for c in table] == [  # type: ignore[index]
        ("0", "7331.00", "1"), ("8 MiB", "11097.00", "1")]  # fmt: skip
    assert "block size" not in table[0]["keys"]  # type: ignore[operator]  # the same in both: no column


def test_the_stride_sweep_has_one_series_per_stride_at_its_own_value() -> None:
    rows, intervals = _stride_sweep()
    lines = figures.client_lines(rows, "read")
    assert sorted(pts[1][0] for pts in lines.values()) == [7331.0, 11097.0]  # not 18,428: no sum
    fig = figures.vs_clients_figure(rows, "read")
    assert fig is not None
    drawn = {str(ln.get_label()): list(ln.get_ydata()) for ln in fig.axes[0].get_lines()}  # type: ignore[arg-type]
    assert drawn == {"frankfurt <- se:1094: origin direct stride 0": [7331.0],
                     "frankfurt <- se:1094: origin direct stride 8 MiB": [11097.0]}  # fmt: skip
    fig = figures.rate_vs_time_figure(rows, intervals)
    assert fig is not None
    assert fig.axes[0].get_legend_handles_labels()[1] == [
        "frankfurt <- se:1094: origin direct 1cl stride 0",
        "frankfurt <- se:1094: origin direct 1cl stride 8 MiB",
    ]
    assert sorted(max(pts.values()) for pts in figures.rate_series(rows, intervals).values()) == [
        pytest.approx(7331 * 8e-3),
        pytest.approx(11097 * 8e-3),
    ]  # Gbit/s of each job, never their sum


def test_the_report_of_the_stride_sweep_has_a_stride_column(tmp_path: Path) -> None:
    rows, intervals = _stride_sweep()
    html = report.render(rows, intervals, tmp_path / "r").read_text()
    cells_table = html.split("<h2>Cells</h2>", 1)[1].split("</table>", 1)[0]
    assert "<th>stride</th>" in cells_table
    row = r"<td>8 MiB</td><td>1</td><td>1</td>\s*<td class=\"ok\">ok</td><td>11097.00</td>"
    assert re.search(row, cells_table)


def test_compare_names_the_stride_that_tells_two_cells_apart() -> None:
    rows, _ = _stride_sweep()
    assert [c.label for c in compare.compare(rows, rows)] == [
        "read frankfurt ao2d origin direct 1cl stride 0",
        "read frankfurt ao2d origin direct 1cl stride 8 MiB",
    ]


# ------------------------------------------------------------ the report's image (issue 31)


def test_the_header_names_the_campaigns_image_not_a_workers_copy(tmp_path: Path) -> None:
    ref = "oras://registry:5000/afkit/o2:v1"
    rows = [JobRow(id="a", status="ok", image_ref=ref, image_sha256="ab" * 32,
                   image_path="/res/image/image.sif"),
            JobRow(id="b", status="ok", image_ref=ref, image_sha256="ab" * 32,
                   image_path="/var/lib/condor/execute/dir_7/afkit-job-x/image.sif")]  # fmt: skip
    assert report.image(rows) == {"ref": ref, "sha256": "ab" * 32, "tag": ""}
    html = report.render(rows, [], tmp_path / "r").read_text()
    assert f"<tr><th>image</th><td><code>{ref}</code></td></tr>" in html
    assert "dir_7" not in html.split("<h2>Cells</h2>", 1)[0]


def test_a_table_from_before_image_ref_does_not_pass_off_one_jobs_copy() -> None:
    rows = [JobRow(id="a", image_path="/res/image.sif"), JobRow(id="b", image_path="/sandbox/image.sif")]
    assert report.image(rows)["ref"].startswith("(not recorded")
    assert report.image(rows[:1])["ref"] == "/res/image.sif"


# ------------------------------------------------------------------------------ property test

KINDS = {"rd": "read", "ana": "analysis", "tr": "train"}


@st.composite
def job_tables(draw: st.DrawFn) -> tuple[list[JobRow], list[IntervalRow]]:
    """A synthetic jobs.csv and intervals.csv: jobs drawn from small pools of every key, so that
    cells repeat, differ in one key and mix kinds; read jobs get interval samples."""
    n = draw(st.integers(1, 24))
    rows: list[JobRow] = []
    intervals: list[IntervalRow] = []
    for i in range(n):
        bench = draw(st.sampled_from(sorted(KINDS)))
        kind = KINDS[bench]
        start = draw(st.sampled_from([0.0, 5.0, 50.0]))
        proc = draw(st.sampled_from([1.0, 2.0, 4.0]))
        row = JobRow(
            bench=bench, type=kind, id=f"j{i}", site=draw(st.sampled_from(["frankfurt", "alpes"])),
            dataset=draw(st.sampled_from(["ao2d", "blobs"])),
            scenario=draw(st.sampled_from(["origin", "xcache"])),
            access=draw(st.sampled_from(["direct", "copy"])), clients=draw(st.sampled_from([1, 2, 4])),
            block_size=draw(st.sampled_from(["1M", "8M"])),
            stride=draw(st.sampled_from(["0", "8M", "random"])),
            wave_size=1 if kind == "read" else draw(st.sampled_from([1, 2])),
            repetition=draw(st.sampled_from([0, 1])), payload=draw(st.sampled_from(["", "builtin", "root"])),
            duration=draw(st.sampled_from([2.0, 10.0])), interval=1.0,
            demand=draw(st.sampled_from(["", "2MB/s"])),
            url=draw(st.sampled_from(["root://se1:1094//f", "root://se2:1094//f", "/mnt/f"])),
            status=draw(st.sampled_from(["ok", "ok", "failed"])), start=start, end=start + proc + 1,
            processing_start=start + 0.5, processing_s=proc, bytes=1000,
            throughput_MBps=float(draw(st.integers(1, 10_000))), events_per_s=float(draw(st.integers(0, 99))),
        )  # fmt: skip
        rows.append(row)
        if kind == "read" and row.status == "ok":
            for t in (1.0, 2.0):
                intervals.append(IntervalRow(row.id, t, float(draw(st.integers(0, 10**9))), start + 0.5 + t))
    return rows, intervals


def _ok(rows: list[JobRow], kind: str | None = None) -> list[JobRow]:
    return [r for r in rows if r.status == "ok" and (kind is None or r.type == kind)]


def _per_repetition_sums(rows: list[JobRow], attr: str) -> dict[tuple[str, cells.Cell], float]:
    """The reference: per (source, cell), the mean over repetitions of the sum over that
    repetition's jobs (those that ran together at the sweep point)."""
    sums: dict[tuple[str, cells.Cell], dict[object, float]] = defaultdict(lambda: defaultdict(float))
    for r in rows:
        sums[(figures.source(r), cells.cell_of(r))][r.repetition] += getattr(r, attr) or 0.0
    return {k: mean(v.values()) for k, v in sums.items()}


PROPERTY = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(job_tables())
def test_a_cells_row_is_exactly_one_cell(tables: tuple[list[JobRow], list[IntervalRow]]) -> None:
    rows, _ = tables
    table = report.cell_table(rows)
    by_cell: dict[cells.Cell, list[JobRow]] = defaultdict(list)
    for r in rows:
        by_cell[cells.cell_of(r)].append(r)
    got = {tuple(c[k] for k in cells.NAMES): c for c in table}
    assert set(got) == set(by_cell) and len(table) == len(by_cell)
    for cell, rs in by_cell.items():
        ok = _ok(rs)
        assert got[cell]["mbps"] == (f"{mean(r.throughput_MBps or 0.0 for r in ok):.2f}" if ok else "")
    shown = {k.label for k in cells.varying(by_cell)}
    assert shown <= set(table[0]["keys"])  # type: ignore[call-overload]  # every differing key is a column


@PROPERTY
@given(job_tables())
def test_a_clients_line_point_is_one_cell(tables: tuple[list[JobRow], list[IntervalRow]]) -> None:
    rows, _ = tables
    for kind in ("read", "analysis"):
        got = {}
        for (src, part), pts in figures.client_lines(rows, kind).items():
            named = cells.named(part, figures.CLIENT_KEYS)
            for clients, (mbps, _) in pts.items():
                got[(src, tuple({**named, "clients": clients}[k] for k in cells.NAMES))] = mbps
        want = _per_repetition_sums(_ok(rows, kind), "throughput_MBps")
        assert got == pytest.approx(want)


@PROPERTY
@given(job_tables())
def test_a_time_series_is_one_cell(tables: tuple[list[JobRow], list[IntervalRow]]) -> None:
    rows, intervals = tables
    series = figures.rate_series(rows, intervals)
    ok = _ok(rows, "read")
    sampled = {s.id for s in intervals}
    assert set(series) == {(figures.source(r), cells.cell_of(r)) for r in ok if r.id in sampled}
    # each point: the mean over repetitions of the sum of the jobs that ran together (aligned on
    # the wall clock from the first one's processing start), in Gbit/s
    jobs = {r.id: r for r in ok}
    first: dict[tuple[tuple[str, cells.Cell], object], float] = {}
    for r in ok:
        wave = ((figures.source(r), cells.cell_of(r)), r.repetition)
        first[wave] = min(first.get(wave, float("inf")), r.processing_start or 0.0)
    sums: dict[tuple[str, cells.Cell], dict[object, dict[float, float]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(float)))  # fmt: skip
    for s in intervals:
        r = jobs[s.id]
        key = (figures.source(r), cells.cell_of(r))
        t = float(round((s.time or 0.0) - first[(key, r.repetition)]))
        sums[key][r.repetition][t] += s.bytes * 8 / 1e9
    for key, pts in series.items():
        for t, v in pts.items():
            assert v == pytest.approx(mean(w[t] for w in sums[key].values() if t in w))


@PROPERTY
@given(job_tables(), st.sampled_from(scaling.GROUPINGS))
def test_a_scaling_series_never_merges_two_values_of_a_key(
    tables: tuple[list[JobRow], list[IntervalRow]], grouping: str
) -> None:
    rows, intervals = tables
    points = scaling.scaling_series(rows, intervals, grouping=grouping)
    train = _ok(rows, "train")
    # a point is one wave size and repetition of one series; a series its head (grouping all and
    # server merge sites and datasets, on purpose) and every other cell key: one key each
    waves = {(scaling.series_key(r, grouping), cells.cell_of(r, scaling.REST), r.wave_size, r.repetition)
             for r in train}  # fmt: skip
    assert len(points) == len(waves)
    assert len({p.key for p in points}) == len({(head, rest) for head, rest, _, _ in waves})


@PROPERTY
@given(job_tables())
def test_a_step_row_and_a_payload_line_are_one_cell(tables: tuple[list[JobRow], list[IntervalRow]]) -> None:
    from afkit.campaign.scaling import server_of

    rows, _ = tables
    steps = figures.step_ranges(rows)
    assert len(steps) == len({(cells.cell_of(r), server_of(r.url)) for r in _ok(rows)})
    assert sum(int(str(s["jobs"])) for s in steps) == len(_ok(rows))
    lines = payload_table.section(rows)
    one = [r for r in _ok(rows, "analysis") if r.clients == 1]
    places: dict[cells.Cell, set[tuple[str, str]]] = defaultdict(set)
    for r in one:
        places[cells.cell_of(r, payload_table.PLACE)].add((str(cells.BY_NAME["payload"].of(r)), r.bench))
    want = sum(len(v) for v in places.values() if len({p for p, _ in v}) > 1)
    assert len(lines) == want


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(job_tables())
def test_figure_series_labels_name_what_differs(tables: tuple[list[JobRow], list[IntervalRow]]) -> None:
    """Two series of one figure never share a label: the label names every key that differs."""
    rows, intervals = tables
    made = [figures.rate_vs_time_figure(rows, intervals), figures.vs_clients_figure(rows, "read"),
            figures.vs_clients_figure(rows, "analysis")]  # fmt: skip
    for fig in made:
        if fig is not None:
            labels = [str(ln.get_label()) for ln in fig.axes[0].get_lines()]
            assert len(labels) == len(set(labels)), labels
