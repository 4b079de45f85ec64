# Aggregation (tidy CSV with provenance) and the HTML report.


localrules:
    aggregate,
    report,


rule aggregate:
    input:
        all_job_records(),
    output:
        jobs=f"{RESULTS}/aggregate/jobs.csv",
        intervals=f"{RESULTS}/aggregate/intervals.csv",
    log:
        f"{RESULTS}/aggregate/aggregate.log",
    run:
        afkit_rules.aggregate(input, output, log)


rule report:
    input:
        jobs=f"{RESULTS}/aggregate/jobs.csv",
        intervals=f"{RESULTS}/aggregate/intervals.csv",
    output:
        f"{RESULTS}/report/report.html",
    log:
        f"{RESULTS}/report/report.log",
    run:
        afkit_rules.report(input, output, log)
