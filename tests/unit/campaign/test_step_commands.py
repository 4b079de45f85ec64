"""The commands the workflow's rules run (``afkit campaign image``, ``image-root``, ``dataset``,
``jobcore``, ``aggregate -o``, ``render``): their outputs, their errors (one line and a hint,
the documented exit code) and that a failed step leaves no output behind.
"""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path
from typing import Any

import pytest
from auditcount import audited
from test_aggregate import record

from afkit import cli
from afkit.campaign import config
from afkit.campaign.runplan import RunPlan
from afkit.errors import ExitCode


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """tmp_path as the working directory (the campaign's relative results/ go there)."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def error_lines(capsys: pytest.CaptureFixture[str]) -> list[str]:
    return capsys.readouterr().err.splitlines()


def results(here: Path) -> Path:
    [found] = list(here.glob("results/unit-*"))
    return found


# ---------------------------------------------------------------------------------------- image


def test_image_of_a_sif_writes_its_description_and_log(
    raw: dict[str, Any], write: Any, here: Path, fake_apptainer: Path
) -> None:
    assert cli.main(["campaign", "image", str(write(raw))]) == ExitCode.OK  # image.sif: fake.sif
    out = results(here) / "image"
    info = json.loads((out / "image.json").read_text())
    assert info["path"] == str(fake_apptainer.resolve()) and len(info["sha256"]) == 64
    assert "sha256" in (out / "image.log").read_text()


def test_image_writes_where_o_says(raw: dict[str, Any], write: Any, here: Path, fake_apptainer: Path) -> None:
    args = ["campaign", "image", str(write(raw)), "-o", "x/i.json", "--log", "y/i.log"]
    assert cli.main(args) == ExitCode.OK
    assert (here / "x/i.json").is_file() and (here / "y/i.log").is_file()


def test_image_without_its_sif_is_exit_5_and_writes_no_description(
    raw: dict[str, Any], write: Any, here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["campaign", "image", str(write(raw)), "-o", "img/image.json"]) == ExitCode.NOT_FOUND
    err = error_lines(capsys)
    assert err[0].startswith("afkit: error: image.sif: no such SIF file:")
    assert err[1].startswith("afkit: hint:") and len(err) == 2
    assert not (here / "img/image.json").exists()


def test_image_of_an_invalid_campaign_is_exit_6(
    raw: dict[str, Any], write: Any, here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    raw["image"] = {"sif": 3}
    assert cli.main(["campaign", "image", str(write(raw))]) == ExitCode.INVALID
    assert "image.sif" in capsys.readouterr().err
    assert not list(here.glob("results"))


# ----------------------------------------------------------------------------------- image-root


def test_image_root_without_the_image_description_is_exit_5(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["campaign", "image-root", "img/image.json", "--benchmarks", "ana"]
    assert cli.main(args) == ExitCode.NOT_FOUND
    err = error_lines(capsys)
    assert err == [
        "afkit: error: no image description: img/image.json",
        "afkit: hint: make it first: afkit campaign image C.yaml",
    ]
    assert not (here / "img").exists()


def test_image_root_needs_the_benchmarks_it_is_for(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        cli.main(["campaign", "image-root", "image.json"])
    assert stop.value.code == ExitCode.USAGE
    assert "--benchmarks" in capsys.readouterr().err


def test_image_root_of_an_image_without_root_is_exit_3_and_writes_no_root_json(
    here: Path, fake_apptainer: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    image = here / "img" / "image.json"
    image.parent.mkdir()
    image.write_text(json.dumps({"path": str(fake_apptainer), "sha256": "0" * 64, "tag": "T"}))
    args = ["campaign", "image-root", str(image), "--benchmarks", "ana", "ana2"]
    assert cli.main(args) == ExitCode.PREREQ  # the test double's image has no root.exe
    err = error_lines(capsys)
    assert "the image of tag T has no ROOT" in err[0] and "benchmark(s) ana, ana2" in err[0]
    assert not (here / "img/root.json").exists()
    assert json.loads((here / "img/refused.json").read_text())["code"] == ExitCode.PREREQ
    assert (here / "img/root.log").is_file()


# -------------------------------------------------------------------------------------- dataset


def test_dataset_generates_its_files_and_writes_the_manifest(
    raw: dict[str, Any], write: Any, here: Path, store: Path
) -> None:
    assert cli.main(["campaign", "dataset", str(write(raw)), "gen"]) == ExitCode.OK
    manifest = json.loads((results(here) / "dataset/gen.json").read_text())
    assert manifest == {
        "dataset": "gen",
        "files": ["afkit-gen-0000.dat", "afkit-gen-0001.dat"],
        "storage": "disk",
    }
    assert (store / "afkit-gen-0001.dat").stat().st_size == 1_000_000
    assert (results(here) / "dataset/gen.log").read_text().endswith("2 files\n")


def test_an_unknown_dataset_is_exit_2_naming_the_campaigns(
    raw: dict[str, Any], write: Any, here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["campaign", "dataset", str(write(raw)), "nope"]) == ExitCode.USAGE
    assert error_lines(capsys) == ["afkit: error: no dataset 'nope' in the campaign; its datasets: gen, hzz"]


def test_a_dataset_with_a_missing_file_is_exit_5_and_writes_no_manifest(
    raw: dict[str, Any], write: Any, here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    raw["datasets"]["hzz"]["files"] = ["hzz/none.root"]
    args = ["campaign", "dataset", str(write(raw)), "hzz", "-o", "m/hzz.json"]
    assert cli.main(args) == ExitCode.NOT_FOUND
    assert "hzz/none.root" in error_lines(capsys)[0]
    assert not (here / "m/hzz.json").exists()


def test_a_root_written_dataset_without_the_image_is_exit_5(
    raw: dict[str, Any], write: Any, here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    raw["datasets"]["gen"]["generate"]["kind"] = "ao2d"
    assert cli.main(["campaign", "dataset", str(write(raw)), "gen"]) == ExitCode.NOT_FOUND
    err = error_lines(capsys)
    assert err[0].startswith("afkit: error: no image description: results/unit-")
    assert err[1] == (
        "afkit: hint: dataset gen is written by the image's ROOT: afkit campaign image C.yaml first"
    )


# -------------------------------------------------------------------------------------- jobcore


def test_jobcore_packs_afkits_modules(here: Path) -> None:
    assert cli.main(["campaign", "jobcore", "-o", "core/afkit.zip"]) == ExitCode.OK
    names = zipfile.ZipFile(here / "core/afkit.zip").namelist()
    assert "afkit/campaign/jobcore.py" in names
    assert not any(n.startswith("afkit/data/") for n in names)
    assert (here / "core/afkit.log").read_text() == "packed afkit into core/afkit.zip\n"


def test_jobcore_into_a_file_as_folder_is_an_error_and_leaves_nothing(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (here / "core").write_text("a file")
    assert cli.main(["campaign", "jobcore", "-o", "core/afkit.zip"]) == ExitCode.FAILURE
    assert error_lines(capsys)[0].startswith("afkit: error:")
    assert (here / "core").read_text() == "a file"


# ------------------------------------------------------------------------------------ aggregate


def put_records(results_dir: Path, recs: list[dict[str, Any]]) -> None:
    for r in recs:
        path = results_dir / "job" / r["bench"] / f"{r['id']}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(r))


def test_aggregate_writes_the_tables_and_log_where_the_rule_says(
    raw: dict[str, Any], write: Any, here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    campaign = str(write(raw))
    args = ["campaign", "aggregate", campaign, "-o", "t/jobs.csv", "--intervals", "t/iv.csv"]
    args += ["--log", "t/a.log"]
    assert cli.main(args) == ExitCode.OK
    assert (here / "t/jobs.csv").read_text().count("\n") == 1 + 4  # the 4 planned jobs, missing
    assert (here / "t/iv.csv").is_file()
    line = "t/jobs.csv: 4 jobs, 4 failed or missing"
    assert capsys.readouterr().out.strip() == line
    assert (here / "t/a.log").read_text() == line + "\n"


def test_aggregate_leaves_out_a_record_of_an_older_spec_and_says_so(
    raw: dict[str, Any], write: Any, here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from afkit.campaign import aggregate as agg
    from afkit.campaign import current

    campaign = str(write(raw))
    c = config.load(campaign)
    now, before = current.planned(RunPlan.make(c))[:2]
    put_records(c.results_dir, [
        record(0, bench=now.job.bench, id=now.job.id, spec_sha256=now.digest),
        record(1, bench=before.job.bench, id=before.job.id, spec_sha256="0" * 64),
    ])  # fmt: skip
    assert cli.main(["campaign", "aggregate", campaign, "-o", "t/jobs.csv"]) == ExitCode.OK
    status = {r["id"]: (r["status"], r["campaign_hash"]) for r in agg.read_csv(here / "t/jobs.csv")}
    assert status[now.job.id] == ("ok", c.hash) and status[before.job.id] == ("missing", c.hash)
    assert "1 job record(s) were made from an older spec of their job" in error_lines(capsys)[0]


# --------------------------------------------------------------------------------------- render


def tables(here: Path) -> Path:
    from afkit.campaign import aggregate as agg
    from afkit.campaign.contract import JobRecord

    out = here / "agg"
    agg.aggregate([JobRecord(**record(i)) for i in range(2)], out / "jobs.csv", out / "intervals.csv")
    return out / "jobs.csv"


def test_render_writes_the_report_and_its_figures(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    jobs = tables(here)
    args = ["campaign", "render", str(jobs), "-o", "r/report.html", "--figures", "r/figs", "--log", "r/r.log"]
    assert cli.main(args) == ExitCode.OK
    assert capsys.readouterr().out.strip() == "r/report.html"
    assert "<html" in (here / "r/report.html").read_text().lower()
    assert sorted(p.name for p in (here / "r/figs").glob("*.png"))  # at least one figure
    assert (here / "r/r.log").read_text() == "wrote r/report.html\n"


def test_render_without_the_jobs_table_is_exit_5_and_writes_no_report(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["campaign", "render", "agg/jobs.csv", "-o", "r/report.html"]) == ExitCode.NOT_FOUND
    err = error_lines(capsys)
    assert err == [
        "afkit: error: no jobs table: agg/jobs.csv",
        "afkit: hint: make the tables first: afkit campaign aggregate C.yaml",
    ]
    assert not (here / "r").exists()


def test_render_to_another_name_than_report_html_is_exit_2(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["campaign", "render", str(tables(here)), "-o", "r/x.html"]) == ExitCode.USAGE
    assert "report.html" in error_lines(capsys)[0]
    assert not (here / "r").exists()


# ---------------------------------------------------------------------- the workflow's campaign file


def test_a_plan_file_holds_the_campaign_and_its_jobs_as_planned(
    here: Path, raw: dict[str, Any], make: Any
) -> None:
    planned = RunPlan.make(make(raw))
    path = planned.write()
    assert path == here / planned.campaign.layout.plan_file
    again = RunPlan.read(path)
    assert again.jobs == planned.jobs and [j.urls for j in again.jobs] == [j.urls for j in planned.jobs]
    assert (
        again.campaign.hash == planned.campaign.hash and again.campaign.base_dir == planned.campaign.base_dir
    )


def test_an_unchanged_plan_is_not_rewritten(here: Path, raw: dict[str, Any], make: Any) -> None:
    planned = RunPlan.make(make(raw))
    path = planned.write()
    os.utime(path, (1, 1))
    RunPlan.make(make(raw)).write()
    assert path.stat().st_mtime == 1


def test_a_step_given_the_plan_file_neither_validates_nor_expands(
    here: Path, raw: dict[str, Any], write: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    plan_file = RunPlan.make(config.load(write(raw))).write()
    with audited() as events:
        assert cli.main(["campaign", "aggregate", str(plan_file)]) == ExitCode.OK
    assert "afkit.campaign.plan_read" in events
    assert "afkit.campaign.validate" not in events and "afkit.campaign.expand" not in events
    assert "jobs, " in capsys.readouterr().out


def test_a_plan_file_of_another_format_is_refused_with_exit_6(
    here: Path, raw: dict[str, Any], make: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    path = RunPlan.make(make(raw)).write()
    data = json.loads(path.read_text())
    data["format"] = 0
    path.write_text(json.dumps(data))
    assert cli.main(["campaign", "aggregate", str(path)]) == ExitCode.INVALID
    err = error_lines(capsys)
    assert "plan format 0" in err[0] and "afkit campaign run" in err[1]


# ------------------------------------------------------------------------------- the workflow's rules

RULES = Path(__file__).resolve().parents[3] / "workflows" / "rules"


def test_no_rule_runs_python_in_snakemake() -> None:
    for smk in sorted(RULES.glob("*.smk")):
        lines = smk.read_text(encoding="utf-8").splitlines()
        assert not [ln for ln in lines if ln.strip() == "run:"], smk.name


def test_the_commands_snakemake_prints_rerun_the_steps_by_hand(
    raw: dict[str, Any], write: Any, here: Path, fake_apptainer: Path
) -> None:
    import os
    import subprocess
    import sys

    snakefile = RULES.parent / "Snakefile"
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "-s",
        str(snakefile),
        "--configfile",
        str(write(raw)),
        "-p",
        "--cores",
        "1",
        "--until",
        "image",
        "dataset",
    ]
    # the steps run (-p shows each one's command), then their outputs are removed
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    shown = [ln.removeprefix("Shell command: ") for ln in (proc.stdout + proc.stderr).splitlines()]
    steps = [ln for ln in shown if " -m afkit campaign " in ln and " campaign job " not in ln]
    assert {ln.split()[5] for ln in steps} == {"image", "dataset"}
    for made in ("image/image.json", "dataset/gen.json"):
        (results(here) / made).unlink()
    env = {**os.environ, "AFKIT_PYTHON": sys.executable}
    for step in ("image", "dataset"):  # as a reader copies them from snakemake's output
        [line] = [ln for ln in steps if ln.split()[5] == step]
        done = subprocess.run(["bash", "-c", line], env=env, capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
    assert json.loads((results(here) / "image/image.json").read_text())["path"] == str(
        fake_apptainer.resolve()
    )
    assert (results(here) / "dataset/gen.json").is_file()


def test_the_documented_step_commands_run_from_the_campaigns_directory(
    raw: dict[str, Any], here: Path, fake_apptainer: Path
) -> None:
    import shlex

    import yaml

    (here / "C.yaml").write_text(yaml.safe_dump(raw))  # docs/campaigns.md, "Every step is a command"
    assert cli.main(shlex.split("afkit campaign image C.yaml")[1:]) == ExitCode.OK
    assert (results(here) / "image/image.json").is_file() and (results(here) / "image/image.log").is_file()
    jobs = tables(here)
    (here / "results/demo/aggregate").mkdir(parents=True)
    for name in ("jobs.csv", "intervals.csv"):
        (here / "results/demo/aggregate" / name).write_bytes((jobs.parent / name).read_bytes())
    cmd = "afkit campaign render results/demo/aggregate/jobs.csv -o results/demo/report/report.html"
    assert cli.main(shlex.split(cmd)[1:]) == ExitCode.OK
    assert (here / "results/demo/report/report.html").is_file()
    assert (here / "results/demo/report/figures").is_dir() and (
        here / "results/demo/report/report.log"
    ).is_file()
