"""`image: {build: ...}`: the image rule's call of the image builder (a fake one), the
provenance taken from the builder's manifest, and the job payload's check of the tag environment."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from afkit.campaign import image as campaign_image
from afkit.campaign.image import build_base, build_command, resolve_image
from afkit.errors import AfkitError, NotFoundError, UnsafeError, one_line

TAG = "AliPhysics/vAN-20201018_ROOT6-1"


# Stands in for afkit.image.build.build (called in the rule's child process): refuses a foreign
# non-empty directory like the real one, cleans an earlier build only with yes (keeping the marker
# and the store), writes NAME.sif + NAME.json (manifest with sif_sha256) and returns the SIF path.
def fake_build(*, profile_name: str, tag_text: str, output: Path, yes: bool, base_spec: str | None) -> Path:
    out, tag, base = output, tag_text, base_spec or "docker://almalinux:9"
    if tag == "Bad/none":
        raise NotFoundError("unknown tag Bad/none")
    keep = {".afkit-workdir", ".data"}
    if out.is_dir() and any(out.iterdir()) and not (out / ".afkit-workdir").exists():
        raise UnsafeError(f"{out} is not empty and was not created by afkit")
    out.mkdir(parents=True, exist_ok=True)
    old = [p for p in out.iterdir() if p.name not in keep]
    if old and not yes:
        raise UnsafeError(f"{out} holds an earlier build")
    for p in old:
        p.unlink()
    (out / ".afkit-workdir").write_text("{}")
    (out / ".data").mkdir(exist_ok=True)
    n = len(list((out / ".data").iterdir()))
    (out / ".data" / f"blob{n}").write_text("x")
    name = tag.replace("/", "_")
    data = b"\0SIF_MAGIC" + f"{tag} build {n}".encode()
    (out / f"{name}.sif").write_bytes(data)
    manifest = {"name": name, "sif_sha256": hashlib.sha256(data).hexdigest(), "tag": tag,
                "profile": profile_name, "base": base}  # fmt: skip
    (out / f"{name}.json").write_text(json.dumps(manifest))
    print("afkit: staging 3 files", file=sys.stderr)
    return out / f"{name}.sif"


def no_manifest_build(*, output: Path, **_: Any) -> Path:
    """A builder that names a SIF it did not make."""
    return output / "x.sif"


@pytest.fixture
def fake_builder(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The rule calls fake_build; returns the equivalent command lines it logged."""
    calls: list[list[str]] = []
    real = campaign_image.build_command

    def command(build: dict[str, Any], outdir: Path, base: str | None) -> list[str]:
        calls.append(real(build, outdir, base))
        return calls[-1]

    monkeypatch.setattr(campaign_image, "build_command", command)
    monkeypatch.setattr(campaign_image, "BUILDER", fake_build)
    return calls


def _resolve(image: dict[str, Any], results: Path, base_dir: Path) -> dict[str, Any]:
    out = results / "image" / "image.json"
    out.parent.mkdir(parents=True, exist_ok=True)  # as snakemake does for the rule's output
    return resolve_image(image, base_dir=str(base_dir), workdir=str(out.parent), output=str(out),
                         log=str(out.with_suffix(".log")))  # fmt: skip


def test_build_command_is_the_documented_one(tmp_path: Path) -> None:
    cmd = build_command({"profile": "alice", "tag": TAG}, tmp_path / "image", "localimage:/b")
    assert cmd[1:] == ["-m", "afkit", "image", "build", "--profile", "alice", "--tag", TAG,
                       "--output", str(tmp_path / "image"), "--base", "localimage:/b", "-y"]  # fmt: skip
    assert "--base" not in build_command({"profile": "alice", "tag": TAG}, tmp_path, None)


def test_base_campaign_then_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AFKIT_BASE_IMAGE", "localimage:/env/base")
    assert build_base({"base": "docker://almalinux:9"}, str(tmp_path)) == "docker://almalinux:9"
    assert build_base({}, str(tmp_path)) == "localimage:/env/base"
    # a relative local base is relative to the campaign file's directory
    assert build_base({"base": "localimage:bases/sb"}, str(tmp_path)) == f"localimage:{tmp_path}/bases/sb"
    monkeypatch.delenv("AFKIT_BASE_IMAGE")
    assert build_base({}, str(tmp_path)) is None


def test_build_gives_provenance_from_the_manifest(
    tmp_path: Path, fake_builder: list[list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AFKIT_BASE_IMAGE", "localimage:/srv/sandbox")
    results = tmp_path / "results" / "c-123"
    info = _resolve({"build": {"profile": "alice", "tag": TAG}}, results, tmp_path)
    image_dir = results / "image"
    sif = image_dir / "AliPhysics_vAN-20201018_ROOT6-1.sif"
    manifest = json.loads(sif.with_suffix(".json").read_text())
    assert fake_builder[0][fake_builder[0].index("--output") + 1] == str(image_dir.resolve())
    assert fake_builder[0][-3:] == ["--base", "localimage:/srv/sandbox", "-y"]
    assert info["path"] == str(sif.resolve())
    assert info["sha256"] == manifest["sif_sha256"]
    assert (info["tag"], info["source"], info["base"]) == (TAG, "build", "localimage:/srv/sandbox")
    assert json.loads((image_dir / "image.json").read_text()) == info
    log = (image_dir / "image.log").read_text()
    assert log.startswith("$ ") and "afkit: staging 3 files" in log and f"sha256 {info['sha256']}" in log
    assert not [p for p in results.iterdir() if p.name.startswith(".")]  # no temporary log left

    # a rebuild (the rule reruns; snakemake removed image.json) reuses the builder's directory
    (image_dir / "image.json").unlink()
    again = _resolve({"build": {"profile": "alice", "tag": TAG}}, results, tmp_path)
    assert again["sha256"] != info["sha256"]  # the fake's second build differs
    assert len(list((image_dir / ".data").iterdir())) == 2  # store kept across builds
    assert json.loads((image_dir / "image.json").read_text())["sha256"] == again["sha256"]


def test_failed_build_names_the_log_and_a_retry_is_not_refused(
    tmp_path: Path, fake_builder: list[list[str]]
) -> None:
    results = tmp_path / "results" / "c-1"
    with pytest.raises(AfkitError, match=r"afkit image build .* failed \(exit 5\); see .*image\.log") as err:
        _resolve({"build": {"profile": "alice", "tag": "Bad/none"}}, results, tmp_path)
    assert err.value.code == 1
    log = results / "image" / "image.log"
    assert "unknown tag Bad/none" in log.read_text()
    assert not (results / "image" / "image.json").exists()
    # the failed build left only this rule's log in a directory the builder never adopted
    info = _resolve({"build": {"profile": "alice", "tag": TAG}}, results, tmp_path)
    assert info["tag"] == TAG


def test_build_without_manifest_is_not_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(campaign_image, "BUILDER", no_manifest_build)
    with pytest.raises(NotFoundError, match="left no SIF and manifest"):
        _resolve({"build": {"profile": "alice", "tag": TAG}}, tmp_path / "r", tmp_path)


def test_the_real_builder_is_called_as_a_function_in_a_child(tmp_path: Path) -> None:
    # afkit.image.build.build itself: an unknown profile is its NotFoundError (exit 5), printed
    # by the child into the rule's log as the afkit command prints it
    results = tmp_path / "results" / "c-2"
    with pytest.raises(AfkitError, match=r"--profile nosuch .* failed \(exit 5\); see .*image\.log"):
        _resolve({"build": {"profile": "nosuch", "tag": TAG}}, results, tmp_path)
    log = (results / "image" / "image.log").read_text()
    assert log.startswith("$ ") and "\nafkit: error: " in log and "nosuch" in log.split("\n", 1)[1]


def _job_steps() -> ModuleType:
    """The job inside the image (afkit.campaign.steps; it was workflows/scripts/job_steps.py)."""
    from afkit.campaign import steps

    return steps


def test_software_env_compares_the_job_environment_with_the_tag(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    info = tmp_path / "image.json"
    info.write_text(json.dumps({
        "tag": TAG, "required": ["ROOTSYS"],
        "env": [{"name": "ALICE_PHYSICS", "value": "/cvmfs/a/AliPhysics", "inherit": False},
                {"name": "ROOTSYS", "value": "/cvmfs/a/ROOT", "inherit": False},
                {"name": "LD_LIBRARY_PATH", "value": "/cvmfs/a/lib", "inherit": False},
                {"name": "PATH", "value": "/cvmfs/a/bin", "inherit": True}],
    }))  # fmt: skip
    mod = _job_steps()
    monkeypatch.setenv("ALICE_PHYSICS", "/cvmfs/a/AliPhysics")
    monkeypatch.setenv("ROOTSYS", "/cvmfs/a/ROOT")
    monkeypatch.setenv("LD_LIBRARY_PATH", "/cvmfs/a/lib:/.singularity.d/libs")  # apptainer appends
    monkeypatch.setenv("PATH", "/cvmfs/a/bin:/usr/bin")
    got = mod.software_env(str(info))
    assert got == {"tag": TAG, "vars": 4, "missing": [], "required": {"ROOTSYS": "/cvmfs/a/ROOT"}}
    monkeypatch.delenv("ALICE_PHYSICS")
    monkeypatch.setenv("ROOTSYS", "/usr")
    monkeypatch.setenv("PATH", "/usr/bin:/cvmfs/a/bin")
    assert mod.software_env(str(info))["missing"] == ["ALICE_PHYSICS", "ROOTSYS", "PATH"]
    assert mod.software_env(str(tmp_path / "none.json")) == {}


def test_the_payload_error_is_one_line_with_the_file_not_uproot_usage_text() -> None:
    from uproot._util import _file_not_found

    err = _file_not_found(
        "root://se:1094//data/f.root", "[ERROR] Server responded with an error: [3011] No such file"
    )
    line = one_line(_job_steps().describe(FileNotFoundError(err)), marks=(), first=True)  # as the job does
    assert "\n" not in line
    assert "[3011] No such file" in line and "root://se:1094//data/f.root" in line
    assert "Files may be specified as" not in line


def test_a_tree_the_file_lacks_names_the_trees_it_holds_in_the_job_error(tmp_path: Path) -> None:
    # a campaign's `tree: Events` on a file whose tree is `events`: the record's error says so
    from afkit.bench.analysis import find_trees, open_root

    src = Path(__file__).parents[2] / "data" / "uproot-HZZ.root"
    with pytest.raises(NotFoundError) as info:
        find_trees(open_root(str(src)), str(src), "Events")
    line = one_line(_job_steps().describe(info.value), marks=(), first=True)  # as the job does
    assert line.startswith("NotFoundError: no tree 'Events' in ")
    assert line.endswith("(trees in the file: events)")
