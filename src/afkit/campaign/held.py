"""Held HTCondor jobs: after a grace they fail with a record (snakemake_executor_plugin_afkit_htcondor).

A job HTCondor holds (an input or output transfer failed, a policy, ``condor_hold``) would sit in
the queue until someone releases or removes it; upstream's executor waits 4 hours by default.
afkit's executor removes it after the site's ``held_grace`` seconds and writes the job's record
here, with ``status: failed`` and the hold reason in ``error``: the campaign goes on, the report
marks the cell and ``afkit campaign retry --failed`` redoes the job.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from afkit.campaign.contract import ImageInfo, JobSpec
from afkit.campaign.job import held_record

DEFAULT_GRACE = 120  # seconds; the campaign schema's sites.*.held_grace default
JOB_RULE = "job"  # workflows/rules/jobs.smk: one record per batch job


def write_record(sm_job: Any, batch_job_id: str, reason: str, held_s: float) -> str:
    """Write the failed record of snakemake job SM_JOB (rule ``job``); return its path, or "" when
    the job is not a benchmark job (image, dataset: snakemake reports those failed itself)."""
    if getattr(sm_job, "is_group", lambda: False)() or getattr(sm_job, "name", "") != JOB_RULE:
        return ""
    output = Path(str(sm_job.output[0]))
    spec = JobSpec.read(Path(str(sm_job.input.spec)))
    image = ImageInfo.read(Path(spec.image))  # the image's description, as the spec names it
    rec = held_record(spec, image=image, batch_job_id=batch_job_id, reason=reason, held_s=held_s)
    output.parent.mkdir(parents=True, exist_ok=True)
    rec.write(output)
    return str(output)
