"""Studies that run on the host the command runs on (``runner: host``: the disk-server study, the
coordinated-caches study): their facility (the box's parameters, or a sites file's ``params`` and
``image``), their run and their page. The records and the page go to ``results/study-NAME-v1/``
(``data/``, ``study/``), as a campaign study's do; WORKDIR/NAME/facility.json keeps what
``afkit study page`` needs again.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import shutil
from pathlib import Path
from typing import Any

from afkit import yamlio
from afkit.campaign.config import shown
from afkit.errors import ExitCode, InvalidError, NotFoundError
from afkit.study import machine, page
from afkit.study.criteria import NOT_JUDGEABLE, Verdict
from afkit.study.model import Study
from afkit.study.page import NumberRow
from afkit.study.recipe import Facility, keyed, merged_params, save, saved
from afkit.study.writes import Write

SITES_KEYS = ("params", "image")
# per study: its measurements, its evaluation (load, judge, numbers) and its figures (write_all),
# modules of afkit.study; and the box it makes, for the page
MODULES = {
    "prague-diskserver": ("diskserver", "prague", "prague_figures", "a loop device afkit makes"),
    "kit-htda": ("htda", "kit", "kit_figures", "file servers behind shaped links afkit makes"),
}


def _module(study: Study, which: int) -> Any:
    if study.name not in MODULES:
        raise InvalidError(f"study {study.name} has runner: host, but afkit has no measurements for it",
                           hint=f"host studies: {', '.join(MODULES)}")  # fmt: skip
    return importlib.import_module(f"afkit.study.{MODULES[study.name][which]}")


def results_dir(study: Study, key: str = "") -> Path:
    return Path("results") / f"study-{keyed(study, key)}-v1"


def writes(study: Study, fac: Facility, key: str = "") -> list[Write]:
    """What a run writes: the study module's own files (its device, its sources) and the records."""
    sif = fac.image.get("sif")
    own: list[Write] = _module(study, 0).writes(study, fac, Path(str(sif)) if sif else None)
    return [*own, Write("the records, figures and page (small)", results_dir(study, key), 0)]


def facility(study: Study, sites: Path | None, image: Path | None) -> Facility:
    """In the box: the study's box parameters and image (IMAGE instead, if given). With SITES: that
    file's ``params`` (over the study's) and ``image: {sif: PATH}`` (optional: no image, no pattern)."""
    if sites is None:
        box_sif = image or Path(str(study.box.get("image", "")))
        return Facility(
            image={"sif": str(box_sif)},
            sites={},
            storage={},
            roles={},
            params=dict(study.box_params),
            where=f"this host (the box: {MODULES.get(study.name, ('', '', '', 'as the study makes it'))[3]})",
            scaled=True,
        )
    yamlio.require_file(sites, "sites", f"docs/studies.md, study {study.name}")
    data = yamlio.read(sites, "sites")
    if not isinstance(data, dict):
        raise InvalidError(f"{sites}: expected a mapping with keys {', '.join(SITES_KEYS)}")
    extra = sorted(set(data) - set(SITES_KEYS))
    if extra:
        raise InvalidError(
            f"{sites}: unknown keys {', '.join(map(str, extra))}",
            hint=f"study {study.name} runs on this host: its sites file holds params and image",
        )
    params = merged_params(study, data.get("params"), str(sites))
    img = data.get("image") or {}
    if not isinstance(img, dict):
        raise InvalidError(f"{sites}: image: expected a mapping with sif, not {shown(img)}")
    sif = image or (Path(str(img["sif"])) if img.get("sif") else None)
    return Facility(
        image={"sif": str(sif)} if sif else {},
        sites={},
        storage={},
        roles={},
        params=params,
        where=str(sites),
    )


PARTIAL = "data.partial"  # a run's records while it runs; data/ once it has ended


def _replace(results: Path) -> None:
    """RESULTS/data.partial, a run that ended, becomes RESULTS/data; the earlier run's data goes
    only after that (a rename each: at any moment one complete run's records are there)."""
    data, old = results / "data", results / "data.previous"
    shutil.rmtree(old, ignore_errors=True)
    if data.exists():
        data.rename(old)
    (results / PARTIAL).rename(data)
    shutil.rmtree(old, ignore_errors=True)


def run(study: Study, fac: Facility, workdir: Path, key: str = "") -> int:
    """Measure (the study's module of MODULES), then write the page; the exit code. The records are
    written to RESULTS/data.partial and replace RESULTS/data only when the run has ended: an
    interrupted or failed rerun leaves the earlier run's records as they were."""
    measure = _module(study, 0)
    work = workdir / keyed(study, key)
    results = results_dir(study, key)
    fac.facts["results"] = str(results.resolve())
    work.mkdir(parents=True, exist_ok=True)
    save(fac, work / "facility.json")
    sif = fac.image.get("sif")
    partial = results / PARTIAL
    shutil.rmtree(partial, ignore_errors=True)  # afkit's own: a run that was interrupted or failed
    try:
        with machine.watch(partial / machine.NAME, Path.cwd()):
            measure.run(study, fac, partial, Path(str(sif)) if sif else None)
    except KeyboardInterrupt:
        kept = (
            f"the records of the last complete run are kept in {results / 'data'}"
            if (results / "data").is_dir()
            else f"afkit study page {study.name} judges what it measured"
        )
        print(
            "afkit study: interrupted; what the run changed is set back and what it made taken away; "
            f"its records so far are in {partial}; {kept}",
            flush=True,
        )
        return ExitCode.INTERRUPTED
    _replace(results)
    print(make_page(study, fac, results))
    return ExitCode.OK


def page_again(study: Study, workdir: Path, key: str = "") -> Path:
    fac = saved(study, workdir / keyed(study, key) / "facility.json")
    return make_page(study, fac, Path(str(fac.facts.get("results", results_dir(study, key)))))


def _image_provenance(fac: Facility) -> tuple[str, str]:
    """(sha256, tag) of the facility's image from its builder's manifest beside it, else ('', '')."""
    sif = fac.image.get("sif")
    if not sif:
        return "", ""
    manifest = Path(str(sif)).resolve().with_suffix(".json")
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "", ""
    return str(data.get("sif_sha256", "")), str(data.get("tag", ""))


def interrupted_verdicts(verdicts: dict[str, Verdict], partial: Path) -> dict[str, Verdict]:
    """The verdicts of an interrupted run: those it could not judge name the interrupt as why."""
    why = f"the run was interrupted (its records: {partial}); "
    return {
        k: Verdict(v.status, why + v.measured, v.criterion, v.values) if v.status == NOT_JUDGEABLE else v
        for k, v in verdicts.items()
    }


def make_page(study: Study, fac: Facility, results: Path) -> Path:
    """The page of the last complete run (RESULTS/data), else of an interrupted one
    (RESULTS/data.partial: what it measured judged, the rest not judgeable for the interrupt)."""
    evaluation, figures_of = _module(study, 1), _module(study, 2)
    data = results / "data"
    cut = not data.is_dir() and (results / PARTIAL).is_dir()
    if cut:
        data = results / PARTIAL
    m = evaluation.load(data)
    if not m.runs and not getattr(m, "traces", None):
        raise NotFoundError(
            f"no records of study {study.name} in {data}",
            hint=f"run it first: afkit study run {study.name}",
        )
    verdicts = evaluation.judge(study, m)
    if cut:
        verdicts = interrupted_verdicts(verdicts, data)
    numbers = [NumberRow(*n) for n in evaluation.numbers(study, m, verdicts)]
    out = results / "study"
    for old in out.glob("*.png"):  # the page's own figures of an earlier page: drawn again below
        old.unlink()
    figures = figures_of.write_all(study, m, out)
    conf = hashlib.sha256(json.dumps(fac.params, sort_keys=True, default=str).encode()).hexdigest()[:16]
    sha, tag = _image_provenance(fac)
    prov = page.provenance(f"study-{study.name}", conf, sha, tag)
    if "device" in m.setup:
        prov["device"] = json.dumps(m.setup["device"], default=str)[:400]
    prov["kernel"] = str(m.setup.get("kernel", ""))
    facts = machine.read(data / machine.NAME)
    return page.render(study, fac, verdicts, numbers, figures, prov, out, facts)
