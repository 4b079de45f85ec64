"""``afkit campaign``: validate, show input locations, run, job, retry, aggregate, report, extrapolate;
and the steps the workflow's rules run (image, image-root, dataset, jobcore, aggregate -o, render)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from afkit import argtypes
from afkit.errors import AfkitError, ExitCode, NotFoundError, UsageError

if TYPE_CHECKING:
    from afkit.campaign import aggregate as agg
    from afkit.campaign import config
    from afkit.campaign.runplan import RunPlan

# Each command imports what it uses when it runs: `afkit campaign job`, run once per job by every
# workflow, starts without the schema validator, the planner and the tables (a third of its start-up).


def _campaign_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("campaign", type=Path, help="the campaign YAML file")


def _step_campaign_arg(p: argparse.ArgumentParser) -> None:
    """The campaign of a workflow step (a campaign YAML, or the plan file the workflow passes), and
    where a YAML's relative paths are taken from."""
    p.add_argument("campaign", type=Path, metavar="CAMPAIGN",
                   help="the campaign YAML file, or the campaign as planned for its run, "
                   "RESULTS/plan/campaign.plan.json (what the workflow's rules pass: it is not "
                   "validated or expanded again)")  # fmt: skip
    p.add_argument(
        "--campaign-dir",
        type=Path,
        metavar="DIR",
        help="take a campaign YAML's relative paths beside DIR (default: the file's folder)",
    )


def _step_campaign(args: argparse.Namespace) -> RunPlan:
    from afkit.campaign.runplan import RunPlan

    return RunPlan.load(args.campaign, args.campaign_dir)


def _check_image(c: config.Campaign, *, fetch: bool) -> str:
    """The campaign's image checked once, before any snakemake call (afkit.campaign.image.check_image)."""
    from afkit.campaign import image

    return image.check_image(c.config["image"], base_dir=c.base_dir, results_dir=c.results_dir, fetch=fetch)


def cmd_validate(args: argparse.Namespace) -> int:
    from afkit.campaign import config, plan, preflight

    c = config.load(args.campaign)
    jobs = plan.expand(c)
    preflight.check_results_writable(c)  # what run checks first, as it would (exit 3 / 4 / 5 / 6)
    preflight.check_credentials(c)
    note = _check_image(c, fetch=False)
    print(
        f"{args.campaign}: valid; campaign {c.name}, hash {c.hash}, {len(jobs)} jobs, "
        f"results in {c.results_dir}"
    )
    if note:
        print(note)
    return ExitCode.OK


def cmd_results(args: argparse.Namespace) -> int:
    from afkit.campaign import config

    print(config.load(args.campaign).results_dir)
    return ExitCode.OK


def cmd_locations(args: argparse.Namespace) -> int:
    from afkit.campaign import config, locations

    c = config.load(args.campaign)
    print(locations.format_matrix(locations.matrix(c, args.scenario or None)))
    return ExitCode.OK


def cmd_jobs(args: argparse.Namespace) -> int:
    from afkit.campaign import config, plan

    c = config.load(args.campaign)
    for j in plan.expand(c):
        print(f"{j.bench}/{j.id}")
    return ExitCode.OK


def cmd_job(args: argparse.Namespace) -> int:
    from afkit.campaign import jobcore

    try:
        return jobcore.run_specs(args.specs, args.output, args.log)
    except KeyboardInterrupt:  # before the handlers were installed: nothing was started
        print("afkit: interrupted: no record written", file=sys.stderr)
        return ExitCode.INTERRUPTED


def _snakemake_extra(args: argparse.Namespace) -> list[str]:
    """The snakemake arguments; afkit's own flags given after the campaign file are taken out
    (argparse leaves everything after the first positional to REMAINDER)."""
    extra = list(args.snakemake_args)
    cut = extra.index("--") if "--" in extra else len(extra)
    own = {"-n": "dry_run", "--dry-run": "dry_run", "--failed": "failed", "--missing": "missing"}
    head = []
    for a in extra[:cut]:
        if a in own and hasattr(args, own[a]):
            setattr(args, own[a], True)
        else:
            head.append(a)
    from afkit.campaign import passthrough

    options = head + extra[cut + 1 :]
    passthrough.check(options)  # before anything is pulled or started (exit 2)
    return options


def _after_run(run: RunPlan, code: int, *, always_report: bool) -> int:
    """Exit code of run/retry; the tables and the report made here when snakemake did not make
    them from every record on disk (another site's call, a retry, an interrupt, a call the
    watchdog stopped)."""
    from afkit.campaign import image

    c = run.campaign
    if code == ExitCode.INTERRUPTED:
        if _records(run) and not _tables_current(run):
            try:
                print(f"afkit: the tables and the report from the records on disk: "
                      f"{_report(run, allow_mixed=False, grouping='target')}", file=sys.stderr)  # fmt: skip
            except AfkitError as err:
                print(f"afkit: no report made: {err}", file=sys.stderr)
        return ExitCode.INTERRUPTED
    refused = image.refusal(c.results_dir) if code != 0 else None
    if refused is not None:  # the image failed its signature check: no job ran
        raise refused
    if code > 1:
        return code  # refused, invalid, not found: nothing ran
    mixed = len({s["executor"] for s in c.config["sites"].values()}) > 1
    if mixed or always_report or (_records(run) and not _tables_current(run)):
        print(_report(run, allow_mixed=False, grouping="target"))
    return ExitCode.OK if code == 0 else ExitCode.FAILURE


def _preflight(c: config.Campaign) -> None:
    """The checks before submission that need no snakemake (the results folder, the credentials,
    the image, pulled when it is a registry's; the dataset files), made once before any snakemake
    starts: a failure is afkit's
    message alone, not after snakemake's banner nor once per site. The workflow's onstart checks
    the datasets again (when snakemake is run directly) with the executor; its image rule, the image."""
    from afkit.campaign import preflight

    # what costs nothing first: a refused results folder or credential pulls no image
    preflight.check_results_writable(c)
    preflight.check_credentials(c)
    _check_image(c, fetch=True)
    preflight.check_datasets(c, credentials_checked=True)


def _records(run: RunPlan) -> list[Path]:
    """The record files of the planned jobs that are on disk (current or stale)."""
    layout = run.campaign.layout
    return [p for j in run.jobs if (p := Path(layout.record(j.bench, j.id))).is_file()]


def _tables_current(run: RunPlan) -> bool:
    """jobs.csv holds exactly the records on disk, none newer than it, and the report is newer."""
    from afkit.campaign import aggregate as agg

    layout = run.campaign.layout
    out, html = Path(layout.jobs_csv), Path(layout.report_html)
    records = _records(run)
    if not out.is_file() or not html.is_file():
        return False
    newest = max((p.stat().st_mtime for p in records), default=0.0)
    if newest > out.stat().st_mtime or out.stat().st_mtime > html.stat().st_mtime:
        return False
    listed = {(r["bench"], r["id"]) for r in agg.read_csv(out) if r["status"] != "missing"}
    return listed == {(p.parent.name, p.stem) for p in records}


def _planned(campaign_file: Path) -> RunPlan:
    """The campaign of run/retry validated and expanded: once for the whole command."""
    from afkit.campaign import config
    from afkit.campaign.runplan import RunPlan

    return RunPlan.make(config.load(campaign_file))


def _run(run: RunPlan, campaign_file: Path, *, dry_run: bool, extra: list[str],
         targets: dict[str, list[str]] | None = None) -> int:  # fmt: skip
    """The snakemake calls of RUN, each reading the plan file: RESULTS/plan/campaign.plan.json on
    a run, a temporary one on a dry run (which writes nothing in the results)."""
    import tempfile

    from afkit.campaign import runner

    if not dry_run:
        plan_file = run.write()
        return runner.run(run, campaign_file.absolute(), plan_file=plan_file, extra=extra, targets=targets)
    with tempfile.TemporaryDirectory(prefix="afkit-plan-") as tmp:
        plan_file = run.write(Path(tmp) / "campaign.plan.json")
        return runner.run(run, campaign_file.absolute(), plan_file=plan_file, dry_run=True, extra=extra,
                          targets=targets)  # fmt: skip


def cmd_run(args: argparse.Namespace) -> int:
    run = _planned(args.campaign)
    extra = _snakemake_extra(args)
    if not args.dry_run:
        _preflight(run.campaign)
    code = _run(run, args.campaign, dry_run=args.dry_run, extra=extra)
    if args.dry_run:
        return code
    return _after_run(run, code, always_report=False)


def cmd_retry(args: argparse.Namespace) -> int:
    from afkit.campaign import retry

    run = _planned(args.campaign)
    extra = _snakemake_extra(args)
    want = {"failed", "missing"} if not (args.failed or args.missing) else (
        ({"failed"} if args.failed else set()) | ({"missing"} if args.missing else set()))  # fmt: skip
    chosen = retry.select(run, want)
    if not chosen:
        print(f"{args.campaign}: no {' or '.join(sorted(want))} jobs: nothing to retry")
        return ExitCode.OK
    for line in retry.describe(chosen):
        print(line)
    if not args.dry_run:
        _preflight(run.campaign)
        retry.clear(chosen)
    todo = chosen
    while True:
        code = _run(run, args.campaign, dry_run=args.dry_run, extra=extra, targets=retry.targets(todo))
        if args.dry_run:
            return code
        # Snakemake 9 leaves out a target whose job waits (an ancient() input) for a wave it redoes
        # for another target, silently (snakemake/snakemake#4166); the next call makes it. Again
        # while a call succeeds and makes records.
        left = retry.without_record(todo)
        if code != ExitCode.OK or not left or len(left) == len(todo):
            break
        print(f"afkit: retry: snakemake left {len(left)} job(s) out (snakemake/snakemake#4166); "
              "asking it again", file=sys.stderr)  # fmt: skip
        todo = left
    return _after_run(run, code, always_report=True)


def _tables(
    run: RunPlan, allow_mixed: bool, jobs_csv: Path | None = None, intervals_csv: Path | None = None
) -> tuple[Path, Path, list[agg.Row]]:
    """The tables of the campaign's current records on disk (default RESULTS/aggregate/jobs.csv,
    intervals.csv beside it); a stale record (made from an older spec of its job) is left out, its
    job missing (afkit.campaign.current)."""
    from afkit.campaign import aggregate as agg
    from afkit.campaign import current

    c = run.campaign
    records, stale = current.records(run)
    if stale:
        print(current.stale_message(stale), file=sys.stderr)
    jobs_csv = jobs_csv or Path(c.layout.jobs_csv)
    intervals_csv = intervals_csv or jobs_csv.with_name("intervals.csv")
    for p in (jobs_csv, intervals_csv):
        p.parent.mkdir(parents=True, exist_ok=True)
    rows = agg.aggregate(records, jobs_csv, intervals_csv, expected=list(run.jobs), allow_mixed=allow_mixed,
                         campaign_hash=c.hash)  # fmt: skip
    return jobs_csv, intervals_csv, rows


def cmd_aggregate(args: argparse.Namespace) -> int:
    jobs_csv, _, rows = _tables(_step_campaign(args), args.allow_mixed, args.output, args.intervals)
    bad = sum(1 for r in rows if r["status"] != "ok")
    line = f"{jobs_csv}: {len(rows)} jobs, {bad} failed or missing"
    if args.log:
        from afkit.atomic import write_atomic

        args.log.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(args.log, line + "\n", mode=0o644)
    print(line)
    return ExitCode.OK


def _step(call: Callable[[], Path]) -> int:
    """A step's command: print the output CALL made; a file it cannot write is afkit's one-line error."""
    try:
        out = call()
    except OSError as err:
        raise AfkitError(str(err), hint="check the path and its permissions") from err
    print(out)
    return ExitCode.OK


def cmd_image(args: argparse.Namespace) -> int:
    from afkit.campaign import rules

    return _step(lambda: rules.image(_step_campaign(args).campaign, args.output, args.log))


def cmd_image_root(args: argparse.Namespace) -> int:
    from afkit.campaign import rules

    return _step(lambda: rules.image_root(args.image, args.benchmarks, args.output, args.log))


def cmd_dataset(args: argparse.Namespace) -> int:
    from afkit.campaign import rules

    return _step(
        lambda: rules.dataset(_step_campaign(args).campaign, args.dataset, args.image, args.output, args.log)
    )


def cmd_jobcore(args: argparse.Namespace) -> int:
    from afkit.campaign import rules

    return _step(lambda: rules.jobcore(args.output, args.log))


def cmd_render(args: argparse.Namespace) -> int:
    from afkit.campaign import rules

    intervals = args.intervals or args.jobs.with_name("intervals.csv")
    return _step(
        lambda: rules.render(args.jobs, intervals, args.output, args.figures, args.log, args.grouping)
    )


def _report(run: RunPlan, *, allow_mixed: bool, grouping: str) -> Path:
    # imported here: report imports matplotlib, seconds of start-up validate and run's checks need not wait
    from afkit.campaign import report

    jobs_csv, intervals_csv, _ = _tables(run, allow_mixed)
    return report.render_tables(
        jobs_csv, intervals_csv, Path(run.campaign.layout.report_dir), grouping=grouping
    )


def cmd_report(args: argparse.Namespace) -> int:
    print(_report(_planned(args.campaign), allow_mixed=args.allow_mixed, grouping=args.grouping))
    return ExitCode.OK


def cmd_extrapolate(args: argparse.Namespace) -> int:
    from afkit.campaign import extrapolate, scaling
    from afkit.campaign.rows import read_intervals, read_jobs

    target = extrapolate.parse_rate(args.target)
    per_job = extrapolate.parse_rate(args.per_job) if args.per_job else None
    per_server = extrapolate.parse_rate(args.per_server) if args.per_server else None
    if args.from_csv:
        if not args.from_csv.is_file():
            raise NotFoundError(f"no such table: {args.from_csv}", hint="give RESULTS/aggregate/jobs.csv")
        rows = read_jobs(args.from_csv)
        intervals = read_intervals(args.from_csv.with_name("intervals.csv"))
        points = scaling.scaling_series(rows, intervals, grouping=args.grouping)
        if not points:
            raise UsageError(f"{args.from_csv} has no successful train waves", hint="give --per-job instead")
        best = scaling.best_wave(points)
        per_job = per_job or best.per_job
        per_server = per_server or best.per_server
    if per_job is None:
        raise UsageError("give --per-job RATE or --from JOBS.csv")
    print(extrapolate.plan(target, per_job, per_server).describe())
    return ExitCode.OK


def cmd_compare(args: argparse.Namespace) -> int:
    from afkit.campaign import compare, report
    from afkit.campaign.rows import read_jobs

    base_csv, new_csv = compare.jobs_table(args.base), compare.jobs_table(args.new)
    result = compare.compare(read_jobs(base_csv), read_jobs(new_csv), tolerance=args.tolerance,
                             base_name=str(base_csv), new_name=str(new_csv))  # fmt: skip
    print(compare.format_table(result))
    if new_csv.parent.name == "aggregate":  # a results directory: the comparison goes into its report
        report_dir = new_csv.parent.parent / "report"
        meta = {"base": str(base_csv), "new": str(new_csv), "tolerance": args.tolerance}
        compare.write(result, report_dir, meta)
        html = report.render_tables(new_csv, new_csv.with_name("intervals.csv"), report_dir)
        print(f"report: {html}")
    unsure = compare.inconclusive(result)
    if unsure:
        print(f"{len(unsure)} cell(s) inconclusive (fewer than {compare.MIN_REPETITIONS} repetitions on a "
              "side, or the interval spans a threshold): " + "; ".join(c.label for c in unsure))  # fmt: skip
    bad = compare.regressions(result)
    if bad:
        print(f"{len(bad)} cell(s) regressed: " + "; ".join(c.label for c in bad))
        return ExitCode.FAILURE
    return ExitCode.OK


def cmd_config_doc(args: argparse.Namespace) -> int:
    from afkit.atomic import write_atomic
    from afkit.campaign import schemadoc
    from afkit.errors import InvalidError

    path: Path = args.output or schemadoc.readme_path()
    text = schemadoc.current()
    if args.check:
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            raise InvalidError(f"{path} does not match the campaign schema",
                               hint="run 'afkit campaign config-doc' and commit the result")  # fmt: skip
        print(f"{path}: matches the campaign schema")
        return ExitCode.OK
    write_atomic(path, text)
    print(path)
    return ExitCode.OK


def _grouping_arg(p: argparse.ArgumentParser) -> None:
    from afkit.campaign import scaling

    p.add_argument(
        "--grouping",
        choices=scaling.GROUPINGS,
        default="target",
        help="train-scaling series: per storage target (default), per server (XRootD host:port the "
        "jobs read from) or all targets together",
    )


def _log_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--log", type=Path, metavar="LOG", help="the step's log (default: its output's, .log)")


STEPS_EPILOG = (
    "The command of the workflow's rule of the same name (docs/campaigns.md, 'Every step is a "
    "command'): rerun it by hand as snakemake -p shows it. Exit codes: 0 written, 1 failed, "
    "2 usage, 3 prerequisite missing, 5 an input not found, 6 invalid; nothing half-written."
)


def _register_steps(cs: Any) -> None:
    """The steps of the workflow that are not jobs, one command each (the rules' ``shell:``)."""

    p = cs.add_parser("image", help="the campaign's image (SIF, oras, tag build) -> image.json (rule image)",
                      epilog=STEPS_EPILOG)  # fmt: skip
    _step_campaign_arg(p)
    p.add_argument("-o", "--output", type=Path, metavar="IMAGE_JSON",
                   help="the image's description (default: RESULTS/image/image.json; "
                   "a build works in its folder)")  # fmt: skip
    _log_arg(p)
    p.set_defaults(func=cmd_image)
    p = cs.add_parser("image-root", help="the image has ROOT for payload root -> root.json (rule image_root)",
                      epilog=STEPS_EPILOG)  # fmt: skip
    p.add_argument("image", type=Path, metavar="IMAGE_JSON", help="the image's description (image.json)")
    p.add_argument("--benchmarks", nargs="+", required=True, metavar="BENCH",
                   help="the benchmarks with payload: root (named in a refusal)")  # fmt: skip
    p.add_argument("-o", "--output", type=Path, metavar="ROOT_JSON",
                   help="where ROOT is and its version (default: root.json beside IMAGE_JSON)")  # fmt: skip
    _log_arg(p)
    p.set_defaults(func=cmd_image_root)
    p = cs.add_parser("dataset", help="a dataset's files (generate:) and manifest (rule dataset)",
                      epilog=STEPS_EPILOG)  # fmt: skip
    _step_campaign_arg(p)
    p.add_argument("dataset", metavar="NAME", help="the dataset (a key of the campaign's datasets)")
    p.add_argument("--image", type=Path, metavar="IMAGE_JSON",
                   help="generate kind ao2d/esd: the image whose ROOT writes the files (default: "
                   "RESULTS/image/image.json)")  # fmt: skip
    p.add_argument("-o", "--output", type=Path, metavar="MANIFEST",
                   help="the manifest (default: RESULTS/dataset/NAME.json)")  # fmt: skip
    _log_arg(p)
    p.set_defaults(func=cmd_dataset)
    p = cs.add_parser("jobcore", help="afkit's package zipped for sites without shared files (rule jobcore)",
                      epilog=STEPS_EPILOG)  # fmt: skip
    p.add_argument("-o", "--output", type=Path, required=True, metavar="ZIP",
                   help="the zip (the workflow's: RESULTS/jobcore/afkit.zip)")  # fmt: skip
    _log_arg(p)
    p.set_defaults(func=cmd_jobcore)
    p = cs.add_parser("render", help="the HTML report and its figures from the tables (rule report)",
                      epilog=STEPS_EPILOG)  # fmt: skip
    p.add_argument("jobs", type=Path, metavar="JOBS_CSV", help="the jobs table (RESULTS/aggregate/jobs.csv)")
    p.add_argument("--intervals", type=Path, metavar="INTERVALS_CSV",
                   help="the intervals table (default: intervals.csv beside JOBS_CSV)")  # fmt: skip
    p.add_argument("-o", "--output", type=Path, required=True, metavar="HTML",
                   help="the report, DIR/report.html (its figures' PNGs beside it)")  # fmt: skip
    p.add_argument("--figures", type=Path, metavar="DIR",
                   help="a copy of exactly this report's figures (default: HTML's figures/)")  # fmt: skip
    _log_arg(p)
    _grouping_arg(p)
    p.set_defaults(func=cmd_render)


def _snakemake_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("-n", "--dry-run", action="store_true", help="list what would run, write nothing")
    p.add_argument("snakemake_args", nargs=argparse.REMAINDER, help="after --: extra snakemake arguments")


def register(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "campaign",
        help="Snakemake benchmark campaigns",
        description="Benchmark campaigns (docs/campaigns.md).",
    )
    cs = parser.add_subparsers(dest="campaign_command", metavar="ACTION")
    cs.required = True
    p = cs.add_parser("validate", help="check a campaign file against the schema, and its image; "
                      "count its jobs")  # fmt: skip
    _campaign_arg(p)
    p.set_defaults(func=cmd_validate)
    p = cs.add_parser("results", help="print the campaign's results directory (RESULTS/NAME-vVERSION)")
    _campaign_arg(p)
    p.set_defaults(func=cmd_results)
    p = cs.add_parser("locations", help="print the resolved input-location matrix")
    _campaign_arg(p)
    p.add_argument("--scenario", action="append", choices=["origin", "xcache", "xcache-dca", "dcotf"],
                   help="only these scenarios (repeatable; default: those the benchmarks use)")  # fmt: skip
    p.set_defaults(func=cmd_locations)
    p = cs.add_parser("jobs", help="list the planned jobs (BENCH/JOB-ID)")
    _campaign_arg(p)
    p.set_defaults(func=cmd_jobs)
    p = cs.add_parser("run", help="run the campaign with snakemake (one call per executor)")
    _campaign_arg(p)
    _snakemake_args(p)
    p.set_defaults(func=cmd_run)
    from afkit.campaign import jobcore

    p = cs.add_parser("job", help="run jobs from their specs, write their records (what rule job runs)",
                      description=jobcore.DESCRIPTION)  # fmt: skip
    jobcore.add_arguments(p)
    p.set_defaults(func=cmd_job)
    p = cs.add_parser("retry", help="rerun exactly the failed and/or missing jobs (and, always, those whose "
                      "record is stale: made from an older spec of the job), then the report")  # fmt: skip
    _campaign_arg(p)
    p.add_argument("--failed", action="store_true", help="the jobs whose record says failed")
    p.add_argument("--missing", action="store_true", help="the planned jobs without a record")
    _snakemake_args(p)
    p.set_defaults(func=cmd_retry)
    p = cs.add_parser("aggregate", help="job records -> jobs.csv/intervals.csv (missing jobs marked; "
                      "what rule aggregate runs)")  # fmt: skip
    _step_campaign_arg(p)
    p.add_argument("--allow-mixed", action="store_true", help="allow records of different images")
    p.add_argument("-o", "--output", type=Path, metavar="JOBS_CSV",
                   help="the jobs table (default: RESULTS/aggregate/jobs.csv)")  # fmt: skip
    p.add_argument("--intervals", type=Path, metavar="INTERVALS_CSV",
                   help="the intervals table (default: intervals.csv beside the jobs table)")  # fmt: skip
    _log_arg(p)
    p.set_defaults(func=cmd_aggregate)
    p = cs.add_parser("report", help="aggregate what exists and write the HTML report")
    _campaign_arg(p)
    p.add_argument("--allow-mixed", action="store_true", help="allow records of different images")
    _grouping_arg(p)
    p.set_defaults(func=cmd_report)
    _register_steps(cs)
    p = cs.add_parser(
        "compare",
        help="per cell NEW/BASE throughput with a bootstrap interval and a verdict (exit 1: a regression)",
        description="Compare two runs of a campaign cell by cell (docs/campaigns.md, 'Comparing runs'). "
        "Verdicts: worse, better, same, inconclusive (fewer than 3 repetitions on a side, or the "
        "interval spans a threshold), lost. Exit codes: 0 no cell worse (inconclusive cells do not "
        "fail), 1 a cell worse or without successful jobs in NEW, 5 no table, 6 no cell in common.",
    )
    p.add_argument("base", type=Path, help="the baseline: a results directory or its aggregate/jobs.csv")
    p.add_argument("new", type=Path, help="the run to judge: a results directory (its report gets the "
                   "comparison section) or a jobs.csv")  # fmt: skip
    p.add_argument("--tolerance", type=argtypes.non_negative, default=0.10,
                   help="relative change within which a cell is 'same' (default 0.10)")  # fmt: skip
    p.set_defaults(func=cmd_compare)
    p = cs.add_parser(
        "config-doc",
        help="write workflows/config/README.md (every campaign key) from the campaign schema",
        description="Write the campaign keys' reference, workflows/config/README.md, from "
        "workflows/schemas/campaign.schema.yaml. Exit codes: 0 written or matching, 6 --check: differs.",
    )
    p.add_argument("--check", action="store_true", help="only compare; exit 6 when the file differs")
    p.add_argument("-o", "--output", type=Path, help="write here (default: workflows/config/README.md)")
    p.set_defaults(func=cmd_config_doc)
    p = cs.add_parser("extrapolate", help="jobs and servers needed for a target rate")
    p.add_argument("--target", default="10PB/24h", help="target rate, e.g. 115GB/s or 10PB/24h (default)")
    p.add_argument("--per-job", help="measured rate per job, e.g. 12.5MB/s")
    p.add_argument("--per-server", help="measured rate per storage server, e.g. 32GB/s")
    p.add_argument("--from", dest="from_csv", type=Path, help="take the rates from a campaign's jobs.csv")
    _grouping_arg(p)
    p.set_defaults(func=cmd_extrapolate)
