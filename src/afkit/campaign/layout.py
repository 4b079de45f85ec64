"""Where a campaign's results are: every path under ``RESULTS/NAME-vVERSION/`` comes from here.

One object, :class:`ResultsLayout`, names the files of a campaign's results folder, for the
Python code and the workflow (``rules/common.smk``) alike; no other module spells a path inside
it. Paths are strings as the workflow names them (relative to the working directory when the
campaign's ``results`` is relative): they are Snakemake's outputs, the job specs' ``record`` and
``log``, and the targets afkit hands snakemake, so the same string everywhere.

The folder is keyed by the campaign's name and ``version``, not by a hash of its contents: a
campaign edited (a tree name fixed, a sweep point added) keeps its folder, so that the jobs whose
spec did not change keep their records (docs/campaigns.md, "Changing a campaign"). Bump
``version`` (or rename the campaign) to start a new folder beside the old one.

Standard library only: the job core on a batch worker may import it.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path


def folder_name(name: str, version: object) -> str:
    """The results folder of campaign NAME at VERSION: ``NAME-vVERSION``."""
    return f"{name}-v{version}"


@dataclass(frozen=True)
class ResultsLayout:
    """The files of one campaign's results folder ROOT (``RESULTS/NAME-vVERSION``)."""

    root: str

    @classmethod
    def at(cls, results: str | Path, name: str, version: object) -> ResultsLayout:
        """The layout of campaign NAME at VERSION under the results root RESULTS."""
        return cls(str(Path(results) / folder_name(name, version)))

    @property
    def path(self) -> Path:
        return Path(self.root)

    @property
    def batch_tag(self) -> str:
        """The mark on every batch job of this campaign (a SLURM job-name prefix, an HTCondor job
        attribute; afkit.campaign.executors), by which an interrupt finds and cancels them all:
        ``afkit-NAME-vVERSION-HASH``, HASH of the folder's absolute path (two checkouts running the
        same campaign are two campaigns), at most 50 of [A-Za-z0-9_-] (the SLURM plugin's limit)."""
        digest = hashlib.sha256(str(self.path.resolve()).encode()).hexdigest()[:10]
        name = re.sub(r"[^A-Za-z0-9_-]", "-", self.path.name)[:32]
        return f"afkit-{name}-{digest}"

    # the campaign as planning saw it (inputs of the rules that depend on part of it)
    @property
    def plan_file(self) -> str:
        """The campaign planned once for a run (afkit.campaign.runplan): the validated campaign and
        its jobs, which the workflow and its steps read instead of planning again."""
        return f"{self.root}/plan/campaign.plan.json"

    @property
    def plan_image(self) -> str:
        """The campaign's ``image`` key (and where its relative paths are taken from): rule image's
        input, rewritten only when it changed."""
        return f"{self.root}/plan/image.json"

    def plan_dataset(self, dataset: str) -> str:
        """What dataset DATASET's manifest is made from: rule dataset's input."""
        return f"{self.root}/plan/dataset/{dataset}.json"

    # the image
    @property
    def image_json(self) -> str:
        return f"{self.root}/image/image.json"

    @property
    def image_log(self) -> str:
        return f"{self.root}/image/image.log"

    @property
    def image_root_json(self) -> str:
        return f"{self.root}/image/root.json"

    @property
    def image_root_log(self) -> str:
        return f"{self.root}/image/root.log"

    @property
    def image_dir(self) -> str:
        return f"{self.root}/image"

    # datasets
    def dataset(self, dataset: str) -> str:
        return f"{self.root}/dataset/{dataset}.json"

    def dataset_log(self, dataset: str) -> str:
        return f"{self.root}/dataset/{dataset}.log"

    def ready(self, dataset: str) -> str:
        """Marks dataset DATASET ready for its jobs: the image (and its ROOT check) and the
        dataset's manifest made (rule ``ready``: one input of a job instead of each of them)."""
        return f"{self.root}/dataset/{dataset}.ready"

    def ready_log(self, dataset: str) -> str:
        return f"{self.root}/dataset/{dataset}.ready.log"

    # jobs
    @property
    def specs_dir(self) -> str:
        return f"{self.root}/jobspec"

    def spec(self, bench: str, job_id: str) -> str:
        """A job's spec (afkit.campaign.contract.JobSpec), written by planning."""
        return f"{self.root}/jobspec/{bench}/{job_id}.json"

    @property
    def records_dir(self) -> str:
        return f"{self.root}/job"

    def record(self, bench: str, job_id: str) -> str:
        """A job's record (afkit.campaign.contract.JobRecord); its log is beside it."""
        return f"{self.root}/job/{bench}/{job_id}.json"

    def record_log(self, bench: str, job_id: str) -> str:
        return f"{self.root}/job/{bench}/{job_id}.log"

    def wave_done(self, bench: str, wave: str) -> str:
        return f"{self.root}/wave/{bench}/{wave}.done"

    def wave_log(self, bench: str, wave: str) -> str:
        return f"{self.root}/wave/{bench}/{wave}.log"

    def jobcore(self, name: str) -> str:
        """afkit's package for a site without the submit host's files (afkit.campaign.jobcore)."""
        return f"{self.root}/jobcore/{name}"

    @property
    def jobcore_log(self) -> str:
        return f"{self.root}/jobcore/jobcore.log"

    # tables and report
    @property
    def jobs_csv(self) -> str:
        return f"{self.root}/aggregate/jobs.csv"

    @property
    def intervals_csv(self) -> str:
        return f"{self.root}/aggregate/intervals.csv"

    @property
    def aggregate_log(self) -> str:
        return f"{self.root}/aggregate/aggregate.log"

    @property
    def report_dir(self) -> str:
        return f"{self.root}/report"

    @property
    def report_html(self) -> str:
        return f"{self.root}/report/report.html"

    @property
    def figures(self) -> str:
        return f"{self.root}/report/figures"

    @property
    def report_log(self) -> str:
        return f"{self.root}/report/report.log"
