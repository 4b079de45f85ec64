"""--layers (packages as squashfs overlay partitions reused by the next daily) and --narrow (an
image of only the files the commands open, checked by rerunning them), with the real Apptainer."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from test_image_build import REPO, afkit, in_image, make_base, manifest

DAY1, DAY2 = "AliPhysics/vAN-20250401_ROOT6-1", "AliPhysics/vAN-20250402_ROOT6-1"
LAYERS_ENV = {**os.environ, "AFKIT_LAYER_MIN_MB": "0"}  # the fixture's packages are tiny


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_base(tmp_path_factory.mktemp("base") / "rootfs")


def _sif(proc: subprocess.CompletedProcess[str]) -> Path:
    assert proc.returncode == 0, proc.stderr[-3000:]
    return Path(proc.stdout.strip().splitlines()[-1])


def test_adjacent_daily_reuses_the_unchanged_package_layers(base: Path, tmp_path: Path) -> None:
    common = ["image", "build", "--profile", "alice", "-o", str(tmp_path / "w"), "-y", "--layers"]
    common += ["--base", f"localimage:{base}"]
    first = manifest(_sif(afkit(*common, "-t", DAY1, "--no-validate", env=LAYERS_ENV)))
    second_sif = _sif(afkit(*common, "-t", DAY2, env=LAYERS_ENV))  # validated: runs from its layers
    second = manifest(second_sif)
    one = {layer["unit"]: layer["digest"] for layer in first["layers"]}
    two = {layer["unit"]: layer["digest"] for layer in second["layers"]}
    shared = {u for u in one if two.get(u) == one[u]}
    assert any("AliPhysics/vAN-20250402" in u for u in two) and len(shared) == len(two) - 1
    # Only AliPhysics was staged again: the shared packages' files were not even linked.
    assert second["stage"]["copied_files"] + second["stage"]["reused_files"] < second["closure_files"]
    listing = subprocess.run(
        ["apptainer", "sif", "list", str(second_sif)], capture_output=True, text=True, check=False
    )
    assert listing.stdout.count("Squashfs/Overlay") == len(two)
    run = in_image(second_sif, "aliphysics-check")
    assert run.returncode == 0 and "vAN-20250402_ROOT6-1" in run.stdout, run.stdout + run.stderr


def _narrow(base: Path, work: Path, cwd: Path, command: str) -> subprocess.CompletedProcess[str]:
    cmd = ["python3", "-m", "afkit", "image", "build", "--profile", "alice", "-t", DAY1, "-o", str(work)]
    cmd += ["-y", "--no-validate", "--base", f"localimage:{base}", "--narrow-command", command]
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    return subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=cwd, env=env)


def test_narrowed_image_is_smaller_and_gives_the_same_results(base: Path, tmp_path: Path) -> None:
    proc = _narrow(base, tmp_path / "w", tmp_path, "aliphysics-check")
    sif = _sif(proc)
    narrow = manifest(sif)["narrow"]
    narrowed = tmp_path / "w" / narrow["sif"]
    assert narrow["bytes"] < manifest(sif)["closure_bytes"] and narrowed.stat().st_size < sif.stat().st_size
    spec = (tmp_path / "w" / narrow["spec"]).read_text().splitlines()
    assert "^/el9-x86_64/Packages/AliPhysics/vAN-20250401_ROOT6-1/lib/libPWGPP.so" in spec
    assert not any("/include/" in line for line in spec)  # no program opened a header
    run = in_image(narrowed, "aliphysics-check")
    assert run.returncode == 0 and run.stdout == in_image(sif, "aliphysics-check").stdout


def test_narrowed_image_fails_loudly_when_a_command_opens_a_file_it_lacks(base: Path, tmp_path: Path) -> None:
    """Each run reads the next header named in todo.txt: the traced run reads Core.h, the rerun in
    the narrowed image RIO.h, which was never traced."""
    include = "/cvmfs/alice.cern.ch/el9-x86_64/Packages/ROOT/v6-32-06-alice1-3/include"
    (tmp_path / "todo.txt").write_text(f"{include}/Core.h\n{include}/RIO.h\n{include}/RIO.h\n")
    command = 'mapfile -t todo < todo.txt; printf "%s\\n" "${todo[@]:1}" > todo.txt; cat "${todo[0]}"'
    proc = _narrow(base, tmp_path / "w", tmp_path, command)
    assert proc.returncode == 6, proc.stderr[-3000:]
    assert "the narrowed image gives another result" in proc.stderr
    assert "el9-x86_64/Packages/ROOT/v6-32-06-alice1-3/include/RIO.h" in proc.stderr
    assert (tmp_path / "w" / "AliPhysics_vAN-20250401_ROOT6-1.narrow.invalid.sif").is_file()
    assert not (tmp_path / "w" / "AliPhysics_vAN-20250401_ROOT6-1.narrow.sif").exists()
