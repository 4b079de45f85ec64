"""Images of every CI tag, and their environment against the experiment's own tools (in the testbed).

The fixture at /cvmfs follows the real layouts (docs/cvmfs-fixture.md): every tag of
images/<profile>/tags.yaml must build, validate (proof programs included, under --contain
--cleanenv, no host /cvmfs), and its image must set exactly the environment that
``alienv setenv TAG -c env`` (alice) or ``source <view>/setup.sh`` (lcg) gives on the host,
variable by variable, but for the documented exclusions (EXCLUDED below, docs/image-builder.md).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml
from test_image_build import afkit, in_image, make_base, manifest

REPO = Path(__file__).resolve().parents[2]
CLEAN = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/tmp", "LANG": "C"}
# Not part of a tag's environment: the shell's and Apptainer's own variables, Environment Modules'
# bookkeeping of the alienv process (the image gets the loaded state, LOADEDMODULES and _LMFILES_,
# not the tool), and alienv's own switches (ALIENV_*, MODULES_USE_COMPAT_VERSION).
EXCLUDED = re.compile(
    r"(PWD|OLDPWD|SHLVL|_|HOME|LANG|TERM|PS1|USER|HOSTNAME|LD_PRELOAD|MODULESHOME|MODULES_.*|__MODULES_.*|ALIENV_.*"
    r"|BASH_FUNC_.*|ENV|BASH_ENV|APPTAINER_.*|SINGULARITY_.*|PROMPT_COMMAND)"
)
# Colon-separated lists: compared on their /cvmfs entries (the image's base adds its own tail).
PATH_LISTS = {"PATH", "LD_LIBRARY_PATH", "MANPATH", "PYTHONPATH"}


def _ci_tags() -> list[tuple[str, str]]:
    out = []
    for prof in ("alice", "lcg"):
        data = yaml.safe_load((REPO / "images" / prof / "tags.yaml").read_text())
        out += [(prof, tag) for tag in data["tags"]]
    return out


CI_TAGS = _ci_tags()


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every CI tag built once (validation on), as afkit image build does in the CI build job."""
    base = make_base(tmp_path_factory.mktemp("fidelity-base") / "rootfs")
    images: dict[str, Path] = {}
    for prof, tag in CI_TAGS:
        work = tmp_path_factory.mktemp("fidelity")
        proc = afkit(
            "image", "build", "--profile", prof, "-t", tag, "-o", str(work), "--base", f"localimage:{base}"
        )
        assert proc.returncode == 0, f"{tag}: {proc.stderr[-3000:]}"
        images[tag] = Path(proc.stdout.strip().splitlines()[-1])
    return images


def _env_of(cmd: list[str]) -> dict[str, str]:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, env=CLEAN)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out: dict[str, str] = {}
    for line in proc.stdout.splitlines():
        name, sep, value = line.partition("=")
        if sep and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            out[name] = value
    return out


def _tag_environment(env: dict[str, str], clean: dict[str, str]) -> dict[str, str]:
    """What the tag adds or changes, path lists reduced to their /cvmfs entries."""
    out = {}
    for name, value in env.items():
        if EXCLUDED.fullmatch(name) or clean.get(name) == value:
            continue
        if name in PATH_LISTS:
            value = ":".join(p for p in value.split(":") if p.startswith("/cvmfs/"))
        out[name] = value
    return out


def _host_environment(prof: str, tag: str, platform: str = "el9") -> dict[str, str]:
    clean = _env_of(["env"])
    if prof == "alice":
        # alienv on an el9 host (the testbed is Debian: say the platform, as upstream allows).
        cmd = [
            "env",
            f"ALIENV_OVERRIDE_PLATFORM={platform}",
            "/cvmfs/alice.cern.ch/bin/alienv",
            "setenv",
            tag,
            "-c",
            "env",
        ]
    else:
        setup = f"/cvmfs/sft.cern.ch/lcg/views/{tag}/x86_64-el9-gcc13-opt/setup.sh"
        cmd = ["bash", "--noprofile", "--norc", "-c", f"source {setup} && env"]
    return _tag_environment(_env_of(cmd), clean)


@pytest.mark.parametrize(("prof", "tag"), CI_TAGS, ids=[t for _p, t in CI_TAGS])
def test_every_ci_tag_builds_validates_and_runs_contained(
    built: dict[str, Path], prof: str, tag: str
) -> None:
    sif = built[tag]
    data = manifest(sif)
    assert data["validated"] is True and data["profile"] == prof
    assert in_image(sif, "root-config", "--version").returncode == 0  # the profile's proof program
    assert in_image(sif, "test", "-e", "/cvmfs/alice.cern.ch/el9-x86_64/Packages/Geant4").returncode == 1


@pytest.mark.parametrize(
    ("prof", "tag"),
    [
        ("alice", "AliPhysics/vAN-20201018_ROOT6-1"),
        ("alice", "O2Physics/daily-20251120-0000-1"),
        ("lcg", "LCG_105"),
    ],
)
def test_image_environment_is_the_hosts(built: dict[str, Path], prof: str, tag: str) -> None:
    host = _host_environment(prof, tag)
    args = ["apptainer", "exec", "--userns", "--contain", "--cleanenv", "--no-mount", "bind-paths"]
    image = _tag_environment(_env_of([*args, str(built[tag]), "env"]), {})
    assert host, "the host tool set no variable"
    if prof == "alice":  # alienv exports these besides the tag's modules (ali-bot cvmfs/alienv)
        assert {"MODULEPATH", "ALIEN_ORGANISATION"} <= set(host)
    missing = sorted(set(host) - set(image))
    # an image variable naming /cvmfs is the tag's, not the base's
    extra = sorted(n for n in set(image) - set(host) if "/cvmfs/" in image[n])
    differ = sorted(n for n in set(host) & set(image) if host[n] != image[n])
    assert (missing, extra, differ) == ([], [], []), {
        n: (host.get(n), image.get(n)) for n in missing + extra + differ
    }


def test_a_toolchain_without_a_link_falls_back_as_under_alienv(tmp_path: Path) -> None:
    """el8 has no Toolchain/GCC-v12.2.0 link: alienv's Modules 3.2 carries on and GCC-Toolchain
    falls back on itself; the builder does the same, says so, and the tag resolves."""
    args = ["image", "build", "--profile", "alice", "-t", "AliPhysics/vAN-20230301_ROOT6-1", "--plan"]
    proc = afkit(*args, "-o", str(tmp_path / "plan"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Toolchain/GCC-v12.2.0 not published for el8-x86_64" in proc.stderr
    spec = (tmp_path / "plan" / "AliPhysics_vAN-20230301_ROOT6-1.spec").read_text()
    assert "/el8-x86_64/Packages/GCC-Toolchain/v12.2.0-alice1-1/*" in spec.splitlines()
    # alienv on an el8 host agrees (on an el9 host it would take el9's Toolchain/GCC-v12.2.0 link,
    # which the real-ROOT tags' toolchain has there)
    host = _host_environment("alice", "AliPhysics/vAN-20230301_ROOT6-1", platform="el8")
    assert (
        "/cvmfs/alice.cern.ch/el8-x86_64/Packages/GCC-Toolchain/v12.2.0-alice1-1/lib64"
        in host["LD_LIBRARY_PATH"]
    )
