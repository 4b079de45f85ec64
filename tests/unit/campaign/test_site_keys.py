"""Site keys that send a site's jobs to its own batch workers (docs/federation.md, "Per-site batch
workers"): HTCondor requirements, the SLURM partition, a site without the submit host's files."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from afkit.campaign import config, runner
from afkit.campaign.runplan import RunPlan
from afkit.errors import InvalidError
from afkit.paths import workflow_files


def _error(raw: dict[str, Any]) -> str:
    with pytest.raises(InvalidError) as exc:
        config.validate(raw)
    return str(exc.value)


def test_requirements_only_for_htcondor(raw: dict[str, Any]) -> None:
    raw["sites"]["far"]["requirements"] = 'AFKIT_SITE == "gsi"'  # far runs on slurm
    msg = _error(raw)
    assert "sites.far.requirements: only for executor 'htcondor', not 'slurm'" in msg


def test_partition_only_for_slurm(raw: dict[str, Any]) -> None:
    raw["sites"]["here"]["partition"] = "gsi"  # here runs locally
    assert "sites.here.partition: only for executor 'slurm', not 'local'" in _error(raw)


def test_partition_name_is_checked(raw: dict[str, Any]) -> None:
    raw["sites"]["far"]["partition"] = "gsi; rm"
    assert "sites.far.partition" in _error(raw)


def test_netns_only_for_the_local_executor(raw: dict[str, Any]) -> None:
    raw["sites"]["far"]["netns"] = "gsi"
    assert "sites.far.netns: only for executor 'local'" in _error(raw)


def test_no_shared_fs_needs_htcondor(raw: dict[str, Any]) -> None:
    raw["image"] = {"sif": "oras://10.77.0.10:5000/afkit/bench:1"}
    raw["sites"]["far"]["shared_fs"] = False  # slurm
    assert "sites.far.shared_fs: false needs executor 'htcondor'" in _error(raw)


def test_no_shared_fs_needs_an_image_from_a_registry(raw: dict[str, Any]) -> None:
    raw["sites"]["far"].update(executor="htcondor", shared_fs=False)  # image: fake.sif, a file
    assert "sites.far.shared_fs: false needs image.sif to be an oras:// reference" in _error(raw)


def test_env_names_are_checked(raw: dict[str, Any]) -> None:
    raw["sites"]["far"]["env"] = {"BAD NAME": "1"}
    assert "sites.far.env" in _error(raw)


def test_shared_fs_defaults_to_true(raw: dict[str, Any], make: Any) -> None:
    assert make(raw).config["sites"]["far"]["shared_fs"] is True


def test_site_options_become_the_sites_own_snakemake_call(
    raw: dict[str, Any], make: Any, tmp_path: Path
) -> None:
    raw["image"] = {"sif": "oras://10.77.0.10:5000/afkit/bench:1"}
    raw["sites"]["here"].update(executor="htcondor", requirements='AFKIT_SITE == "alpes"', shared_fs=False)
    raw["sites"]["far"]["partition"] = "gsi"
    raw["benchmarks"][0]["sites"] = ["here", "far"]
    here, far = (call.argv for call in runner.plan_calls(RunPlan.make(make(raw)), tmp_path / "c.yaml"))
    assert "afkit_site=here" in here and "afkit_site=far" in far
    sets = here[here.index("--set-resources") + 1 : here.index("--shared-fs-usage")]
    assert sets[:2] == ["job:requirements='AFKIT_SITE == \"alpes\"'", "job:classad_WantAfkitSite=True"]
    assert sets[2] == f"job:job_wrapper={str(workflow_files().sandbox_wrapper)!r}"
    assert here[here.index("--shared-fs-usage") + 1] == "none"
    # the installed workflow is shared software: not transferred, as given and relative to the cwd
    shared = here[here.index("--afkit-htcondor-shared-fs-prefixes") + 1].split(",")
    assert shared == [str(workflow_files().root), os.path.relpath(workflow_files().root)]
    assert far[far.index("--set-resources") + 1] == "job:slurm_partition='gsi'"
    assert "--shared-fs-usage" not in far


def test_one_executor_with_a_site_option_still_runs_per_site(
    raw: dict[str, Any], make: Any, tmp_path: Path
) -> None:
    raw["sites"]["here"]["executor"] = "slurm"
    raw["sites"]["far"]["partition"] = "gsi"
    raw["benchmarks"][0]["sites"] = ["here", "far"]
    assert len(runner.plan_calls(RunPlan.make(make(raw)), tmp_path / "c.yaml")) == 2


def test_image_cache_only_for_htcondor(raw: dict[str, Any]) -> None:
    raw["sites"]["far"]["image_cache"] = "/var/cache/afkit/images"  # far runs on slurm
    assert "sites.far.image_cache: only for executor 'htcondor', not 'slurm'" in _error(raw)


def test_image_cache_only_without_the_shared_filesystem(raw: dict[str, Any]) -> None:
    raw["sites"]["far"].update(executor="htcondor", image_cache="/var/cache/afkit/images")
    assert "sites.far.image_cache: only for a site with shared_fs: false" in _error(raw)


def test_image_cache_is_an_absolute_directory_or_off(raw: dict[str, Any], make: Any) -> None:
    raw["image"] = {"sif": "oras://10.77.0.10:5000/afkit/bench:1"}
    raw["sites"]["far"].update(executor="htcondor", shared_fs=False, image_cache="cache/images")
    assert "sites.far.image_cache" in _error(raw)
    for value in ("off", "/var/cache/afkit/images"):
        raw["sites"]["far"]["image_cache"] = value
        assert make(raw).config["sites"]["far"]["image_cache"] == value
