"""The coordinated-caches study (kit-htda) judged on recorded-shaped data: points and job walltimes
as afkit.study.htda writes them, including data where each claim must fail; its sites file; its
page; the box's links."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from afkit.errors import InvalidError, UsageError
from afkit.study import host, htda, kit, model, serve
from afkit.study.criteria import Verdict
from afkit.study.recipe import Facility

STUDY = model.load("kit-htda")
CLIENTS = [1, 2, 3, 4, 6, 8, 12, 16]
D = 0.5  # MB/s per process


def _points(source: str, link: float, background: int = 0, kind: str = "network") -> list[dict[str, object]]:
    """A source's sweep as a link of LINK MB/s (0: no limit) shares itself among its readers."""
    out: list[dict[str, object]] = []
    for n in CLIENTS:
        readers = n + background
        total = min(readers * D, link) if link else readers * D
        local = total * n / readers
        out.append({"type": "point", "source": source, "kind": kind, "rep": 0, "clients": n,
                    "background": background, "readers": readers, "demand_MBps": D, "rate_MBps": local,
                    "total_MBps": total, "share": local / (n * D), "link_MBps": link})  # fmt: skip
    return out


def recorded(tmp_path: Path, *, slow: float = 2.0, fast: float = 20.0, background: int = 32,
             disabled: float = 16.0, enabled: float = 8.0) -> Path:  # fmt: skip
    """RESULTS with data/ as a box run leaves it."""
    data = tmp_path / "results" / "data"
    data.mkdir(parents=True)
    points = [*_points("slow", slow), *_points("fast", fast, background), *_points("ssd", 0.0, kind="local")]
    (data / "points.jsonl").write_text("".join(json.dumps(p) + "\n" for p in points))
    pairs = (("disabled", disabled), ("enabled", enabled))
    jobs = [{"type": "job", "cache": c, "rep": r, "job": j, "walltime_s": t + 0.1 * j}
            for r in range(3) for c, t in pairs for j in range(8)]  # fmt: skip
    (data / "jobs.jsonl").write_text("".join(json.dumps(j) + "\n" for j in jobs))
    (data / "setup.json").write_text(json.dumps({"demand_MBps": D, "kernel": "6.18"}))
    return tmp_path / "results"


def judged(results: Path) -> dict[str, Verdict]:
    return kit.judge(STUDY, kit.load(results / "data"))


def test_a_box_shaped_run_passes_every_claim_it_can_judge(tmp_path: Path) -> None:
    v = judged(recorded(tmp_path))
    assert {k: x.status for k, x in v.items()} == {
        "network-plateau": "pass", "starved-cpu-falls": "pass", "fast-stall-10x": "pass",
        "ssd-cpu-high": "pass", "raid-stall": "not judgeable", "cache-speedup": "pass",
    }  # fmt: skip
    assert v["network-plateau"].values["of_link"] == pytest.approx(1.0)
    assert v["fast-stall-10x"].values["ratio"] == pytest.approx(10.0)
    assert "one virtio disk" in v["raid-stall"].measured


def test_a_plateau_far_below_the_link_fails(tmp_path: Path) -> None:
    results = recorded(tmp_path)
    points = kit.load(results / "data").points
    for p in points:  # the link said 2 MB/s; the readers got at most 0.75 (a server that is the limit)
        if p["source"] == "slow":
            p["rate_MBps"] = min(float(str(p["rate_MBps"])), 0.75)
    (results / "data" / "points.jsonl").write_text("".join(json.dumps(p) + "\n" for p in points))
    v = judged(results)["network-plateau"]
    assert v.status == "fail" and "38% of the 2 MB/s link" in v.measured


def test_a_rate_that_never_bends_fails_the_plateau_and_the_starving(tmp_path: Path) -> None:
    v = judged(recorded(tmp_path, slow=100.0))
    assert v["network-plateau"].status == "fail"
    assert v["starved-cpu-falls"].status == "fail" and "1.00 x" in v["starved-cpu-falls"].measured


def test_a_fast_link_that_never_stalls_is_not_judgeable_saying_so(tmp_path: Path) -> None:
    v = judged(recorded(tmp_path, background=8))["fast-stall-10x"]
    assert v.status == "not judgeable"
    assert "the fast link never held its readers back" in v.measured


def test_a_fast_link_only_twice_the_slow_fails_the_tenfold_stall(tmp_path: Path) -> None:
    v = judged(recorded(tmp_path, fast=4.0, background=8))["fast-stall-10x"]
    assert v.status == "fail" and v.values["ratio"] == pytest.approx(2.0)


def test_a_starved_local_disk_fails_the_ssd_claim(tmp_path: Path) -> None:
    results = recorded(tmp_path)
    data = results / "data"
    points = [p for p in kit.load(data).points if p["source"] != "ssd"] + _points("ssd", 3.0, kind="local")
    (data / "points.jsonl").write_text("".join(json.dumps(p) + "\n" for p in points))
    v = judged(results)["ssd-cpu-high"]
    assert v.status == "fail" and "share 0.38 with 16 processes" in v.measured


def test_a_cache_that_does_not_shorten_the_jobs_fails(tmp_path: Path) -> None:
    v = judged(recorded(tmp_path, disabled=8.0, enabled=8.0))["cache-speedup"]
    assert v.status == "fail" and v.values["ratio"] == pytest.approx(1.0)


def test_without_the_workflow_the_speedup_is_not_judgeable(tmp_path: Path) -> None:
    results = recorded(tmp_path)
    (results / "data" / "jobs.jsonl").unlink()
    v = judged(results)["cache-speedup"]
    assert v.status == "not judgeable" and "not run with and without the cache" in v.measured


def test_the_page_shows_every_claim_the_numbers_and_both_figures(tmp_path: Path) -> None:
    results = recorded(tmp_path)
    fac = host.facility(STUDY, None, None)
    page = host.make_page(STUDY, fac, results)
    html = page.read_text()
    assert html.count("class='pass'") == 5
    assert "about 100 MB/s of 1 Gbit/s" in html and "100% of its link" in html
    for name in ("fig1.png", "fig6.png"):
        assert (page.parent / name).stat().st_size > 1000, name
    assert "file servers behind shaped links afkit makes" in fac.where


def test_a_sites_file_names_the_nodes_sources(tmp_path: Path) -> None:
    sites = tmp_path / "node.yaml"
    sites.write_text(
        "params:\n  sources:\n    fileserver: {url: 'root://fs.example:1094//data/bench/',"
        " path: /mnt/fs/bench, link_mbit: 1000, background: 4}\n"
        "    ssd: {dir: /scratch/bench}\n  clients: [1, 2]\n"
    )
    fac = host.facility(STUDY, sites, None)
    got = htda._given_sources(fac)
    assert [(s.name, s.kind, s.prefix, s.link_mbit, s.background) for s in got] == [
        ("fileserver", "network", "root://fs.example:1094//data/bench/", 1000.0, 4),
        ("ssd", "local", "/scratch/bench", 0.0, 0),
    ]


def test_a_source_without_a_url_and_path_or_a_dir_is_refused(tmp_path: Path) -> None:
    params = {**STUDY.params, "sources": {"fs": {"url": "x"}}}
    fac = Facility(image={}, sites={}, storage={}, roles={}, params=params, where="x")
    with pytest.raises(UsageError, match=r"params\.sources\.fs: give url and path"):
        htda._given_sources(fac)


@pytest.mark.parametrize(
    ("clients", "says"), [([], "params.clients"), ([0, 2], "params.clients"), ("4", "params.clients")]
)
def test_a_sweep_that_is_not_whole_numbers_is_refused(clients: object, says: str) -> None:
    fac = Facility(
        image={}, sites={}, storage={}, roles={}, params={**STUDY.params, "clients": clients}, where="x"
    )
    with pytest.raises(UsageError, match=says):
        htda._clients(fac)


def test_the_box_links_are_the_studys_own_addresses() -> None:
    assert serve.addresses(1) == ("10.78.1.1", "10.78.1.2")
    assert serve.addresses(250) == ("10.78.250.1", "10.78.250.2")
    with pytest.raises(ValueError, match="not in 1-250"):
        serve.addresses(0)


def test_the_tbf_command_shapes_both_ends_at_the_rate_with_a_burst_of_10_ms() -> None:
    assert serve.tbf(16_000_000, "afk1h") == ["tc", "qdisc", "replace", "dev", "afk1h", "root", "tbf",
                                              "rate", "16000000bit", "burst", "65536", "latency",
                                              "100ms"]  # fmt: skip
    assert serve.tbf(800_000_000, "afk1s", "ns")[1:3] == ["-n", "ns"]
    assert "1000000" in serve.tbf(800_000_000, "afk1s", "ns")


def test_every_host_study_has_its_measurements_evaluation_and_figures() -> None:
    for name in model.names():
        study = model.load(name)
        if study.runner == "host":
            assert name in host.MODULES, name
            for which in range(3):
                assert host._module(study, which) is not None


def test_a_host_study_afkit_cannot_measure_is_refused() -> None:
    import dataclasses

    other = dataclasses.replace(STUDY, name="elsewhere")
    with pytest.raises(InvalidError, match="afkit has no measurements for it"):
        host._module(other, 0)


def test_a_sites_file_without_sources_is_refused_before_anything_is_made(tmp_path: Path) -> None:
    sites = tmp_path / "node.yaml"
    sites.write_text("params:\n  clients: [1, 2]\n")
    fac = host.facility(STUDY, sites, None)
    with pytest.raises(UsageError, match=r"params\.sources names no data source"):
        htda.run(STUDY, fac, tmp_path / "results" / "data", None, tmp_path / "work")
    assert not (tmp_path / "results").exists() and not (tmp_path / "work").exists()


def test_a_nodes_own_source_names_are_judged_by_their_links(tmp_path: Path) -> None:
    """At a user's node: the slowest network source is the claims' slow one, the fastest their fast
    one, whatever their names."""
    results = recorded(tmp_path)
    data = results / "data"
    names = {"slow": "fileserver-1g", "fast": "fileserver-10g"}
    points = kit.load(data).points
    for p in points:
        p["source"] = names.get(str(p["source"]), p["source"])
    (data / "points.jsonl").write_text("".join(json.dumps(p) + "\n" for p in points))
    v = judged(results)
    assert v["network-plateau"].status == "pass" and "of the 2 MB/s link" in v["network-plateau"].measured
    assert v["fast-stall-10x"].status == "pass" and "fileserver-1g: 4" in v["fast-stall-10x"].measured
