# Helpers shared by the rules: the campaign planned once (validated: defaults, schema, references;
# expanded into its jobs), each job's spec (written once, here), input functions.
import shlex
import sys
from pathlib import Path
from types import SimpleNamespace

from afkit.campaign import executors as afkit_executors
from afkit.campaign import jobcore as afkit_jobcore
from afkit.campaign import plan as afkit_plan
from afkit.campaign import rules as afkit_rules
from afkit.campaign.config import Campaign, validate as afkit_validate
from afkit.campaign.runplan import RunPlan
from afkit.errors import AfkitError, UsageError
from afkit.paths import workflow_files

# The default campaign (the Snakemake workflow catalog's config/config.yaml): used when no
# --configfile is given, so `snakemake --profile profiles/local -n` from workflows/ plans it;
# --config KEY=VALUE still overrides its keys. Loaded only then, not with the `configfile:`
# directive: that would deep-merge the default into every --configfile campaign.
DEFAULT_CAMPAIGN = workflow_files().default_campaign
if not workflow.configfiles and DEFAULT_CAMPAIGN.is_file():
    workflow.configfile(str(DEFAULT_CAMPAIGN))

# Run-control keys (not part of the campaign): --config afkit_site=SITE makes the default target that
# site's job records (a campaign over sites with different executors runs once per site);
# afkit_plan=PLAN_FILE is the campaign as `afkit campaign run` planned it (afkit.campaign.runplan).
CONTROL = {k: config.pop(k) for k in list(config) if k.startswith("afkit_")}
PLAN_FILE = CONTROL.get("afkit_plan")


def _campaign_dir():
    files = [Path(f) for f in workflow.configfiles]
    # symlinks kept, as config.load does (afkit.paths.beside)
    return files[-1].absolute().parent if files else Path.cwd()


if not config:
    afkit_rules.exit_with(
        UsageError(
            f"no campaign given and no default campaign {DEFAULT_CAMPAIGN}",
            hint="snakemake -s workflows/Snakefile --configfile CAMPAIGN.yaml (examples: workflows/config/)",
        )
    )
# The campaign planned once: read from the plan file `afkit campaign run` wrote (it validated and
# expanded the campaign), else validated and expanded here: the campaign as snakemake merged it
# (--configfile files, --config keys), its relative paths beside the last config file.
try:
    if PLAN_FILE:
        PLANNED = RunPlan.read(Path(PLAN_FILE))
    else:
        PLANNED = RunPlan.make(
            Campaign(afkit_validate(dict(config), source="campaign"), _campaign_dir())
        )
except AfkitError as err:
    afkit_rules.exit_with(err)
CAMPAIGN = PLANNED.campaign
JOBS = list(PLANNED.jobs)

CFG = CAMPAIGN.config
# every path of the campaign's results (afkit.campaign.layout): RESULTS/NAME-vVERSION/...
LAYOUT = CAMPAIGN.layout
RESULTS = LAYOUT.root
SITE_FILTER = CONTROL.get("afkit_site")
if SITE_FILTER is not None and SITE_FILTER not in CFG["sites"]:
    afkit_rules.exit_with(
        UsageError(
            f"--config afkit_site={SITE_FILTER}: unknown site; allowed: {', '.join(CFG['sites'])}"
        )
    )
# A dry run (snakemake -n, afkit campaign run --dry-run) writes nothing. Snakemake parses the
# workflow before it picks its executor, so the command line's -n (output settings) tells it here.
DRY_RUN = (
    bool(workflow.output_settings and workflow.output_settings.dryrun)
    or workflow.dryrun
)
# each job's spec (afkit.campaign.contract.JobSpec), the one input its command reads: written by
# planning, here, once (an unchanged spec is not rewritten: its job does not rerun). A dry run
# declares the specs that exist (a run before wrote them), so that it sees the jobs as a run will;
# a job planned for the first time has none yet.
# What the image and each dataset's manifest are made from (RESULTS/plan/image.json,
# plan/dataset/NAME.json: inputs of rules image and dataset) likewise: an edit of the campaign
# redoes the image or a manifest (and the jobs reading it) only when it changed what they are
# made from; the results folder is the campaign's across edits (docs/campaigns.md, "Changing a
# campaign").
# The plan file (RESULTS/plan/campaign.plan.json) is what the rules' commands (afkit campaign
# image/dataset/aggregate ...) read: written here when snakemake planned (afkit campaign run wrote
# it itself), not on a dry run; its path stays the same across edits of the campaign (a parameter
# of the rules: one that changes reruns them).
if workflow.is_main_process and not DRY_RUN:
    afkit_plan.write_specs(CAMPAIGN, JOBS, RESULTS)
    afkit_plan.write_inputs(CAMPAIGN, RESULTS)
    if not PLAN_FILE:
        PLANNED.write()
CAMPAIGN_ARGS = [LAYOUT.plan_file]
SPECS_THERE = (
    afkit_plan.present_specs(JOBS, RESULTS)
    if DRY_RUN
    else {(j.bench, j.id) for j in JOBS}
)
# the rules' command: this snakemake's python runs afkit (the same installation), named by a
# variable set in the shell's prefix: the rule's code (a rerun trigger) stays the same whichever
# path of the interpreter started snakemake
shell.prefix(f"set -euo pipefail; export AFKIT_PYTHON={shlex.quote(sys.executable)}; ")
AFKIT = '"$AFKIT_PYTHON" -m afkit'
# a step's command prints what it made on stdout: its rule sends that to stderr, so that the
# workflow's stdout stays that of `afkit campaign run` (the report's path, nothing else)

JOB_BY_ID = afkit_plan.by_id(JOBS)
PREVIOUS = afkit_plan.previous_waves(JOBS)
WAVES = afkit_plan.wave_members(JOBS)


def job_record(job):
    return LAYOUT.record(job.bench, job.id)


def wave_done(bench, wave):
    return LAYOUT.wave_done(bench, wave)


def planned_input(path):
    """PATH, an input that planning writes: on a dry run only when a run before wrote it."""
    return path if not DRY_RUN or Path(path).is_file() else []


def wave_records(wildcards):
    return [job_record(j) for j in WAVES[(wildcards.bench, wildcards.wave)]]


def all_job_records(site=None):
    return [job_record(j) for j in JOBS if site is None or j.site == site]


def the_job(wildcards):
    key = (wildcards.bench, wildcards.job)
    if key not in JOB_BY_ID:
        raise ValueError(
            f"no job {wildcards.job} in benchmark {wildcards.bench} of this campaign"
        )
    return JOB_BY_ID[key]


def default_targets():
    """The whole campaign: the report, and the job records deleted since the tables were made (a
    deleted record is redone, and the tables after it: afkit_rules.record_targets); with
    afkit_site: that site's job records only (afkit makes the report).
    """
    if SITE_FILTER is not None:
        return all_job_records(SITE_FILTER)
    tables = [LAYOUT.jobs_csv, LAYOUT.intervals_csv]
    return [*afkit_rules.record_targets(all_job_records(), tables), LAYOUT.report_html]


# Waves on local-executor sites run as one snakemake job each (wave_local_N in rules/jobs.smk);
# the local executor has no job groups, and a wave whose jobs are separate snakemake jobs gets its
# slots one by one as other jobs free them (docs/federation.md, "Wave start skew").
LOCAL_SITES = sorted(
    s for s, v in CFG["sites"].items() if not afkit_executors.get(v["executor"]).batch
)
LOCAL_WAVE_SIZES = sorted(
    {
        j.wave_size
        for (_b, _w), js in WAVES.items()
        for j in js
        if j.site in LOCAL_SITES and j.wave_size > 1
    }
)


def local_wave_pattern(size):
    """The ids of the waves of SIZE jobs (a regex) at a local site, the wave wildcard of wave_local_N."""
    sites = "|".join(LOCAL_SITES)
    return rf"(?:{sites})\.[^/]*\.w{size}\.r\d+"


def not_a_local_wave_job():
    """Rule job's wildcard: any job id but those of the jobs of a local wave."""
    sizes = "|".join(str(n) for n in LOCAL_WAVE_SIZES)
    # the id is followed by .json or .log in the rule's paths: no $ in the look-ahead
    return (
        rf"(?!{local_wave_pattern(f'(?:{sizes})')}\.i\d+\.)[^/]+" if sizes else r"[^/]+"
    )


def wave_jobs(wildcards):
    return WAVES[(wildcards.bench, wildcards.wave)]


def wave_first(wildcards):
    """The wildcards of a wave's first job: the site, inputs and context its jobs share."""
    job = wave_jobs(wildcards)[0]
    return SimpleNamespace(bench=job.bench, job=job.id)


def wave_inputs(wildcards):
    """The inputs of a wave's first job (shared), every job's dataset ready (a spread train's jobs
    read several), and every job's spec (in index order)."""
    inputs = job_inputs(wave_first(wildcards))
    del inputs["spec"]
    inputs["ready"] = sorted({LAYOUT.ready(j.dataset) for j in wave_jobs(wildcards)})
    inputs["specs"] = [
        job_spec(j.bench, j.id)
        for j in wave_jobs(wildcards)
        if (j.bench, j.id) in SPECS_THERE
    ]
    return inputs


JOBCORE = LAYOUT.jobcore(afkit_jobcore.CORE_NAME)
# benchmarks whose jobs run the image's own ROOT (payload: root)
BENCHES = {b["name"]: b for b in CFG["benchmarks"]}
ROOT_PAYLOAD = sorted(b["name"] for b in CFG["benchmarks"] if b["payload"] == "root")


def job_spec(bench, job_id):
    return LAYOUT.spec(bench, job_id)


def wave_specs(wildcards):
    """The specs of the jobs of a local wave (rule wave_local_N), in index order."""
    return [job_spec(j.bench, j.id) for j in wave_jobs(wildcards)]


def job_inputs(wildcards):
    job = the_job(wildcards)
    inputs = {
        "spec": (
            job_spec(job.bench, job.id) if (job.bench, job.id) in SPECS_THERE else []
        ),
        # the image (its ROOT checked for payload root) and the dataset's manifest made: rule ready
        "ready": LAYOUT.ready(job.dataset),
        # ancient: a wave redone later (retry) does not make the waves after it rerun
        "previous_wave": (
            [ancient(wave_done(job.bench, PREVIOUS[(job.bench, job.wave)]))]
            if (job.bench, job.wave) in PREVIOUS
            else []
        ),
    }
    site = CFG["sites"][job.site]
    if not site.get("shared_fs", True):
        # a site without the submit host's files: the image's description and afkit's package go
        # with the job (HTCondor file transfer of the inputs; workflows/scripts/htcondor-sandbox-job)
        inputs["image"] = LAYOUT.image_json
        inputs["jobcore"] = ancient(JOBCORE)
    return inputs


def job_site(wildcards):
    return CFG["sites"][the_job(wildcards).site]


# Rule job's inputs and resources: a constant where every job of this call has the same (one
# dataset, no waves, sites alike), else a function of the job. Snakemake calls a function once
# per job and more (planning 10,000 jobs: seconds; bench/campaign.sh).
JOB_SITES = {j.site for j in JOBS if SITE_FILTER in (None, j.site)}


def _constant_or(values, function):
    return values.pop() if len(values) == 1 else function


def job_resource(key):
    """The site's resources[KEY] of a job of rule job."""
    return _constant_or(
        {CFG["sites"][s]["resources"][key] for s in JOB_SITES},
        lambda wc: job_site(wc)["resources"][key],
    )


# the job's spec: a path pattern (every spec there, as always on a run), none (a dry run of a
# campaign never run), else those that exist
JOB_SPEC = (
    job_spec("{bench}", "{job}")
    if len(SPECS_THERE) == len(JOBS)
    else ((lambda wc: job_inputs(wc)["spec"]) if SPECS_THERE else [])
)
JOB_READY = _constant_or(
    {LAYOUT.ready(j.dataset) for j in JOBS},
    lambda wc: LAYOUT.ready(the_job(wc).dataset),
)
JOB_PREVIOUS_WAVE = (lambda wc: job_inputs(wc)["previous_wave"]) if PREVIOUS else []
# the image's ROOT is checked before any job of the campaign runs (rule image_root)
JOB_IMAGE_ROOT = LAYOUT.image_root_json if ROOT_PAYLOAD else []
UNSHARED = {s for s in JOB_SITES if not CFG["sites"][s].get("shared_fs", True)}
JOB_CORE = (lambda wc: job_inputs(wc).get("jobcore", [])) if UNSHARED else []
# the image's description goes with a job to a site without the submit host's files (else the
# job reads it there; its rule ready is the job's input)
JOB_IMAGE = _constant_or(
    {LAYOUT.image_json if s in UNSHARED else "" for s in JOB_SITES},
    lambda wc: job_inputs(wc).get("image", []),
)

# Rule job's named inputs: those the jobs of this campaign have (an empty named input costs
# Snakemake per job as much as a file). The job's command names its spec by its path (wildcards),
# so that a dry run of a campaign never run shows it too.
JOB_INPUTS = {
    name: value
    for name, value in (
        ("spec", JOB_SPEC),
        ("ready", JOB_READY),
        ("image", JOB_IMAGE),
        ("previous_wave", JOB_PREVIOUS_WAVE),
        ("jobcore", JOB_CORE),
    )
    if value not in ([], "")
}


# Before anything is made or submitted (not on dry runs): the sites' executors must be the one this
# snakemake runs (exit 4), every dataset file must exist on its server (exit 5). Ctrl-C / SIGTERM:
# jobs are cancelled (batch jobs removed), a cut-off job leaves no record, exit 130 (the message
# counts the jobs in scope without a record).
onstart:
    afkit_rules.on_start(
        workflow, CAMPAIGN, SITE_FILTER, datasets_checked=bool(PLAN_FILE)
    )


onerror:
    afkit_rules.on_error(all_job_records(SITE_FILTER))
