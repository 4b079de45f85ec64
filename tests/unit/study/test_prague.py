"""The disk-server study (prague-diskserver) judged on recorded-shaped data: runs and read traces as
afkit.study.diskserver writes them, including data where each claim must fail; its sites file; its
page."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from afkit.errors import InvalidError
from afkit.study import criteria, host, machine, model, prague

STUDY = model.load("prague-diskserver")


def _runs(default: list[float], tuned: list[float], tuned_ra: int = 1024) -> list[dict[str, object]]:
    runs: list[dict[str, object]] = []
    for rep, (d, t) in enumerate(zip(default, tuned, strict=True)):
        runs.append({"type": "run", "rep": rep, "setting": "default", "seconds": d, "read_ahead_kb": 128,
                     "scheduler": "bfq", "asked": {"read_ahead_kb": 128, "scheduler": "bfq"}})  # fmt: skip
        runs.append({"type": "run", "rep": rep, "setting": "tuned", "seconds": t, "read_ahead_kb": tuned_ra,
                     "scheduler": "none", "asked": {"read_ahead_kb": 1024, "scheduler": "none"}})  # fmt: skip
    return runs


def _trace(path: Path, reads: list[tuple[float, int, int]]) -> None:
    path.write_text("".join(json.dumps({"time": t, "offset": o, "length": n}) + "\n" for t, o, n in reads))


def recorded(tmp_path: Path, *, tuned: list[float], small: bool = True, tuned_ra: int = 1024) -> Path:
    """RESULTS with data/ as a run leaves it: three pairs of runs, a 64 MB file's two traces (the
    uncached one's reads in two bands at any time: the entries' baskets and the small branches'
    region at 30 MB)."""
    data = tmp_path / "results" / "data"
    data.mkdir(parents=True)
    (data / "runs.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in _runs([10.0, 10.3, 9.9], tuned, tuned_ra))
    )
    size = 64_000_000
    nocache = []
    for i in range(1000):
        t = 100.0 + i * 0.002
        main = int(i / 1000 * 60_000_000)
        nocache.append((t, main, 150 if small and i % 3 else 20_000))
        if i % 10 == 0:
            nocache.append((t + 0.001, 30_000_000 + i * 100, 200))
    _trace(data / "pattern-nocache.jsonl", nocache)
    _trace(data / "pattern-cache.jsonl", [(100.0 + i * 0.01, i * 200_000, 160_000) for i in range(300)])
    (data / "pattern.json").write_text(json.dumps({"file": "esd-000.root", "size": size}))
    setup = {"device": {"loop": "loop0"}, "kernel": "6.18",
             "offered": ["none", "mq-deadline", "kyber", "bfq"],
             "settings": {"default": {"asked_scheduler": "kernel"},
                          "tuned": {"asked_scheduler": "none"}}}  # fmt: skip
    (data / "setup.json").write_text(json.dumps(setup))
    return tmp_path / "results"


def test_a_recorded_run_passes_every_claim(tmp_path: Path) -> None:
    m = prague.load(recorded(tmp_path, tuned=[7.8, 7.9, 7.5]) / "data")
    v = prague.judge(STUDY, m)
    assert {k: x.status for k, x in v.items()} == {
        "tuned-reads-faster": criteria.PASS,
        "small-reads": criteria.PASS,
        "few-regions": criteria.PASS,
        "cache-fewer-reads": criteria.PASS,
    }
    assert v["tuned-reads-faster"].values["cut"] == pytest.approx(1 - 7.8 / 10.0)
    assert v["few-regions"].values["median_bands"] == 2


def test_tuning_that_does_not_help_fails_and_big_reads_fail(tmp_path: Path) -> None:
    m = prague.load(recorded(tmp_path, tuned=[10.1, 10.0, 10.2], small=False) / "data")
    v = prague.judge(STUDY, m)
    assert v["tuned-reads-faster"].status == criteria.FAIL
    assert v["small-reads"].status == criteria.FAIL


def test_a_setting_the_device_did_not_take_is_not_judgeable_and_shows_the_measurement(tmp_path: Path) -> None:
    m = prague.load(recorded(tmp_path, tuned=[7.8, 7.9, 7.5], tuned_ra=128) / "data")
    v = prague.judge(STUDY, m)["tuned-reads-faster"]
    assert v.status == criteria.NOT_JUDGEABLE
    assert "read_ahead_kb 128 (asked 1024)" in v.measured and "Measured: median" in v.measured


def test_without_a_trace_the_pattern_claims_are_not_judgeable_saying_why(tmp_path: Path) -> None:
    results = recorded(tmp_path, tuned=[7.8, 7.9, 7.5])
    for name in ("pattern-nocache.jsonl", "pattern-cache.jsonl"):
        (results / "data" / name).unlink()
    v = prague.judge(STUDY, prague.load(results / "data"))
    for claim in ("small-reads", "few-regions", "cache-fewer-reads"):
        assert v[claim].status == criteria.NOT_JUDGEABLE and "--image" in v[claim].measured
    assert v["tuned-reads-faster"].status == criteria.PASS


def test_the_originals_table2_passes_its_own_criterion() -> None:
    cuts = prague.original_cuts(STUDY)
    assert [round(c, 3) for c in cuts] == [0.211, 0.219, 0.274, 0.231, 0.231]


def test_the_page_shows_every_claim_the_numbers_and_the_figures(tmp_path: Path) -> None:
    results = recorded(tmp_path, tuned=[7.8, 7.9, 7.5])
    fac = host.facility(STUDY, None, tmp_path / "none.sif")
    page = host.make_page(STUDY, fac, results)
    html = page.read_text()
    assert html.count("class='pass'") == 4
    assert "21.1%-27.4%" in html and "22.0% (median)" in html
    assert "128 KiB, cfq -&gt; 1024 KiB, noop" in html  # the original's settings beside the run's
    assert "128 KiB, bfq -&gt; 1024 KiB, none (the default scheduler: the kernel&#x27;s own" in html
    assert "offered: none, mq-deadline, kyber, bfq" in html
    for name in ("table2.png", "fig10-nocache.png", "fig11-nocache.png", "fig12-nocache.png"):
        assert (page.parent / name).stat().st_size > 1000, name
    verdicts = json.loads((page.parent / "verdicts.json").read_text())
    assert verdicts["study"] == "prague-diskserver" and verdicts["provenance"]["kernel"] == "6.18"


def test_a_sites_file_gives_the_servers_directory_and_image(tmp_path: Path) -> None:
    sites = tmp_path / "server.yaml"
    sites.write_text("params:\n  data_dir: /data/xrootd\n  files: 16\nimage:\n  sif: /images/tag.sif\n")
    fac = host.facility(STUDY, sites, None)
    assert fac.params["data_dir"] == "/data/xrootd" and fac.params["files"] == 16
    assert fac.params["file_mb"] == STUDY.params["file_mb"] and fac.image == {"sif": "/images/tag.sif"}
    assert not fac.scaled


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("sites: {}\n", "unknown keys sites"),
        ("params:\n  stripe: 4\n", "params.stripe: study prague-diskserver has no such parameter"),
    ],
)
def test_a_sites_file_with_what_the_study_lacks_is_refused(tmp_path: Path, text: str, says: str) -> None:
    sites = tmp_path / "server.yaml"
    sites.write_text(text)
    with pytest.raises(InvalidError, match=says):
        host.facility(STUDY, sites, None)


def test_a_study_file_with_an_unknown_runner_is_refused() -> None:
    raw = {"name": "x", "title": "x", "source": {}, "original": {}, "roles": {}, "params": {}, "box": {},
           "recipe": {}, "claims": [], "runner": "cluster"}  # fmt: skip
    with pytest.raises(InvalidError, match="runner must be one of campaign, host"):
        model.parse(raw, "x.yaml")


def test_the_run_as_another_user_than_root_is_exit_3_before_anything_is_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from afkit.errors import ExitCode, PrereqError
    from afkit.study import diskserver

    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    fac = host.facility(STUDY, None, None)
    with pytest.raises(PrereqError, match="runs as root on the disk server") as err:
        diskserver.run(STUDY, fac, tmp_path / "results" / "data", None, tmp_path / "work")
    assert err.value.code == ExitCode.PREREQ
    assert not (tmp_path / "results").exists() and not (tmp_path / "work").exists()


def test_a_page_held_a_moment_after_a_read_is_dropped_on_a_retry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from afkit.study import diskserver

    left = iter([8192, 4096, 0])  # a socket buffer lets go of the last pages on the third try
    monkeypatch.setattr(diskserver.blockdev, "resident_bytes", lambda _f: next(left))
    monkeypatch.setattr(diskserver, "DROP_CACHES", tmp_path / "drop_caches")
    (tmp_path / "f").write_bytes(b"x")
    assert diskserver._dropped([tmp_path / "f"]) == 0
    assert not (tmp_path / "drop_caches").exists()  # the whole page cache was left alone


def test_pages_that_stay_cached_drop_the_whole_page_cache_and_what_is_left_is_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from afkit.study import diskserver

    monkeypatch.setattr(diskserver.blockdev, "resident_bytes", lambda _f: 4096)
    monkeypatch.setattr(diskserver, "DROP_CACHES", tmp_path / "drop_caches")
    (tmp_path / "f").write_bytes(b"x")
    assert diskserver._dropped([tmp_path / "f"], within=0.2) == 4096
    assert (tmp_path / "drop_caches").read_text() == "1\n"
    assert "4096 bytes of the files stayed cached" in capsys.readouterr().err


def _queue(tmp_path: Path, offered: str) -> Path:
    """A block queue's sysfs files as a kernel prints them (OFFERED: its scheduler line)."""
    q = tmp_path / "loop7" / "queue"
    q.mkdir(parents=True)
    (q / "read_ahead_kb").write_text("128\n")
    (q / "scheduler").write_text(offered + "\n")
    return q


NO_BFQ = "none [mq-deadline] kyber"  # a kernel built without CONFIG_IOSCHED_BFQ (6.18 seen here)


@pytest.mark.parametrize(
    ("offered", "default"), [(NO_BFQ, "mq-deadline"), ("[none] mq-deadline bfq", "none")]
)
def test_the_default_setting_is_the_scheduler_the_kernel_gave_the_device(
    tmp_path: Path, offered: str, default: str
) -> None:
    from afkit.bench import blockdev
    from afkit.study import diskserver

    q = _queue(tmp_path, offered)
    got = diskserver.settings(host.facility(STUDY, None, None), q, blockdev.read(q))
    assert got == {
        "default": blockdev.QueueSettings(128, default),
        "tuned": blockdev.QueueSettings(1024, "none"),
    }


def test_a_scheduler_the_kernel_lacks_is_exit_3_before_anything_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """bfq hidden from the study through the scheduler list it reads: refused with the kernel's list,
    before a file is generated or a record written."""
    import contextlib

    from afkit.errors import ExitCode, PrereqError
    from afkit.study import diskserver

    q = _queue(tmp_path, NO_BFQ)
    data = tmp_path / "device"
    data.mkdir()

    @contextlib.contextmanager
    def device(*_a: object) -> object:
        yield data, {"kind": "loop"}

    def no_work(*argv: str) -> str:
        raise AssertionError(f"afkit {' '.join(argv)} ran")

    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(diskserver, "_device", device)
    monkeypatch.setattr(diskserver.blockdev, "queue_dir", lambda _p: q)
    monkeypatch.setattr(diskserver.serve, "afkit", no_work)
    fac = host.facility(STUDY, None, None)
    fac.params["default_scheduler"] = "bfq"
    out = tmp_path / "results" / "data"
    with pytest.raises(PrereqError, match="'bfq' \\(default_scheduler\\) is not offered") as err:
        diskserver.run(STUDY, fac, out, None, tmp_path / "work")
    assert err.value.code == ExitCode.PREREQ
    assert "none, mq-deadline, kyber" in str(err.value.hint)
    assert list(data.iterdir()) == [] and not list(out.iterdir())
    assert (q / "scheduler").read_text() == NO_BFQ + "\n"  # the device untouched


def test_a_host_studys_page_and_verdicts_show_the_machine(tmp_path: Path) -> None:
    results = recorded(tmp_path, tuned=[7.8, 7.9, 7.5])
    with machine.watch(results / "data" / machine.NAME, tmp_path, every=60):
        pass
    page = host.make_page(STUDY, host.facility(STUDY, None, tmp_path / "none.sif"), results)
    verdicts = json.loads((page.parent / "verdicts.json").read_text())
    assert verdicts["machine"]["cores"] == os.cpu_count() and verdicts["machine"]["run"] == "ended"
    assert f"{os.cpu_count()} cores" in page.read_text() and "load during the run" in page.read_text()


def _fake_measure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, then: type[BaseException] | None
) -> None:
    """host.run's measurements replaced: two runs' records written, then THEN raised (None: ended)."""
    from types import SimpleNamespace

    def measure(_study: object, _fac: object, out: Path, _image: object) -> None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _runs([9.0], [7.0])))
        (out / "setup.json").write_text(json.dumps({"image": "alice-root.sif", "kernel": "6.18"}))
        if then is not None:
            raise then

    real = host._module
    monkeypatch.setattr(host, "_module", lambda s, i: SimpleNamespace(run=measure) if i == 0 else real(s, i))
    monkeypatch.chdir(tmp_path)


def test_an_interrupted_rerun_keeps_the_finished_runs_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "made").mkdir()
    finished = recorded(tmp_path / "made", tuned=[7.8, 7.9, 7.5])  # made/results/data
    moved = tmp_path / "results" / f"study-{STUDY.name}-v1"
    moved.parent.mkdir()
    finished.rename(moved)
    before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in (moved / "data").iterdir()}
    _fake_measure(tmp_path, monkeypatch, then=KeyboardInterrupt)
    fac = host.facility(STUDY, None, tmp_path / "none.sif")
    assert host.run(STUDY, fac, tmp_path / "studies") == 130
    after = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in (moved / "data").iterdir()}
    assert after == before  # content and mtime
    assert (moved / host.PARTIAL / "runs.jsonl").is_file()  # the interrupted run's, beside them
    verdicts = host.make_page(STUDY, fac, moved).with_name("verdicts.json").read_text()
    assert "interrupted" not in verdicts  # the page is the finished run's


def test_a_run_that_ends_replaces_the_earlier_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    results = tmp_path / "results" / f"study-{STUDY.name}-v1"
    (results / "data").mkdir(parents=True)
    (results / "data" / "old-only.json").write_text("{}")
    _fake_measure(tmp_path, monkeypatch, then=None)
    assert host.run(STUDY, host.facility(STUDY, None, tmp_path / "none.sif"), tmp_path / "studies") == 0
    assert sorted(p.name for p in (results / "data").iterdir()) == [
        "machine.json",
        "runs.jsonl",
        "setup.json",
    ]
    assert not (results / host.PARTIAL).exists() and not (results / "data.previous").exists()


def test_the_page_of_an_interrupted_first_run_judges_its_complete_pairs_and_names_the_interrupt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_measure(tmp_path, monkeypatch, then=KeyboardInterrupt)
    fac = host.facility(STUDY, None, tmp_path / "none.sif")
    assert host.run(STUDY, fac, tmp_path / "studies") == 130
    results = tmp_path / "results" / f"study-{STUDY.name}-v1"
    with (results / host.PARTIAL / "runs.jsonl").open("a") as fh:  # a third repetition cut off halfway
        fh.write(json.dumps({**_runs([30.0], [1.0])[0], "rep": 2}) + "\n")
    claims = {c["id"]: c for c in json.loads(
        host.make_page(STUDY, fac, results).with_name("verdicts.json").read_text())["claims"]}  # fmt: skip
    assert claims["tuned-reads-faster"]["status"] == "pass"
    assert claims["tuned-reads-faster"]["values"]["cut"] == pytest.approx(1 - 7.0 / 9.0)  # rep 2 left out
    for claim in ("small-reads", "few-regions", "cache-fewer-reads"):
        assert claims[claim]["status"] == "not judgeable"
        assert claims[claim]["measured"].startswith("the run was interrupted")
        assert "the run ended before it" in claims[claim]["measured"]
        assert "no image" not in claims[claim]["measured"]
