"""Images whose ROOT is the real one (ROOT 6.40.00 from PyPI in the fixture, docs/cvmfs-fixture.md):
an ALICE tag (O2Physics, on the GCC-Toolchain package) and an LCG view (LCG_110,
x86_64-el9-gcc12-opt: the compiler sourced by its setup.sh from releases/gcc/12.2.0/x86_64-el9).
(The fixture's other real-ROOT tag, AliPhysics/vAN-20251126_ROOT6-1, with the same ROOT and
toolchain packages, is built and validated in the same run by `make demo`, whose image the
pytest tests reuse: conftest.py alice_root_sif.) They build, validate
(ROOT's interpreter runs a macro on a real ROOT file, a reader compiled in the image with the
toolchain's c++ does the same), and read that file over root:// from the testbed's
XRootD origin and through an XCache, all with the tag's ROOT (TNetXNG) inside the image under
--contain --cleanenv, no host /cvmfs. A dead interpreter fails validation with exit 6 quoting cling.
A campaign with `payload: root` runs in the O2Physics image over root:// through the XCache
(ROOT's read counts in its records), and one whose image has no ROOT is refused before any job.

The images are built once per module (lz4: the squashfs compression of 750 MiB of ROOT with gzip
takes minutes on the shared 2-core machine, lz4 seconds) on the base `scripts/mkbase --sandbox
minimal` (Debian trixie with what ALICE's el9 images carry for ROOT).
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit
from xml.etree import ElementTree as ET

import itsupport
import pytest
from itsupport import mkbase, ok, origin_dataset, require_env, steps_campaign, text_or_empty
from test_image_build import REPO, afkit, in_image, manifest

REAL_TAGS = {
    "alice": ("O2Physics/daily-20251126-0000-1",),
    "lcg": ("LCG_110",),
}
# A release directory of the repository outside the tag's closure: not staged.
UNUSED = {
    "alice": "/cvmfs/alice.cern.ch/el9-x86_64/Packages/Geant4",
    "lcg": "/cvmfs/sft.cern.ch/lcg/releases/Geant4",
}
CASES = [(prof, tag) for prof, tags in REAL_TAGS.items() for tag in tags]
PROOF = "/.afkit/proof"
SUMMARY = "afkit-proof: events 2421 entries, sum of NMuon 3825"
STORAGE_BASE = "12494"  # XCache of this module's own (clear of the other tests' ports)


def _macro(url: str) -> list[str]:
    return ["root.exe", "-b", "-q", "-l", f'{PROOF}/read_tree.C("{url}", "events", "NMuon")']


def build(prof: str, tag: str, base: Path, work: Path) -> Path:
    """The SIF of `afkit image build` of TAG on BASE (lz4; validation on, as it always is)."""
    proc = afkit("image", "build", "--profile", prof, "-t", tag, "-o", str(work), "--compression", "lz4",
                 "--base", f"localimage:{base}")  # fmt: skip
    assert proc.returncode == 0, f"{tag}: {proc.stderr[-3000:]}"
    return Path(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def images(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every real-ROOT tag built once (validation on, as afkit image build always does)."""
    base = mkbase("--sandbox", "minimal")
    return {tag: build(prof, tag, base, tmp_path_factory.mktemp("realroot")) for prof, tag in CASES}


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[str, str]]:
    """(origin URL, XCache URL) of uproot-HZZ.root: the testbed's origin and an XCache before it."""
    env = {"AFKIT_STORAGE_BASE_PORT": STORAGE_BASE}
    state = Path(tempfile.mkdtemp(prefix="afkit-realroot-", dir="/tmp"))
    state.chmod(0o755)  # the daemons run as the xrootd user
    origin = require_env("AFKIT_XROOTD_URL").rstrip("/")
    with origin_dataset("realroot", ("uproot-HZZ.root",)) as name:
        path = f"/{name}/uproot-HZZ.root"
        ok(itsupport.afkit("storage", "up", "xcache", "--state-dir", str(state), env=env))
        try:
            cache = ok(itsupport.afkit("storage", "url", "xcache", path, env=env)).strip()
            yield f"{origin}/{path}", cache
        finally:
            itsupport.afkit("storage", "down", "all", "--state-dir", str(state), env=env)
            shutil.rmtree(state, ignore_errors=True)


@pytest.mark.parametrize(("prof", "tag"), CASES, ids=[t for _p, t in CASES])
def test_real_root_validates_with_a_macro_and_a_compiled_reader(
    images: dict[str, Path], prof: str, tag: str
) -> None:
    sif = images[tag]
    data = manifest(sif)
    assert data["validated"] is True and data["profile"] == prof
    report = ET.parse(sif.with_name(f"{sif.stem}.validate.xml")).getroot()
    cases = {c.get("name"): c for c in report.iter("testcase") if c.get("classname") == "image.proof"}
    for proof in ("root-macro", "compiled-reader"):  # ran (not skipped) and passed
        assert cases[proof].find("skipped") is None and cases[proof].find("failure") is None, proof


@pytest.mark.parametrize(("prof", "tag"), CASES, ids=[t for _p, t in CASES])
def test_macro_and_compiled_reader_read_a_real_file_contained(
    images: dict[str, Path], prof: str, tag: str
) -> None:
    macro = in_image(images[tag], *_macro(f"{PROOF}/HZZ.root"))
    assert macro.returncode == 0 and f"{SUMMARY} (TFile)" in macro.stdout, macro.stdout + macro.stderr
    reader = in_image(images[tag], "sh", f"{PROOF}/compile_reader.sh", f"{PROOF}/HZZ.root", "events", "NMuon")
    assert reader.returncode == 0 and f"{SUMMARY} (TFile)" in reader.stdout, reader.stdout + reader.stderr
    assert in_image(images[tag], "test", "-e", UNUSED[prof]).returncode == 1


@pytest.mark.parametrize(("prof", "tag"), CASES, ids=[t for _p, t in CASES])
def test_pyroot_reads_a_real_file_with_rdataframe_contained(
    images: dict[str, Path], prof: str, tag: str
) -> None:
    """PyROOT (in $ROOTSYS/lib, on the tag's PYTHONPATH) with the base's python3 reads the file."""
    code = (
        "import ROOT; df = ROOT.RDataFrame('events', '" + PROOF + "/HZZ.root'); "
        "print('pyroot', ROOT.gROOT.GetVersion(), df.Count().GetValue(), int(df.Sum('NMuon').GetValue()))"
    )
    proc = in_image(images[tag], "python3", "-c", code)
    assert proc.returncode == 0 and "pyroot 6.40.00 2421 3825" in proc.stdout, proc.stdout + proc.stderr


def test_the_lcg_view_compiles_with_the_compiler_its_setup_sh_sources(images: dict[str, Path]) -> None:
    """cling and the compiled reader use the release's gcc (setup.sh sources releases/gcc/<v>/<os>),
    and ROOTSYS is the hashed install the view's bin/root links to."""
    sif = images["LCG_110"]
    proc = in_image(sif, "sh", "-c", 'command -v c++; c++ -dumpfullversion; echo "$ROOTSYS"')
    assert proc.returncode == 0, proc.stderr
    cxx, version, rootsys = proc.stdout.splitlines()
    assert (cxx, version) == ("/cvmfs/sft.cern.ch/lcg/releases/gcc/12.2.0/x86_64-el9/bin/c++", "12.2.0")
    install = r"/cvmfs/sft\.cern\.ch/lcg/releases/ROOT/6\.40\.00-[0-9a-f]{5}/x86_64-el9-gcc12-opt"
    assert re.fullmatch(install, rootsys), rootsys


@pytest.mark.parametrize(("prof", "tag"), CASES, ids=[t for _p, t in CASES])
def test_root_reads_over_xrootd_from_the_origin_and_through_xcache(
    images: dict[str, Path], served: tuple[str, str], prof: str, tag: str
) -> None:
    origin, cache = served
    for url in (origin, cache):
        proc = in_image(images[tag], *_macro(url))
        out = proc.stdout + proc.stderr
        assert proc.returncode == 0 and f"{SUMMARY} (TNetXNGFile)" in proc.stdout, (url, out)


def test_the_ci_validate_job_reads_over_the_origin_and_xcache(
    images: dict[str, Path], served: tuple[str, str], tmp_path: Path
) -> None:
    """ci/validate.sh with AFKIT_VALIDATE_READ (the validate job's project variable): the macro and
    the compiled reader also open both URLs, each a passing JUnit case."""
    origin, cache = served
    sif = tmp_path / "image.sif"
    os.link(images[CASES[0][1]], sif)  # the job's artifact directory
    env = {**os.environ, "AFKIT_VALIDATE_READ": f"{origin} {cache}"}
    proc = subprocess.run(["ci/validate.sh", "--profile", "alice", "--fingerprint", "", str(sif)], cwd=REPO,
                          env=env, capture_output=True, text=True, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    cases = {c.get("name"): c for c in ET.parse(tmp_path / "image.junit.xml").getroot().iter("testcase")}
    for proof in ("root-macro", "compiled-reader"):
        for url in (origin, cache):
            case = cases[f"{proof} {url}"]
            assert case.find("failure") is None and case.find("skipped") is None, (proof, url)


@pytest.fixture(scope="module")
def broken(
    images: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """`afkit image validate` of a real-ROOT image with the headers gone (an empty directory bound
    over the toolchain's C++ headers and over the base's /usr/include, what an install or a base
    without them gives): (the process, its JUnit report)."""
    work = tmp_path_factory.mktemp("broken")
    (work / "empty").mkdir()
    headers = "/cvmfs/alice.cern.ch/el9-x86_64/Packages/GCC-Toolchain/v12.2.0-alice1-2/include"
    binds = f"--bind {work / 'empty'}:{headers} --bind {work / 'empty'}:/usr/include"
    report = work / "broken.xml"
    env = {**os.environ, "AFKIT_APPTAINER_EXEC_ARGS": binds}
    return afkit("image", "validate", str(images[CASES[0][1]]), "--junit", str(report), env=env), report


def test_a_dead_interpreter_fails_validation_quoting_cling(
    broken: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    proc, report = broken
    assert proc.returncode == 6, proc.stderr[-2000:]
    quoted = "ROOT's interpreter failed: ERROR in cling::CIFactory::createCI(): cannot extract standard"
    assert quoted in proc.stderr
    failures = [f.get("message") or "" for f in ET.parse(report).getroot().iter("failure")]
    assert any(m.startswith(quoted) for m in failures), failures


def test_a_base_without_the_c_headers_fails_naming_its_package(
    broken: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    proc, _report = broken
    assert proc.returncode == 6
    assert (
        "validate FAIL base:/usr/include/stdlib.h the base image lacks /usr/include/stdlib.h "
        "(C library headers, read by cling and the toolchain's c++): install libc6-dev (debian)"
    ) in proc.stderr


ROOT_TAG = "O2Physics/daily-20251126-0000-1"
XRD_FAST = {"XRD_CONNECTIONRETRY": "1", "XRD_REQUESTTIMEOUT": "20"}


def root_campaign(work: Path, name: str, sif: Path, cache_url: str) -> Path:
    """WORK/NAME.yaml: one local site reading uproot-HZZ.root of the origin through the XCache of
    CACHE_URL (a file's URL there) with two clients of the payload root, in the image SIF."""
    cache = urlsplit(cache_url)
    rel = cache.path.lstrip("/")  # the file below the origin's export /
    data_dir = rel.rsplit("/", 1)[0]
    storage = {"origin": {"url": require_env("AFKIT_XROOTD_URL"), "export": "/",
                          "caches": {"xcache": f"{cache.scheme}://{cache.netloc}"}}}  # fmt: skip
    datasets = {"hzz": {"storage": "origin", "files": [rel], "tree": "events",
                        "branches": ["NMuon", "Muon_Px", "Muon_Py", "Muon_Pz"]}}  # fmt: skip
    benchmarks = [{"name": "ana", "type": "analysis", "payload": "root", "root": {"work": "histogram"},
                   "sites": ["wn"], "datasets": ["hzz"], "interval": 0.5,
                   "sweep": {"scenario": ["xcache"], "clients": [2]}}]  # fmt: skip
    return steps_campaign(work, name, {"sif": str(sif)}, data_dir, storage=storage, datasets=datasets,
                          benchmarks=benchmarks, results=str(work / "results"))  # fmt: skip


def test_a_root_payload_campaign_reads_through_xcache_with_the_tags_root(
    images: dict[str, Path], served: tuple[str, str], tmp_path: Path
) -> None:
    """The image's ROOT (TNetXNG) reads the branches over root:// from the XCache; the job records
    carry ROOT's read counts and the events of both clients."""
    cfile = root_campaign(tmp_path, "it-root", images[ROOT_TAG], served[1])
    proc = itsupport.afkit("campaign", "run", str(cfile), env=XRD_FAST)
    [results] = (tmp_path / "results").glob("it-root-*")
    logs = "".join(text_or_empty(p) for p in results.glob("job/ana/*.log"))
    assert proc.returncode == 0, proc.stderr[-3000:] + logs[-3000:]
    assert json.loads((results / "image" / "root.json").read_text())["version"] == "6.40.00"
    [path] = results.glob("job/ana/*.json")
    rec = json.loads(path.read_text())
    assert rec["status"] == "ok", f"{rec.get('error')}\n{text_or_empty(path.with_suffix('.log'))[-3000:]}"
    cache = urlsplit(served[1])
    assert rec["scenario"] == "xcache" and rec["url"].startswith(f"{cache.scheme}://{cache.netloc}/"), rec[
        "url"
    ]
    assert rec["events"] == 2 * 2421  # both clients read the whole tree
    assert rec["root_vector_reads"] >= 2  # one TTreeCache fill (an XRootD vector read) per client at least
    assert rec["root_read_calls"] >= rec["root_vector_reads"]
    assert rec["root_bytes_read"] > rec["bytes"] > 0
    processing = rec["steps"]["processing"]
    assert rec["events"] / processing > 100  # events/s of the job: ROOT, not a stall
    with (results / "aggregate" / "jobs.csv").open() as fh:
        [row] = list(csv.DictReader(fh))
    assert int(row["root_vector_reads"]) == rec["root_vector_reads"] and float(row["events_per_s"]) > 100


def test_a_root_payload_campaign_in_an_image_without_root_is_refused_before_any_job(
    served: tuple[str, str], tmp_path: Path
) -> None:
    """The minimal base's SIF: the images' OS with Python, no tag, no ROOT."""
    cfile = root_campaign(tmp_path, "it-noroot", mkbase("minimal"), served[1])
    proc = itsupport.afkit("campaign", "run", str(cfile), env=XRD_FAST)
    assert proc.returncode == 3, proc.stderr[-3000:]
    assert (
        "has no ROOT (no root.exe on PATH in its environment), but benchmark(s) ana run the image's own"
        in (proc.stderr)
    )
    assert "hint: build the image from a tag with ROOT" in proc.stderr
    [results] = (tmp_path / "results").glob("it-noroot-*")
    assert not list(results.glob("job/**/*.json")) and not list(results.glob("job/**/*.log"))
