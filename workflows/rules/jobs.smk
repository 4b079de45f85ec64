# One rule for every benchmark job: the payload runs inside the image on the site's executor.
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
        unpack(job_inputs),
    output:
        f"{RESULTS}/job/{{bench}}/{{job}}.json",
    log:
        f"{RESULTS}/job/{{bench}}/{{job}}.log",
    threads: lambda wc: job_site(wc)["resources"]["cores"]
    resources:
        mem_mb=lambda wc: job_site(wc)["resources"]["mem_mb"],
        runtime=lambda wc: job_site(wc)["resources"]["runtime"],
    params:
        job=lambda wc: the_job(wc).as_dict(),
        campaign=job_context,
    run:
        afkit_rules.job(input, output, params, log)


localrules:
    wave_done,


# train and analysis sweeps: the jobs of a wave are released together, the next wave waits for it
rule wave_done:
    input:
        wave_records,
    output:
        touch(f"{RESULTS}/wave/{{bench}}/{{wave}}.done"),
    log:
        f"{RESULTS}/wave/{{bench}}/{{wave}}.log",
