"""The bodies of the workflow's ``run:`` directives (one call each, so the rules stay short).

Each takes Snakemake's ``input``/``output``/``params``/``log`` objects.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from afkit.errors import AfkitError, ExitCode

if TYPE_CHECKING:
    from afkit.campaign.config import CampaignConfig


def exit_with(err: AfkitError) -> NoReturn:
    """Stop snakemake with afkit's message and exit code (snakemake passes SystemExit through)."""
    from afkit.cli import print_error

    raise SystemExit(print_error(err))


def on_start(workflow: Any, campaign: Any, site: str | None) -> None:
    """The workflow's onstart (main snakemake process, not dry runs): executor and dataset checks,
    then interrupts that cut jobs off cleanly."""
    from afkit.campaign import interrupt, preflight

    if not workflow.is_main_process or workflow.dryrun or workflow.touch:
        return
    try:
        preflight.check_executor(campaign, workflow.executor_plugin.name, site)
        preflight.check_datasets(campaign)
    except AfkitError as err:
        exit_with(err)
    interrupt.install()


def on_error(records: list[str]) -> None:
    """The workflow's onerror: an interrupted campaign exits 130 (snakemake itself says 1), saying
    how many of the job RECORDS in scope are missing (a job with its record was not cut off)."""
    from afkit.campaign import interrupt

    if interrupt.interrupted():
        print(interrupted_message(records), file=sys.stderr)
        raise SystemExit(int(ExitCode.INTERRUPTED))


def interrupted_message(records: list[str]) -> str:
    missing = sum(1 for r in records if not Path(r).is_file())
    if not missing:
        return f"afkit: interrupted: all {len(records)} jobs have their record; nothing was cut off"
    return (f"afkit: interrupted: {missing} of {len(records)} jobs have no record (cut off or not started); "
            "run the same command again to redo them")  # fmt: skip


def image(output: Any, params: Any, log: Any) -> None:
    from afkit.campaign.image import resolve_image

    out = str(output[0])
    workdir = str(Path(out).parent)
    resolve_image(params.image, base_dir=params.base_dir, workdir=workdir, output=out, log=log[0])


def dataset_needs_image(cfg: CampaignConfig, name: str) -> bool:
    """Whether dataset NAME is written by the image's ROOT (generate.kind ao2d or esd)."""
    from afkit.campaign.dataset import ROOT_KINDS

    return cfg["datasets"][name].get("generate", {}).get("kind") in ROOT_KINDS


def dataset_apptainer_args(cfg: CampaignConfig, name: str) -> list[str]:
    from afkit.campaign.dataset import apptainer_args_for

    return apptainer_args_for(cfg, name)


def image_root(input: Any, output: Any, params: Any, log: Any) -> None:
    from afkit.campaign.contract import ImageInfo
    from afkit.campaign.image import check_root

    check_root(ImageInfo.read(Path(input[0])), params.benchmarks, output=Path(output[0]), log=Path(log[0]))


def dataset(wildcards: Any, input: Any, output: Any, params: Any, log: Any) -> None:
    from afkit.campaign.dataset import prepare

    image = getattr(input, "image", None)
    prepare(wildcards.dataset, params.spec, params.storage, output=output[0], log=log[0],
            image=str(image) if image else None, apptainer_args=params.apptainer_args)  # fmt: skip


def jobcore(output: Any, log: Any) -> None:
    from afkit.campaign import jobcore as core

    core.pack(Path(output[0]))
    Path(log[0]).write_text(f"packed {core.__name__.split('.')[0]} into {output[0]}\n", encoding="utf-8")


def aggregate(input: Any, output: Any, log: Any) -> None:
    from afkit.campaign.aggregate import aggregate as agg
    from afkit.campaign.aggregate import load_records

    rows = agg(load_records(Path(p) for p in input), Path(output.jobs), Path(output.intervals))
    bad = sum(1 for r in rows if r["status"] != "ok")
    Path(log[0]).write_text(f"{len(rows)} jobs, {bad} not ok\n", encoding="utf-8")


def report(input: Any, output: Any, log: Any) -> None:
    from afkit.campaign.report import render_tables

    html = Path(output.html)
    render_tables(Path(input.jobs), Path(input.intervals), html.parent, figures_dir=Path(output.figures))
    Path(log[0]).write_text(f"wrote {html}\n", encoding="utf-8")
