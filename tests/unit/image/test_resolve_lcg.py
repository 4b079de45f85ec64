"""The lcg profile: a view's closure from the release manifest and its symlinks, env from setup.sh."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from afkit.errors import NotFoundError
from afkit.image import profile, resolve, stage, tags
from afkit.image.model import Resolution
from afkit.image.store import Store


def _resolve(text: str) -> Resolution:
    prof = profile.load("lcg")
    return resolve.resolve(prof, tags.parse(text, prof), profile.repo_root(prof))


def test_view_closure(on_fixture: Path) -> None:
    res = _resolve("LCG_105")
    assert res.arch == "x86_64-el9-gcc13-opt"
    labels = {u.label for u in res.units}
    assert {"ROOT/6.30.02", "XRootD/5.6.1", "vdt/0.4.4", "Davix/0.8.4", "hepfixture/1.2.0"} <= labels
    rels = {u.rel for u in res.units}
    assert "lcg/views/LCG_105/x86_64-el9-gcc13-opt" in rels
    # the compiler runtime, reached only through setup.sh
    assert any(r.startswith("lcg/releases/gcc/") for r in rels)
    # releases outside the view are not taken
    assert not any("6.28.10" in r or "Geant4" in r for r in rels)


def test_view_environment(on_fixture: Path) -> None:
    """Off /cvmfs the view's absolute links dangle, so setup.sh sets no ROOTSYS (as on a real host);
    the full environment at /cvmfs is compared with setup.sh's in the testbed."""
    res = _resolve("LCG_105")
    env = {e.name: e for e in res.env}
    assert env["LCG_VERSION"].value == "105"
    assert env["PATH"].inherit and env["PATH"].value.startswith("/cvmfs/sft.cern.ch/lcg/views/LCG_105/")
    assert any("not at /cvmfs/sft.cern.ch" in w for w in res.warnings)


def test_compiler_comes_from_the_manifest(on_fixture: Path) -> None:
    rels = {u.rel for u in _resolve("LCG_105").units}
    assert "lcg/releases/gcc/13.1.0" in rels  # the link setup.sh names, kept a link
    assert any(r.startswith("lcg/releases/gcc/13.1.0-") for r in rels)


def test_view_symlinks_stay_symlinks(on_fixture: Path, tmp_path: Path) -> None:
    prof = profile.load("lcg")
    src = profile.repo_root(prof)
    res = _resolve("LCG_105")
    plan = stage.walk(src, res.units, resolve.image_root(prof))
    dest = tmp_path / "rootfs" / "cvmfs" / "sft.cern.ch"
    stage.execute(plan, dest, Store(tmp_path / ".data"), quiet=True)
    link = dest / "lcg/views/LCG_105/x86_64-el9-gcc13-opt/bin/root-config"
    target = os.readlink(link)  # absolute, as lcgcmake writes them: valid inside the image
    assert link.is_symlink() and target.startswith("/cvmfs/sft.cern.ch/lcg/releases/ROOT/6.30.02-")
    assert (dest / target.removeprefix("/cvmfs/sft.cern.ch/")).is_file()
    assert plan.resolved == [] and plan.kept_outside == []


def test_unknown_release(on_fixture: Path) -> None:
    with pytest.raises(NotFoundError, match=r"nearest: LCG_105\b"):
        _resolve("LCG_105b")


def _sft_facts(cvmfs_root: Path) -> dict[str, str | list[str]]:
    text = (cvmfs_root / "sft.cern.ch" / ".afkit-fixture.json").read_text()
    facts: dict[str, str | list[str]] = json.loads(text)["lcg"]
    return facts


def test_blacklisted_package_is_not_staged(on_fixture: Path, cvmfs_root: Path) -> None:
    """hepmc3 is in LCG_externals_<platform>.txt and installed, but create_lcg_view.py -B left it
    out of the view: the image gets the view's packages only."""
    assert _sft_facts(cvmfs_root)["blacklisted"] == ["hepmc3/3.2.7"]
    res = _resolve("LCG_105")
    assert not any("hepmc3" in u.rel for u in res.units), [u.rel for u in res.units if "hepmc3" in u.rel]
    assert "hepmc3/3.2.7" not in {u.label for u in res.units}


def test_generator_is_staged_for_the_view_platform_only(on_fixture: Path, cvmfs_root: Path) -> None:
    """pythia8's <version>-<hash> holds the -opt and the -dbg build side by side: only -opt is staged."""
    facts = _sft_facts(cvmfs_root)
    res = _resolve("LCG_105")
    rels = {u.rel for u in res.units}
    gen = [r for r in rels if r.startswith("lcg/releases/MCGenerators/pythia8/")]
    assert len(gen) == 1 and gen[0].endswith("/" + str(facts["platform"])), gen
    assert not any(str(facts["other_platform"]) in r for r in rels)
    assert "pythia8/310" in {u.label for u in res.units}


def test_generators_manifest_is_staged(on_fixture: Path, cvmfs_root: Path) -> None:
    facts = _sft_facts(cvmfs_root)
    res = _resolve("LCG_105")
    assert {u.rel for u in res.units} >= {
        str(facts["generators_manifest"]),
        "lcg/releases/LCG_105/LCG_externals_x86_64-el9-gcc13-opt.txt",
    }


def test_real_root_view_takes_its_gcc12_platform_and_compiler(on_fixture: Path) -> None:
    """LCG_110 is published for x86_64-el9-gcc12-opt only: that platform is taken, with the real
    ROOT, its XRootD and the gcc 12.2.0 its manifest names (sourced by setup.sh, not in the view)."""
    res = _resolve("LCG_110")
    assert res.arch == "x86_64-el9-gcc12-opt"
    assert {"ROOT/6.40.00", "XRootD/5.9.2"} <= {u.label for u in res.units}
    rels = {u.rel for u in res.units}
    assert "lcg/releases/gcc/12.2.0" in rels
    assert any(r.startswith("lcg/releases/gcc/12.2.0-") and r.endswith("/x86_64-el9") for r in rels), rels
    assert not any("gcc13" in r or "13.1.0" in r for r in rels)
