# Aggregation (tidy CSV with provenance) and the HTML report. The tables, the figures and afkit's own
# report are marked report(): `snakemake --report report.html` (with the campaign's arguments) builds
# Snakemake's report of a finished campaign from them, with the captions in workflows/report/.


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
    run:
        afkit_rules.aggregate(input, output, log)


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
    run:
        afkit_rules.report(input, output, log)
