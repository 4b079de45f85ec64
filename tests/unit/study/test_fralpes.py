"""fr-alpes: the step tables from job rows, the claims judged on them (passing and failing), the
original's tables judged by the same rules, the figures and page drawn, and the box's campaign."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from afkit.campaign import config, plan
from afkit.campaign.rows import JobRow
from afkit.errors import InvalidError
from afkit.study import analyses, fralpes, fralpes_figures, model, page, recipe

SITES = ("gsi", "frankfurt", "alpes")
DATASET = {"sim": "small", "reco": "large"}


@pytest.fixture
def study() -> model.Study:
    return model.load("fr-alpes")


def job(bench: str, wn: str, ds: str, access: str, rep: int, stage_in: float, proc: float,
        *, wave: int = 1) -> JobRow:  # fmt: skip
    table = bench.removesuffix("-busy")
    return JobRow(bench=bench, type="train" if wave > 1 else "steps", id=f"{bench}.{wn}.{ds}.{access}.r{rep}",
                  site=wn, dataset=f"{DATASET[table]}-{ds}", scenario="origin", access=access, clients=1,
                  wave_size=wave, repetition=rep, status="ok", processing_s=proc,
                  stage_in_s=stage_in if access == "copy" else 0.0)  # fmt: skip


def table_rows(bench: str, *, copy: float, proc: float, direct: float, busy: float,
               wn_spread: float, loc_shift: float) -> list[JobRow]:  # fmt: skip
    """A table's jobs: every (WN site, dataset site) pair, both access modes, two repetitions, and a
    busy wave of 4 copies per pair. A duration is its base, + WN_SPREAD x (the WN site's index / 2)
    (worker nodes differ) + LOC_SHIFT x the dataset site's index (locations differ)."""
    rows = []
    for w, wn in enumerate(SITES):
        for d, ds in enumerate(SITES):
            f = 1 + wn_spread * w / 2
            shift = loc_shift * d
            for rep in (0, 1):
                noise = 0.01 * rep
                rows.append(
                    job(bench, wn, ds, "copy", rep, copy * f + shift + noise, proc * f + shift + noise)
                )
                rows.append(job(bench, wn, ds, "direct", rep, 0.0, direct * f + shift + noise))
            rows += [job(f"{bench}-busy", wn, ds, "copy", 0, busy * f + shift + 0.01 * i, proc * f, wave=4)
                     for i in range(4)]  # fmt: skip
    return rows


def box_rows(**reco: float) -> list[JobRow]:
    """The box's expected shape: small copies overhead-bound (busy barely slower), large copies
    bandwidth-bound (4 at once: about 4 x slower), processing paced, direct access like it."""
    sim = table_rows("sim", copy=0.3, proc=2.0, direct=2.05, busy=0.36, wn_spread=0.3, loc_shift=0.02)
    args = {
        "copy": 2.8,
        "proc": 4.0,
        "direct": 4.1,
        "busy": 11.0,
        "wn_spread": 0.3,
        "loc_shift": 0.05,
        **reco,
    }
    return sim + table_rows("reco", **args)


def verdicts(rows: list[JobRow], study: model.Study) -> dict[str, str]:
    v = fralpes.judge(study, fralpes.measure(rows, SITES))
    return {k: x.status for k, x in v.items()}


def test_the_box_shape_passes_every_claim(study: model.Study) -> None:
    assert verdicts(box_rows(), study) == {
        "sim-spread-beyond-location": "pass",
        "sim-direct-like-copy": "pass",
        "reco-direct-like-copy": "pass",
        "copy-varies": "pass",
    }


def test_the_tables_are_ranges_over_the_wn_sites_per_dataset_site(study: model.Study) -> None:
    steps = fralpes.measure(box_rows(), SITES)
    copy = steps.ranges("sim", "input_copy")
    assert set(copy) == set(SITES)
    # gsi's data: WN factors 1, 1.15, 1.3 of 0.3 s, repetitions + 0.01
    assert copy["gsi"] == pytest.approx((0.3, 0.39 + 0.01))
    assert steps.busy_jobs == 4
    assert len(steps.of("reco", "busy_copy")[("alpes", "gsi")]) == 4


def test_locations_further_apart_than_the_wn_spread_fail(study: model.Study) -> None:
    rows = box_rows()
    sim = table_rows("sim", copy=0.3, proc=2.0, direct=2.05, busy=0.36, wn_spread=0.3, loc_shift=1.0)
    rows = sim + [r for r in rows if not r.bench.startswith("sim")]
    v = fralpes.judge(study, fralpes.measure(rows, SITES))["sim-spread-beyond-location"]
    assert v.status == "fail"
    assert "processing: fail" in v.measured


def test_direct_access_slower_than_the_processing_spread_fails(study: model.Study) -> None:
    assert verdicts(box_rows(direct=8.0), study)["reco-direct-like-copy"] == "fail"


def test_a_large_copy_varying_like_the_small_one_fails(study: model.Study) -> None:
    """No other traffic on the links (busy copies as fast as lone ones): the variation is the
    WN sites' only, as for the small input."""
    v = fralpes.judge(study, fralpes.measure(box_rows(busy=2.9), SITES))["copy-varies"]
    assert v.status == "fail"
    assert v.values["ratio"] < 2.0


def test_failed_jobs_leave_only_their_claims_unjudged(study: model.Study) -> None:
    rows = box_rows()
    k = next(i for i, r in enumerate(rows) if r.bench == "reco-busy")
    rows[k] = replace(rows[k], status="failed", stage_in_s=None)
    v = fralpes.judge(study, fralpes.measure(rows, SITES))
    assert v["copy-varies"].status == "not judgeable"
    assert "1 'reco-busy' jobs did not succeed" in v["copy-varies"].measured
    assert v["sim-spread-beyond-location"].status == "pass"
    assert v["reco-direct-like-copy"].status == "pass"  # reco's own jobs all succeeded


def test_no_jobs_is_not_judgeable(study: model.Study) -> None:
    assert set(verdicts([], study).values()) == {"not judgeable"}


def test_the_original_tables_by_the_same_rules(study: model.Study) -> None:
    """Table 1: processing's 200 s spread against a 200 s shift (just at the threshold); Table 2 at
    LAPP: direct access 1600-3000 s against processing 1500-2000 s, a 550 s shift over a 500 s
    spread (its own numbers fail the rule); copies: x 10 against x 2."""
    v = fralpes.judge_original(study)
    assert v["sim-spread-beyond-location"].status == "pass"
    assert v["sim-spread-beyond-location"].values["processing_ratio"] == pytest.approx(1.0)
    assert v["sim-direct-like-copy"].status == "pass"
    assert v["reco-direct-like-copy"].status == "fail"
    assert v["reco-direct-like-copy"].values["ratio"] == pytest.approx(1.1)
    assert v["copy-varies"].status == "pass"
    assert v["copy-varies"].values["ratio"] == pytest.approx(5.0)


def test_each_verdict_names_the_originals_by_the_same_rule(study: model.Study) -> None:
    v = fralpes.judge(study, fralpes.measure(box_rows(), SITES))
    assert "[the original's tables by the same rule: fail" in v["reco-direct-like-copy"].measured


def test_numbers_set_every_cell_beside_the_originals(study: model.Study) -> None:
    rows = fralpes.numbers(study, fralpes.measure(box_rows(), SITES))
    by = {r[0]: r for r in rows}
    assert by["Table 2: input copy"][1] == "LAPP 100-1000 s, LPSC 100-1000 s"
    assert by["Table 2: input copy"][2].startswith("gsi 2.8-")
    assert by["Table 1: input copy, with other copies on the links (4 at once)"][2] != "not measured"
    assert len(rows) == 8


def test_figures_and_page_are_drawn(study: model.Study, tmp_path: Path) -> None:
    fac = recipe.Facility(image={}, sites={}, storage={}, roles={"workers": list(SITES), "data": list(SITES)},
                          params=dict(study.box_params), where="the federation in the box", scaled=True,
                          facts={"wan": "200 Mbit/s"})  # fmt: skip
    ev = analyses.EVALUATE["fr-alpes"](study, box_rows(), [], fac, tmp_path)
    assert [p.name for _, p in ev.figures] == [
        "table1.png",
        "table2.png",
        "pairs-sim.png",
        "pairs-reco.png",
        "copy-variation.png",
    ]
    assert all(p.stat().st_size > 0 for _, p in ev.figures)
    html = page.render(study, fac, ev.verdicts, ev.numbers, ev.figures, {"campaign": "c"}, tmp_path)
    text = html.read_text()
    assert "Table 1 redrawn from afkit" in text and "4 pass, 0 fail, 0 not judgeable" in text
    assert "200 Mbit/s" in text  # the box's scale table filled in


def test_table_figure_holds_both_tables_in_the_originals_layout(study: model.Study) -> None:
    fig = fralpes_figures.table_figure(study, fralpes.measure(box_rows(), SITES), "sim", SITES, SITES, "box")
    assert fig is not None
    texts = {t.get_text() for ax in fig.axes for tab in ax.tables for t in tab.get_celld().values()
             for t in [t.get_text()]}  # fmt: skip
    assert "input at LAPP\nWN: CPPM-LAPP-LPC-LPSC" in texts
    assert "input at alpes\nWN: gsi-frankfurt-alpes" in texts
    assert {"Copy and processing: input copy", "Direct access", "500-700", "700-1000"} <= texts


def test_no_jobs_draw_no_figure(study: model.Study, tmp_path: Path) -> None:
    assert fralpes_figures.write_all(study, fralpes.measure([], SITES), SITES, SITES, tmp_path, "box") == []


def box_campaign(study: model.Study, tmp_path: Path) -> config.Campaign:
    sif = tmp_path / "bench.sif"
    sif.write_bytes(b"x")
    urls = {"sites": {s: {"storage_url": f"root://10.77.{i}.1:1094", "data": f"/srv/federation/{s}/data",
                          "rate_mbit": 200.0} for i, s in enumerate(SITES, 1)}}  # fmt: skip
    fac = recipe.from_federation(study, urls, sif)
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(recipe.campaign(study, fac)))
    return config.load(path)


def test_the_box_campaign_runs_every_pair_with_waves_of_busy_copies(
    study: model.Study, tmp_path: Path
) -> None:
    c = box_campaign(study, tmp_path)
    jobs = plan.expand(c)
    assert Counter(j.bench for j in jobs) == {"sim": 36, "reco": 36, "sim-busy": 36, "reco-busy": 36}
    pairs = {(j.site, j.dataset) for j in jobs if j.bench == "reco"}
    assert pairs == {(w, f"large-{d}") for w in SITES for d in SITES}
    assert {j.access for j in jobs if j.bench.endswith("-busy")} == {"copy"}
    assert {j.wave_size for j in jobs if j.bench.endswith("-busy")} == {4}
    # every read goes through the dataset site's WAN endpoint, the same site's too
    gsi = next(j for j in jobs if j.site == "gsi" and j.dataset == "small-gsi")
    assert gsi.urls[0].startswith("root://10.77.1.1:1094//afkit/study/fr-alpes/small")
    assert c.config["datasets"]["large-alpes"]["generate"]["count"] == 3


def sites_file(tmp_path: Path, workers: object) -> Path:
    path = tmp_path / "my-sites.yaml"
    path.write_text(yaml.safe_dump({
        "image": {"sif": str(tmp_path / "bench.sif")},
        "sites": {s: {"executor": "htcondor", "storage": f"se-{s}"} for s in ("cppm", "lapp", "lpsc")},
        "storage": {f"se-{s}": {"url": f"root://se.{s}.example:1094", "path": f"/dpm/{s}"}
                    for s in ("lapp", "lpsc")},
        "roles": {"workers": workers, "data": ["se-lapp", "se-lpsc"]},
    }))  # fmt: skip
    return path


def test_a_users_sites_file_gives_every_wn_and_dataset_pair(study: model.Study, tmp_path: Path) -> None:
    fac = recipe.from_sites_file(study, sites_file(tmp_path, ["cppm", "lapp", "lpsc"]))
    camp = recipe.campaign(study, fac)
    bench = next(b for b in camp["benchmarks"] if b["name"] == "sim")  # type: ignore[attr-defined]
    assert bench["sites"] == ["cppm", "lapp", "lpsc"]
    assert bench["datasets"] == ["small-se-lapp", "small-se-lpsc"]
    assert camp["datasets"]["large-se-lpsc"]["generate"]["size_mb"] == 2000  # type: ignore[index]


def test_workers_that_are_not_a_list_are_refused(study: model.Study, tmp_path: Path) -> None:
    with pytest.raises(InvalidError, match=r"roles\.workers must be a list of site names"):
        recipe.from_sites_file(study, sites_file(tmp_path, "cppm"))


def test_a_worker_site_the_file_lacks_is_refused(study: model.Study, tmp_path: Path) -> None:
    with pytest.raises(InvalidError, match=r"roles\.workers: 'lpc' is not in sites"):
        recipe.from_sites_file(study, sites_file(tmp_path, ["cppm", "lpc"]))
