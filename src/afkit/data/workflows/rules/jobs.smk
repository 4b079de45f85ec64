# One rule for every benchmark job: one command on the job's spec (written by planning,
# RESULTS/jobspec/BENCH/ID.json; an input: a job whose spec changed is rerun, one whose spec did
# not keeps its record), `afkit campaign job SPEC -o RECORD`, which runs the payload inside
# the image; any job can be rerun by hand with the same command. `exec`: the command is the job's
# process, which an interrupt stops (afkit.campaign.interrupt; it stops its payload, no record).
# A job whose payload fails writes a record with status "failed" (the report marks the cell);
# a job that is killed or evicted leaves no record and is retried (retries: in the profiles).


wildcard_constraints:
    bench=r"[A-Za-z0-9][A-Za-z0-9_-]*",
    job=r"[^/]+",
    wave=r"[^/]+",
    dataset=r"[A-Za-z0-9][A-Za-z0-9_-]*",
    site=r"[A-Za-z0-9][A-Za-z0-9_-]*",


rule job:
    input:
        **JOB_INPUTS,
    output:
        LAYOUT.record("{bench}", "{job}"),
    log:
        LAYOUT.record_log("{bench}", "{job}"),
    wildcard_constraints:
        # not a job of a wave at a local site: rule wave_local_N runs those
        job=not_a_local_wave_job(),
    conda:
        "../envs/afkit-job.yaml"
    threads: job_resource("cores")
    resources:
        mem_mb=job_resource("mem_mb"),
        runtime=job_resource("runtime"),
    shell:
        f"exec {AFKIT} campaign job {job_spec('{wildcards.bench}', '{wildcards.job}')} -o {{output}} --log {{log}}"


# A wave of N jobs at a local-executor site is one snakemake job of N jobs' threads: it starts
# when the executor has all their slots at once and starts the N payloads together (the local
# executor ignores job groups). Its records are the wave's jobs' records; a deleted one (retry)
# reruns the whole wave, whose jobs are measured together.
for _size in LOCAL_WAVE_SIZES:

    rule:
        name:
            f"wave_local_{_size}"
        input:
            unpack(wave_inputs),
        output:
            [LAYOUT.record("{bench}", f"{{wave}}.i{i}") for i in range(_size)],
        log:
            [LAYOUT.record_log("{bench}", f"{{wave}}.i{i}") for i in range(_size)],
        wildcard_constraints:
            wave=local_wave_pattern(_size),
        conda:
            "../envs/afkit-job.yaml"
        threads: lambda wc: len(wave_jobs(wc)) * job_site(wave_first(wc))["resources"]["cores"]
        resources:
            mem_mb=lambda wc: len(wave_jobs(wc))
            * job_site(wave_first(wc))["resources"]["mem_mb"],
            runtime=lambda wc: job_site(wave_first(wc))["resources"]["runtime"],
        params:
            # the jobs' specs in index order, named by path (a dry run before the first run shows them);
            # not a name of this loop in the command: the command is formatted when the job runs
            specs=wave_specs,
        shell:
            f"exec {AFKIT} campaign job {{params.specs}} -o {{output}} --log {{log}}"


localrules:
    wave_done,
    jobcore,


# A site without the submit host's files (shared_fs: false): the job takes afkit's package, its
# spec and the image's description along (inputs of its rule, transferred by HTCondor) and the job
# wrapper runs it without snakemake (afkit.campaign.jobcore, workflows/scripts/htcondor-sandbox-job).
rule jobcore:
    output:
        JOBCORE,
    log:
        LAYOUT.jobcore_log,
    conda:
        "../envs/afkit-job.yaml"
    shell:
        f"exec {AFKIT} campaign jobcore -o {{output:q}} --log {{log:q}} >&2"


# train and analysis sweeps: the jobs of a wave are released together, the next wave waits for it
rule wave_done:
    input:
        wave_records,
    output:
        touch(LAYOUT.wave_done("{bench}", "{wave}")),
    log:
        LAYOUT.wave_log("{bench}", "{wave}"),
