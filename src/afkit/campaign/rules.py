"""What the workflow's rules run, besides the job: the commands ``afkit campaign image``,
``image-root``, ``dataset``, ``jobcore``, ``aggregate -o`` and ``render`` (each rule's ``shell:``,
so any step can be rerun by hand from the command ``snakemake -p`` shows), and the workflow's
onstart/onerror handlers.

The commands take files (the campaign file, ``image.json``, the tables) and the paths of their
outputs and log, never snakemake objects; an error is an AfkitError (one line, a hint, its exit code).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from afkit.errors import AfkitError, ExitCode, NotFoundError, UsageError

if TYPE_CHECKING:
    from afkit.campaign.config import Campaign, CampaignConfig
    from afkit.campaign.dataset import Door


def exit_with(err: AfkitError) -> NoReturn:
    """Stop snakemake with afkit's message and exit code (snakemake passes SystemExit through)."""
    from afkit.cli import print_error

    raise SystemExit(print_error(err))


def record_targets(records: list[str], tables: list[str]) -> list[str]:
    """The job records that must be targets of the workflow besides its report: none while one of
    the TABLES (rule aggregate's outputs, whose inputs are all the RECORDS) is missing, for then the
    aggregate runs and needs every record; else the RECORDS missing on disk (a record deleted after
    the tables were made: Snakemake does not redo a missing input of a job whose outputs are up to
    date, so such a record is redone only as a target). 10,000 records as targets cost a dry run
    ~0.8 s of Snakemake's DAG work (bench/campaign_planning.py), paid now only for those missing."""
    if not all(os.path.exists(t) for t in tables):
        return []
    return [r for r in records if not os.path.exists(r)]


def on_start(workflow: Any, campaign: Any, site: str | None, *, datasets_checked: bool = False) -> None:
    """The workflow's onstart (main snakemake process, not dry runs): executor and dataset checks
    (the datasets not when DATASETS_CHECKED: afkit campaign run checked them before its first
    call), then interrupts that cut jobs off cleanly."""
    from afkit.campaign import interrupt, preflight

    if not workflow.is_main_process or workflow.dryrun or workflow.touch:
        return
    try:
        preflight.check_executor(campaign, workflow.executor_plugin.name, site)
        if not datasets_checked:
            preflight.check_datasets(campaign)
    except AfkitError as err:
        exit_with(err)
    interrupt.install()


def on_error(records: list[str]) -> None:
    """The workflow's onerror: an interrupted campaign exits 130 (snakemake itself says 1), saying
    how many of the job RECORDS in scope are missing (a job with its record was not cut off)."""
    from afkit.campaign import interrupt

    if interrupt.interrupted():
        # under afkit campaign run/retry, afkit says it once the batch jobs are gone (afkit.campaign.stop)
        if not os.environ.get("AFKIT_RUNNER"):
            print(interrupted_message(records), file=sys.stderr)
        raise SystemExit(int(ExitCode.INTERRUPTED))


def interrupted_message(records: list[str]) -> str:
    missing = sum(1 for r in records if not Path(r).is_file())
    if not missing:
        return f"afkit: interrupted: all {len(records)} jobs have their record; nothing was cut off"
    return (f"afkit: interrupted: {missing} of {len(records)} jobs have no record (cut off or not started); "
            "run the same command again to redo them")  # fmt: skip


def need_file(path: Path, what: str, hint: str) -> Path:
    """PATH, which must be a file (else NotFoundError, exit 5, naming WHAT, with HINT)."""
    if not path.is_file():
        raise NotFoundError(f"no {what}: {path}", hint=hint)
    return path


def _log_beside(output: Path, log: Path | None) -> Path:
    """The log (default: OUTPUT with .log), its folder and OUTPUT's made."""
    log = log or output.with_suffix(".log")
    for p in (output, log):
        p.parent.mkdir(parents=True, exist_ok=True)
    return log


def image(campaign: Campaign, output: Path | None, log: Path | None) -> Path:
    """``afkit campaign image``: the campaign's image (a SIF, pulled, or built from its tag; its
    signature checked) described in OUTPUT (default RESULTS/image/image.json), the builder's or
    puller's log in LOG (default image.log beside it)."""
    from afkit.campaign.image import resolve_image

    out = output or Path(campaign.layout.image_json)
    log = _log_beside(out, log)
    resolve_image(campaign.config["image"], base_dir=str(campaign.base_dir), workdir=str(out.parent),
                  output=str(out), log=str(log))  # fmt: skip
    return out


def image_root(image_json: Path, benchmarks: list[str], output: Path | None, log: Path | None) -> Path:
    """``afkit campaign image-root``: the image of IMAGE_JSON has ROOT (root.exe on its PATH) for
    BENCHMARKS (payload: root): OUTPUT (default root.json beside IMAGE_JSON) says where and which
    version; else exit 3 with the refusal in refused.json beside it."""
    from afkit.campaign.contract import ImageInfo
    from afkit.campaign.image import check_root

    hint = "make it first: afkit campaign image C.yaml"
    info = ImageInfo.read(need_file(image_json, "image description", hint))
    out = output or image_json.with_name("root.json")
    check_root(info, benchmarks, output=out, log=_log_beside(out, log))
    return out


def dataset_needs_image(cfg: CampaignConfig, name: str) -> bool:
    """Whether dataset NAME is written by the image's ROOT (generate.kind ao2d or esd)."""
    from afkit.campaign.dataset import ROOT_KINDS

    return cfg["datasets"][name].get("generate", {}).get("kind") in ROOT_KINDS


def dataset(campaign: Campaign, name: str, image_json: Path | None, output: Path | None,
            log: Path | None) -> Path:  # fmt: skip
    """``afkit campaign dataset``: dataset NAME's manifest OUTPUT (default RESULTS/dataset/NAME.json),
    its files generated first when it has ``generate:`` (ao2d/esd by the ROOT of the image that
    IMAGE_JSON describes, default RESULTS/image/image.json)."""
    from afkit.campaign.dataset import apptainer_args_for, prepare

    cfg = campaign.config
    if name not in cfg["datasets"]:
        raise UsageError(f"no dataset {name!r} in the campaign; its datasets: {', '.join(cfg['datasets'])}")
    image = None
    if dataset_needs_image(cfg, name):
        hint = f"dataset {name} is written by the image's ROOT: afkit campaign image C.yaml first"
        given = image_json or Path(campaign.layout.image_json)
        image = need_file(given, "image description", hint)
    out = output or Path(campaign.layout.dataset(name))
    spec = cfg["datasets"][name]
    store = cfg["storage"][spec["storage"]]
    door = _door(campaign, spec["storage"])
    prepare(name, spec, store, output=str(out), log=str(_log_beside(out, log)),
            image=str(image) if image else None, apptainer_args=apptainer_args_for(cfg, name),
            door=door)  # fmt: skip
    return out


def _door(campaign: Campaign, storage: str) -> Door | None:
    """A guarded storage's door (this process's XRootD client then presents its credential), else
    None. Not a check of the token's scopes: the campaign's run made it before any job; here, a
    step run by hand, the server is the judge."""
    from afkit.campaign import credentials
    from afkit.campaign.dataset import Door

    cred = credentials.of(campaign).get(storage)
    if cred is None:
        return None
    os.environ.update(cred.client_env())
    store = campaign.config["storage"][storage]
    return Door(store["url"], store["export"], cred.spec())


def jobcore(output: Path, log: Path | None) -> Path:
    """``afkit campaign jobcore``: afkit's package as the zip OUTPUT (the job core of a site without
    the submit host's files), a line in LOG."""
    from afkit.atomic import write_atomic
    from afkit.campaign import jobcore as core

    log = _log_beside(output, log)
    core.pack(output)
    write_atomic(log, f"packed {core.__name__.split('.')[0]} into {output}\n", mode=0o644)
    return output


def render(jobs_csv: Path, intervals_csv: Path, output: Path, figures: Path | None, log: Path | None,
           grouping: str = "target") -> Path:  # fmt: skip
    """``afkit campaign render``: the HTML report OUTPUT (named report.html) and its figures
    (FIGURES, default figures/ beside it) from the tables JOBS_CSV and INTERVALS_CSV."""
    from afkit.atomic import write_atomic
    from afkit.campaign.report import render_tables

    if output.name != "report.html":
        raise UsageError(f"-o {output}: the report is written as report.html", hint="give -o DIR/report.html")
    hint = "make the tables first: afkit campaign aggregate C.yaml"
    jobs = need_file(jobs_csv, "jobs table", hint)
    intervals = need_file(intervals_csv, "intervals table", hint)
    log = _log_beside(output, log)
    html = render_tables(jobs, intervals, output.parent, grouping=grouping, figures_dir=figures)
    write_atomic(log, f"wrote {html}\n", mode=0o644)
    return html
