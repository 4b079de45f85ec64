"""What a study run writes: --dry-run's listing, the free-space check before anything is written,
runs keyed by their sites file (never sharing results or storage paths), --scale's sizes, and
afkit study clean removing what a run wrote and nothing else."""

from __future__ import annotations

import argparse
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from afkit.campaign.dataset import generated_files
from afkit.study import cli, model, recipe

STUDY = model.load("gsi-trains")


def afkit(line: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    argv = shlex.split(line)
    return subprocess.run([sys.executable, "-m", "afkit", *argv[1:]], capture_output=True, text=True,
                          cwd=cwd, check=False)  # fmt: skip


def sites_file(tmp_path: Path, name: str = "my-sites.yaml", file_mb: float = 3) -> Path:
    """A user's sites file for gsi-trains, its storage a folder here (as at a site whose export is
    mounted on the submit host), its file 3 MB."""
    store = tmp_path / "oss"
    store.mkdir(exist_ok=True)
    (tmp_path / "oss2").mkdir(exist_ok=True)
    (tmp_path / "x.sif").write_bytes(b"sif")
    sites = {"image": {"sif": str(tmp_path / "x.sif")},
             "sites": {"farm": {"executor": "local", "storage": "a"}},
             "storage": {"a": {"url": "root://a.example.org:1094", "path": str(store)},
                         "b": {"url": "root://b.example.org:1094", "path": str(tmp_path / "oss2")}},
             "roles": {"workers": "farm", "server": "a", "servers": ["a", "b"]},
             "params": {"file_mb": file_mb}}  # fmt: skip
    path = tmp_path / name
    path.write_text(yaml.safe_dump(sites))
    return path


def args_for(sites: Path | None, label: str | None = None) -> argparse.Namespace:
    return argparse.Namespace(name="gsi-trains", sites=sites, label=label, workdir=Path("studies"))


def test_a_sites_run_is_keyed_by_its_file_and_the_box_is_not(tmp_path: Path) -> None:
    (tmp_path / "other").mkdir()
    one, two = sites_file(tmp_path), sites_file(tmp_path / "other")
    assert cli.run_key(args_for(None)) == ""
    key = cli.run_key(args_for(one))
    assert key.startswith("my-sites-") and len(key) == len("my-sites-") + 6
    assert cli.run_key(args_for(two)) != key  # the same name in another folder
    assert cli.run_key(args_for(one, label="farm-2026")) == "farm-2026"


@pytest.mark.parametrize("label", ["../up", "a b", "", "x" * 25, "-dash", "my.farm", "a\nb", "$(id)"])
def test_a_label_that_is_no_plain_name_is_exit_2(label: str) -> None:
    from afkit.errors import UsageError

    with pytest.raises(UsageError, match="--label"):
        cli.run_key(args_for(None, label=label))


def test_a_box_run_and_a_sites_run_share_no_results_folder_campaign_or_data_path(tmp_path: Path) -> None:
    sites = sites_file(tmp_path)
    fac = recipe.from_sites_file(STUDY, sites)
    key = cli.run_key(args_for(sites))
    box, mine = recipe.campaign(STUDY, fac, ""), recipe.campaign(STUDY, fac, key)
    assert box["name"] == "study-gsi-trains" and mine["name"] == f"study-gsi-trains-{key}"

    def paths(made: dict[str, object]) -> set[str]:
        return {f for d in made["datasets"].values() for f in generated_files(d["generate"])}  # type: ignore[attr-defined]

    assert paths(box) and paths(mine) and not paths(box) & paths(mine)
    assert all(p.startswith(f"afkit/study/gsi-trains-{key}-") for p in paths(mine))
    assert cli.campaign_file(args_for(None), STUDY) != cli.campaign_file(args_for(sites), STUDY)


def test_dry_run_lists_what_the_run_writes_and_writes_nothing(tmp_path: Path) -> None:
    sites = sites_file(tmp_path)
    proc = afkit("afkit study run gsi-trains --sites my-sites.yaml --dry-run", tmp_path)
    assert proc.returncode == 0, proc.stderr
    key = cli.run_key(args_for(tmp_path / sites.name))
    assert f"{tmp_path / 'oss' / 'afkit' / 'study'}  (" in proc.stdout
    assert f"1 file(s) of 3 MB on a (afkit/study/gsi-trains-{key}-*)" in proc.stdout
    assert "MB free" in proc.stdout
    assert proc.stdout.strip().endswith("it fits")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["my-sites.yaml", "oss", "oss2", "x.sif"]
    assert list((tmp_path / "oss").iterdir()) == []


def test_a_run_that_would_not_fit_is_exit_3_with_both_numbers_before_anything_is_written(
    tmp_path: Path,
) -> None:
    free_mb = shutil.disk_usage(tmp_path).free // 10**6
    sites_file(tmp_path, file_mb=free_mb * 2)
    proc = afkit("afkit study run gsi-trains --sites my-sites.yaml", tmp_path)
    assert proc.returncode == 3, proc.stderr
    # two datasets (one per storage of the servers role), both on this filesystem
    assert "would not fit" in proc.stderr and f"{free_mb * 4:,} MB there" in proc.stderr
    assert "MB are free" in proc.stderr and "--dry-run" in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["my-sites.yaml", "oss", "oss2", "x.sif"]
    dry = afkit("afkit study run gsi-trains --sites my-sites.yaml --dry-run", tmp_path)
    assert dry.returncode == 3 and "it would be refused" in dry.stdout


def test_files_already_there_at_their_size_need_no_space_again(tmp_path: Path) -> None:
    from afkit.study import writes

    sites = sites_file(tmp_path)
    made = recipe.campaign(STUDY, recipe.from_sites_file(STUDY, sites), "k")
    gen = next(iter(made["datasets"].values()))["generate"]  # type: ignore[attr-defined]
    first = writes.campaign_writes(made, tmp_path / "results", tmp_path / "studies" / "c.yaml")[0]
    assert first.bytes == 3 * 10**6
    for f in generated_files(gen):
        (tmp_path / "oss" / f).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "oss" / f).write_bytes(b"x" * 3 * 10**6)
    again = writes.campaign_writes(made, tmp_path / "results", tmp_path / "studies" / "c.yaml")[0]
    assert again.bytes == 0


def test_scale_multiplies_job_counts_and_every_size() -> None:
    params = dict(model.load("dcotf-xcache").params)
    scaled = cli._scaled({**params, "device_mb": 0, "sim_file_mb": 0.38}, 0.01)
    assert scaled["micro_file_mb"] == 256 and scaled["aod_mb"] == 105 and scaled["esd_mb"] == 315
    assert scaled["sim_file_mb"] == 0.0038 and scaled["device_mb"] == 0
    assert scaled["micro_files"] == params["micro_files"]  # a count of files is not a size


def test_clean_removes_what_the_sites_run_wrote_and_nothing_else(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sites = sites_file(tmp_path)
    args = args_for(Path(sites.name))
    fac = recipe.from_sites_file(STUDY, tmp_path / sites.name)
    monkeypatch.chdir(tmp_path)
    path = cli.write_campaign(args, STUDY, fac)  # as the run writes it
    made = yaml.safe_load(path.read_text())
    where = {"a": tmp_path / "oss", "b": tmp_path / "oss2"}
    written = [
        where[d["storage"]] / f for d in made["datasets"].values() for f in generated_files(d["generate"])
    ]
    for f in written:
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(b"data")
    foreign = tmp_path / "oss" / "afkit" / "study" / "someone-elses.root"
    foreign.write_bytes(b"keep")
    results = tmp_path / "results" / f"{made['name']}-v1"
    (results / "job").mkdir(parents=True)
    box = tmp_path / "results" / "study-gsi-trains-v1"
    (box / "job").mkdir(parents=True)
    (box / "job" / "r.json").write_text("{}")
    proc = afkit("afkit study clean gsi-trains --sites my-sites.yaml", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert not any(f.exists() for f in written) and not results.exists() and not path.parent.exists()
    assert foreign.read_bytes() == b"keep" and (box / "job" / "r.json").is_file()
    assert f"removed {len(written)} generated file(s)" in proc.stderr


NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")  # the campaign schema's name (campaign.schema.yaml)


@settings(max_examples=300, deadline=None, database=None)
@given(
    label=st.none() | st.text(max_size=80), stem=st.text(max_size=80), study=st.sampled_from(model.names())
)
def test_any_label_or_sites_file_name_makes_a_valid_campaign_name_or_is_refused(
    label: str | None, stem: str, study: str
) -> None:
    """A run's key reaches the campaign's name, its results folder and its batch jobs' tag: whatever
    the user writes (newlines, quotes, $(), slashes), it is refused (exit 2) or a name of the
    schema's letters, at most 64 long, for every study."""
    from afkit.errors import UsageError

    sites = (
        None if label is not None else Path("/tmp") / (stem.replace("/", "_").replace("\0", "_") + ".yaml")
    )
    try:
        key = cli.run_key(args_for(sites, label=label))
    except UsageError:
        assert label is not None
        return
    name = f"study-{recipe.keyed(model.load(study), key)}"
    assert NAME.fullmatch(name) and len(name) <= 64, name
