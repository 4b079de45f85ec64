"""The ``htcondor`` executor: a site's jobs go to the HTCondor schedd through afkit's plugin
``afkit-htcondor`` (src/snakemake_executor_plugin_afkit_htcondor, workflows/profiles/htcondor).

Site keys only it acts on: ``requirements`` (the jobs' requirements expression; the testbed
federation's execute nodes also ask for ``+WantAfkitSite``) and ``shared_fs: false`` (HTCondor file
transfer: the job wrapper ``workflows/scripts/htcondor-sandbox-job`` runs afkit's job core in the
job's sandbox). A job knows it runs here from HTCondor's job ad (``$_CONDOR_JOB_AD``: cluster and
proc id) and its site from the machine ad's ``AFKIT_SITE`` (``$_CONDOR_MACHINE_AD``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from afkit.campaign.executors.base import (
    BatchJob,
    Plain,
    Site,
    SiteKey,
    output_lines,
    output_words,
    own_key,
    run_quietly,
)

NAME = "htcondor"
# the job ad attribute that marks a campaign's jobs (ResultsLayout.batch_tag)
TAG_ATTRIBUTE = "AfkitCampaign"
# condor_q's JobStatus as condor_q prints it (1 idle ... 7 suspended); 4, completed, has ended
STATUS = {"1": "I", "2": "R", "3": "X", "5": "H", "6": ">", "7": "S"}


def read_ad(path: str) -> dict[str, str]:
    """A ClassAd file (HTCondor's job or machine ad) as attribute -> value, strings unquoted."""
    ad: dict[str, str] = {}
    try:
        for line in Path(path).read_text(encoding="utf-8", errors="replace").splitlines():
            key, sep, value = line.partition(" = ")
            if sep:
                ad[key.strip()] = value.strip().strip('"')
    except OSError:
        pass
    return ad


class HTCondor(Plain):
    name = NAME
    plugin = "afkit-htcondor"
    batch = True
    site_keys: Mapping[str, SiteKey] = {
        "requirements": own_key(
            "requirements",
            'htcondor only: the jobs\' HTCondor requirements expression, e.g. AFKIT_SITE == "gsi" (the '
            "testbed federation's execute nodes advertise their site so; the jobs also get "
            "+WantAfkitSite = true, which those nodes' START expression asks for)",
            minLength=1,
        ),
        "shared_fs": SiteKey(
            used=lambda value: value is False,
            refusal="sites.{site}.shared_fs: false needs executor '{owner}' (HTCondor file transfer); "
            "'{executor}' jobs read and write the submit host's files",
        ),
        "image_cache": own_key(
            "image_cache",
            "htcondor only, with shared_fs: false: the directory on each worker node where the site's jobs "
            "keep the images they pull, one pull per node and image (afkit.campaign.imagecache; default "
            "/var/tmp/afkit-USER/images, USER the job's account), or off: each job pulls the image into "
            "its own sandbox. The record's image_cache says hit, miss, off or unusable",
            pattern="^(/.*|off)$",
        ),
    }
    submitted = re.compile(r"submitted to HTCondor Cluster ID (\d+)")

    def site_call(self, site: Site) -> tuple[list[str], list[str]]:
        resources: list[str] = []
        if site.get("requirements"):
            # the testbed federation's execute nodes start only jobs that want a site (docs/federation.md)
            resources += [f"job:requirements={site['requirements']!r}", "job:classad_WantAfkitSite=True"]
        options: list[str] = []
        if not site.get("shared_fs", True):
            # the plugin transfers the job's inputs (among them afkit's job core and the job's spec)
            # and its record (--shared-fs-usage none); the job wrapper, transferred as the job's
            # executable, runs the job core without snakemake (workflows/scripts/htcondor-sandbox-job,
            # afkit.campaign.jobcore). The workflow's own files are not needed there: the prefix keeps
            # the plugin from transferring the Snakefile (named absolute and relative to the submit
            # directory); the worker may or may not see that directory, nothing there reads it.
            from afkit.paths import workflow_files

            files = workflow_files()
            software = [str(files.root), os.path.relpath(files.root)]
            resources.append(f"job:job_wrapper={str(files.sandbox_wrapper)!r}")
            options += ["--shared-fs-usage", "none"]
            options += ["--afkit-htcondor-shared-fs-prefixes", ",".join(software)]
        return resources, options

    def call_options(self, sites: Sequence[Site]) -> list[str]:
        # held jobs fail after the shortest of the sites' held_grace (the schema's default filled in)
        return ["--afkit-htcondor-held-timeout", str(min(s["held_grace"] for s in sites))]

    def identity(self, env: Mapping[str, str]) -> str | None:
        ad_path = env.get("_CONDOR_JOB_AD")
        if not ad_path:
            return None
        ad = read_ad(ad_path)
        return f"{ad['ClusterId']}.{ad.get('ProcId', '0')}" if "ClusterId" in ad else ""

    def worker_site(self, env: Mapping[str, str]) -> str | None:
        machine_ad = env.get("_CONDOR_MACHINE_AD")
        return read_ad(machine_ad).get("AFKIT_SITE", "") if machine_ad else None

    def queued(self, ids: Iterable[str]) -> int | None:
        out = output_words(["condor_q", "-af", "ClusterId", *ids])
        return None if out is None else len(out)

    def cancel(self, ids: Iterable[str]) -> None:
        ids = list(ids)
        if ids:
            run_quietly(["condor_rm", *ids])

    def tagged(self, tag: str) -> tuple[list[str], list[str]]:
        # classad_NAME resources become +NAME = "VALUE" in the submit description
        # (snakemake-executor-plugin-htcondor 0.3.0, __init__.py)
        return [f"job:classad_{TAG_ATTRIBUTE}={tag!r}"], []

    def active(self, tag: str) -> list[BatchJob] | None:
        # a removed job stays in the queue (X) until its starter has killed it
        lines = output_lines(["condor_q", "-constraint", _tag_constraint(tag),
                              "-af", "ClusterId", "ProcId", "JobStatus", "RemoteHost"])  # fmt: skip
        if lines is None:
            return None
        jobs = []
        for line in lines:
            words = line.split()
            if len(words) >= 3 and words[2] in STATUS:
                node = words[3] if len(words) > 3 and words[3] != "undefined" else ""
                jobs.append(BatchJob(f"{words[0]}.{words[1]}", STATUS[words[2]], node))
        return jobs


def _tag_constraint(tag: str) -> str:
    return f'{TAG_ATTRIBUTE} == "{tag}"'


EXECUTOR = HTCondor()
