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
            LAYOUT.jobs_csv,
            caption="../report/jobs.rst",
            category="Tables",
            labels={"table": "jobs"},
        ),
        intervals=report(
            LAYOUT.intervals_csv,
            caption="../report/intervals.rst",
            category="Tables",
            labels={"table": "intervals"},
        ),
    log:
        LAYOUT.aggregate_log,
    conda:
        "../envs/afkit-job.yaml"
    params:
        campaign=CAMPAIGN_ARGS,
    # the records on disk, not the inputs on the command line (10,000 paths would not fit in one)
    shell:
        f"exec {AFKIT} campaign aggregate {{params.campaign:q}} -o {{output.jobs:q}} --intervals {{output.intervals:q}} --log {{log:q}} >&2"


rule report:
    input:
        jobs=LAYOUT.jobs_csv,
        intervals=LAYOUT.intervals_csv,
    output:
        html=report(
            LAYOUT.report_html,
            caption="../report/afkit-report.rst",
            category="afkit report",
            labels={"report": "campaign"},
        ),
        figures=report(
            directory(LAYOUT.figures),
            patterns=["{name}.png"],
            caption="../report/figures.rst",
            category="Figures",
            labels={"figure": "{name}"},
        ),
    log:
        LAYOUT.report_log,
    conda:
        "../envs/afkit-job.yaml"
    shell:
        f"exec {AFKIT} campaign render {{input.jobs:q}} --intervals {{input.intervals:q}} -o {{output.html:q}} --figures {{output.figures:q}} --log {{log:q}} >&2"
