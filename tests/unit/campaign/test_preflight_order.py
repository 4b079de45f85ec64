"""afkit campaign run checks what costs nothing before it pulls an image: the results folder, then
the credentials; validate makes the same checks (docs/campaigns.md). An oras:// image on a port where
nothing listens stands for the registry: a check made after the pull would fail on the pull first."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

REGISTRY_IMAGE = {"sif": "oras://127.0.0.1:9/afkit/bench:1"}


def afkit(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "afkit", *argv], cwd=cwd, capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip


def written(tmp_path: Path, raw: dict[str, Any]) -> Path:
    path = tmp_path / "C.yaml"
    path.write_text(yaml.safe_dump({**raw, "image": REGISTRY_IMAGE}))
    return path


@pytest.mark.parametrize("command", ["validate", "run"])
def test_a_results_folder_that_cannot_be_made_is_exit_3_before_the_pull(
    tmp_path: Path, raw: dict[str, Any], command: str
) -> None:
    (tmp_path / "afile").write_text("not a folder")
    raw["results"] = str(tmp_path / "afile" / "results")
    proc = afkit("campaign", command, str(written(tmp_path, raw)), cwd=tmp_path)
    assert proc.returncode == 3, proc.stderr
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("afkit: error:")]
    assert errors == [f"afkit: error: results: {tmp_path / 'afile' / 'results' / 'unit-v1'} cannot be made: "
                      f"{tmp_path / 'afile'} is a file"]  # fmt: skip
    assert "oras" not in proc.stderr and "Traceback" not in proc.stderr  # nothing pulled


@pytest.mark.parametrize("command", ["validate", "run"])
def test_a_missing_token_is_exit_5_before_the_pull(tmp_path: Path, raw: dict[str, Any], command: str) -> None:
    raw["storage"]["disk"]["credential"] = {"token": str(tmp_path / "no-token")}
    proc = afkit("campaign", command, str(written(tmp_path, raw)), cwd=tmp_path)
    assert proc.returncode == 5, proc.stderr
    assert f"storage disk: token file {tmp_path / 'no-token'} not found" in proc.stderr
    assert "oras" not in proc.stderr and not (tmp_path / "results").exists()


def test_a_read_only_results_file_system_is_exit_3(tmp_path: Path, raw: dict[str, Any]) -> None:
    """As on a node whose results area is mounted read-only: a read-only tmpfs in a mount
    namespace of the test's own (root's permissions do not help there)."""
    ro = tmp_path / "ro"
    ro.mkdir()
    raw["results"] = str(ro / "results")
    campaign = written(tmp_path, raw)
    script = (
        f'mount -t tmpfs -o ro none "{ro}" && exec "{sys.executable}" -m afkit campaign validate "{campaign}"'
    )
    proc = subprocess.run(["unshare", "-m", "sh", "-c", script], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip
    assert proc.returncode == 3, proc.stderr
    assert f"{ro} is not writable by you (its permissions, or a read-only file system)" in proc.stderr


@pytest.mark.parametrize(
    ("options", "says"),
    [
        (["--bogus"], "snakemake option(s): not known to snakemake: --bogus"),
        (["--", "--cores", "abc"], "snakemake option(s): Error parsing number of cores (--cores, -c)"),
    ],
)
@pytest.mark.parametrize("command", ["run", "retry"])
def test_a_snakemake_option_snakemake_refuses_is_exit_2_before_the_pull(
    tmp_path: Path, raw: dict[str, Any], options: list[str], says: str, command: str
) -> None:
    """snakemake's own parser (with the executor plugins' options) reads them first: was the pull,
    then snakemake's usage error."""
    proc = afkit("campaign", command, str(written(tmp_path, raw)), *options, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("afkit: error:")]
    assert len(errors) == 1 and says in errors[0], proc.stderr
    assert (
        "oras" not in proc.stderr and "Traceback" not in proc.stderr and not (tmp_path / "results").exists()
    )


def test_options_snakemake_knows_pass(tmp_path: Path, raw: dict[str, Any]) -> None:
    from afkit.campaign import passthrough

    passthrough.check(["--cores", "2", "--keep-going", "--rerun-triggers", "mtime", "--slurm-no-account"])
