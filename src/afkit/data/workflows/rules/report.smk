# Aggregation (tidy CSV with provenance) and the HTML report. The tables, the figures and afkit's own
# report are marked report(): `snakemake --report report.html` (with the campaign's arguments) builds
# Snakemake's report of a finished campaign from them, with the captions in workflows/report/.
# Both rules run an afkit command (`afkit campaign aggregate`, `afkit campaign render`), rerun by hand
# as `snakemake -p` shows it.


localrules:
    aggregate,
    report,


rule aggregate:
    input:
        all_job_records(),
    output:
        jobs=report(
            f"{RESULTS}/aggregate/jobs.csv",
            caption="../report/jobs.rst",
            category="Tables",
            labels={"table": "jobs"},
        ),
        intervals=report(
            f"{RESULTS}/aggregate/intervals.csv",
            caption="../report/intervals.rst",
            category="Tables",
            labels={"table": "intervals"},
        ),
    log:
        f"{RESULTS}/aggregate/aggregate.log",
    conda:
        "../envs/afkit-job.yaml"
    params:
        campaign=CAMPAIGN_ARGS,
    # the records on disk, not the inputs on the command line (10,000 paths would not fit in one)
    shell:
        f"exec {AFKIT} campaign aggregate {{params.campaign:q}} -o {{output.jobs:q}} --intervals {{output.intervals:q}} --log {{log:q}} >&2"


rule report:
    input:
        jobs=f"{RESULTS}/aggregate/jobs.csv",
        intervals=f"{RESULTS}/aggregate/intervals.csv",
    output:
        html=report(
            f"{RESULTS}/report/report.html",
            caption="../report/afkit-report.rst",
            category="afkit report",
            labels={"report": "campaign"},
        ),
        figures=report(
            directory(f"{RESULTS}/report/figures"),
            patterns=["{name}.png"],
            caption="../report/figures.rst",
            category="Figures",
            labels={"figure": "{name}"},
        ),
    log:
        f"{RESULTS}/report/report.log",
    conda:
        "../envs/afkit-job.yaml"
    shell:
        f"exec {AFKIT} campaign render {{input.jobs:q}} --intervals {{input.intervals:q}} -o {{output.html:q}} --figures {{output.figures:q}} --log {{log:q}} >&2"
