"""``afkit study``: list, show, run a published facility study; make its page again.

``afkit study run NAME`` fills the study's recipe from the user's sites (``--sites FILE``) or from
the federation in the box, writes the campaign file, runs it with ``afkit campaign run`` (progress
as any campaign's; an interrupted or failed study resumes by running it again) and writes the
study page into the campaign's results (docs/studies.md).
"""

from __future__ import annotations

import argparse
import hashlib
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import yaml

from afkit import argtypes, signals, yamlio
from afkit.atomic import write_atomic
from afkit.campaign import config
from afkit.campaign.rows import read_intervals, read_jobs
from afkit.errors import ExitCode, InvalidError, NotFoundError, PrereqError, UsageError
from afkit.study import clean, host, machine, model, page, recipe, writes

DEFAULT_IMAGE = Path("build/bench.sif")
DEFAULT_WORKDIR = Path("studies")


def cmd_list(_args: argparse.Namespace) -> int:
    for name in model.names():
        s = model.load(name)
        print(f"{name:20s} {s.title}")
    return ExitCode.OK


def cmd_show(args: argparse.Namespace) -> int:
    s = model.load(args.name)
    print(f"{s.name}: {s.title}\n  by {s.source.get('authors', '')}")
    print(textwrap.indent(textwrap.fill(str(s.source.get("what", "")), 96), "  "))
    if s.runner == "host":
        print("runs on the host the command runs on, as root (a sites file holds 'params' and 'image')")
    else:
        print("roles (a sites file's 'roles'):")
    for r in s.roles.values():
        print(f"  {r.name:10s} {r.kind:13s} {'(optional) ' if r.optional else ''}{r.doc}")
    print("parameters at your sites (a sites file's 'params' may change them):")
    for k, v in s.params.items():
        print(f"  {k}: {v}")
    print("in the box:")
    for k, v in s.box_params.items():
        print(f"  {k}: {v}")
    print("claims (criteria fixed before any run):")
    for c in s.claims:
        print(f"  {c.id}: {c.text}\n    original: {c.original}\n    criterion: {c.criterion}")
    return ExitCode.OK


def _scaled_size(v: object, scale: float) -> object:
    """A size in MB times SCALE: a whole number stays whole (at least 1), a fraction keeps 3
    significant digits; 0 (the study's "what the files need") stays 0."""
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise TypeError(v)
    if v == 0:
        return v
    if isinstance(v, int):
        return max(1, round(v * scale))
    return float(f"{v * scale:.3g}")


def _scaled(params: dict[str, object], scale: float) -> dict[str, object]:
    """PARAMS with job counts (``*_jobs`` lists) and file sizes (``*_mb``) times SCALE (at least 1
    each, counts kept distinct)."""
    out = dict(params)
    for k, v in params.items():
        try:
            if k.endswith("_jobs") and isinstance(v, list):
                out[k] = sorted({max(1, round(int(j) * scale)) for j in v})
            elif k.endswith("_mb"):
                out[k] = _scaled_size(v, scale)
        except (TypeError, ValueError, OverflowError) as err:
            raise InvalidError(f"params.{k}: {config.shown(v)} cannot be scaled: "
                               f"{'a list of job counts' if k.endswith('_jobs') else 'a size in MB'} is",
                               hint="fix it in the sites file (or --set)") from err  # fmt: skip
    return out


def facility(args: argparse.Namespace, study: model.Study) -> recipe.Facility:
    if study.runner == "host":
        fac = host.facility(study, args.sites, args.image)
    elif args.sites:
        fac = recipe.from_sites_file(study, args.sites)
    else:
        image = args.image or Path(str(study.box.get("image", DEFAULT_IMAGE)))
        fac = recipe.from_federation(study, recipe.federation_urls(), image, args.token)
    if args.scale != 1.0:
        fac.params = _scaled(fac.params, args.scale)
        fac.facts["scale"] = args.scale
    for item in args.set or []:
        name, sep, text = item.partition("=")
        if not sep or name not in fac.params:
            raise UsageError(
                f"--set {item!r}: study {study.name} has no parameter {name!r}",
                hint=f"parameters: {', '.join(fac.params)} (afkit study show {study.name})",
            )
        try:
            fac.params[name] = yamlio.load(text)
        except yaml.YAMLError as err:
            first = str(err).splitlines()[0]
            raise UsageError(f"--set {name}: {config.shown(text)} is not a YAML value: {first}",
                             hint="e.g. --set repetitions=1") from err  # fmt: skip
        fac.facts[f"set {name}"] = text
    return fac


# a run's key ends up in the campaign's name (study-NAME-KEY: the schema's name, at most 64 of
# [A-Za-z0-9_-]; it names the results folder and tags the batch jobs), so it is one of those too and
# short enough for the longest study name
LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,23}")


def run_key(args: argparse.Namespace) -> str:
    """What keys a run's results folder, campaign file and storage paths: "" in the box, --label,
    else the sites file's name and 6 hex digits of its absolute path's hash (two sites files, and a
    sites file beside the box, never share them)."""
    label = getattr(args, "label", None)
    if label is not None:
        if not LABEL.fullmatch(label):
            raise UsageError(f"--label {label!r}: a letter or digit, then letters, digits, '_' and '-' "
                             "(at most 24)", hint="e.g. --label my-farm")  # fmt: skip
        return str(label)
    sites: Path | None = getattr(args, "sites", None)
    if sites is None:
        return ""
    stem = re.sub(r"[^A-Za-z0-9_-]", "-", sites.stem)[:16].lstrip("_-") or "sites"
    return f"{stem}-{hashlib.sha256(str(sites.absolute()).encode()).hexdigest()[:6]}"


def campaign_file(args: argparse.Namespace, study: model.Study) -> Path:
    workdir: Path = args.workdir
    return workdir / recipe.keyed(study, run_key(args)) / "campaign.yaml"


def planned_campaign(args: argparse.Namespace, study: model.Study, fac: recipe.Facility) -> dict[str, object]:
    made = recipe.campaign(study, fac, run_key(args))
    config.validate(made, source=fac.where)  # valid before it is written (InvalidError names the key)
    return made


def campaign_writes(
    args: argparse.Namespace, study: model.Study, made: dict[str, object]
) -> list[writes.Write]:
    results = Path(str(made.get("results", "results"))) / f"{made['name']}-v{made['version']}"
    return writes.campaign_writes(made, results, campaign_file(args, study))


def write_campaign(
    args: argparse.Namespace, study: model.Study, fac: recipe.Facility, made: dict[str, object] | None = None
) -> Path:
    """The campaign MADE (default: planned here) written to its file, the facility beside it."""
    path = campaign_file(args, study)
    made = made if made is not None else planned_campaign(args, study, fac)
    text = (
        f"# afkit study run {study.name}: the study's recipe at {fac.where} (made by afkit; "
        "edit the study's sites file, not this)\n"
    ) + yaml.safe_dump(made, sort_keys=False)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, text, mode=0o644)
    except OSError as err:
        raise PrereqError(f"--workdir: cannot write {path}: {err.strerror or err}",
                          hint="give a --workdir you can write to") from err  # fmt: skip
    recipe.save(fac, path.with_name("facility.json"))
    return path


def _afkit(*argv: str) -> int:
    return subprocess.run([sys.executable, "-m", "afkit", *argv], check=False).returncode


def make_page(study: model.Study, fac: recipe.Facility, path: Path) -> Path:
    """Aggregate the campaign's records and write its study page; the page's path."""
    from afkit.study import analyses  # matplotlib: only the commands that draw pay for its import

    c = config.load(path)
    if _afkit("campaign", "aggregate", str(path)) != 0:
        raise NotFoundError(
            f"no tables for {path}", hint="run the study first: afkit study run " + study.name
        )
    tables = c.results_dir / "aggregate"
    rows = read_jobs(tables / "jobs.csv")
    intervals = read_intervals(tables / "intervals.csv")
    out = c.results_dir / "study"
    ev = analyses.EVALUATE[study.name](study, rows, intervals, fac, out)
    image = next((r.image_sha256 for r in rows if r.image_sha256), "")
    tag = next((r.image_tag for r in rows if r.image_tag), "")
    prov = page.provenance(c.name, c.hash, image, tag)
    facts = machine.read(c.results_dir / machine.NAME)
    return page.render(study, fac, ev.verdicts, ev.numbers, ev.figures, prov, out, facts)


def cmd_run(args: argparse.Namespace) -> int:
    study = model.load(args.name)
    fac = facility(args, study)
    key = run_key(args)
    made: dict[str, object] = {}
    if study.runner == "host":
        planned = host.writes(study, fac, key)
    else:
        made = planned_campaign(args, study, fac)  # built and validated once for the check and the file
        planned = campaign_writes(args, study, made)
    if args.dry_run:
        print(f"afkit study run {study.name} at {fac.where} would write:\n{writes.show(planned)}")
        short = writes.fits(planned)
        print("it fits" if not short else "it would be refused: " + "; ".join(short))
        return int(ExitCode.PREREQ) if short else int(ExitCode.OK)
    writes.check(planned, study.name)  # before anything is written (exit 3)
    if study.runner == "host":
        return host.run(study, fac, args.workdir, key)
    path = write_campaign(args, study, fac, made)
    print(f"afkit study: {study.name} at {fac.where}: campaign {path}", file=sys.stderr)
    # a study's benchmarks are measured one after another, as the original measured them: at
    # local sites one snakemake job (a wave) at a time (batch sites: the executors' own limits)
    local = all(isinstance(s, dict) and s.get("executor") == "local" for s in fac.sites.values())
    with machine.watch(config.load(path).results_dir / machine.NAME, Path.cwd()) as watched:
        cores = ["--", "--cores", "1"] if local else []
        code = signals.forwarded([sys.executable, "-m", "afkit", "campaign", "run", str(path), *cores])
        if code == ExitCode.INTERRUPTED or code < 0:
            watched.ended = "interrupted"
    if code == ExitCode.INTERRUPTED or code < 0:  # interrupted, or killed by a signal
        return int(ExitCode.INTERRUPTED)
    print(make_page(study, fac, path))
    return code


def cmd_page(args: argparse.Namespace) -> int:
    study = model.load(args.name)
    if study.runner == "host":
        print(host.page_again(study, args.workdir, run_key(args)))
        return ExitCode.OK
    path = campaign_file(args, study)
    saved = path.with_name("facility.json")
    if not path.is_file() or not saved.is_file():
        raise NotFoundError(
            f"study {study.name} has not been run here ({path} does not exist)",
            hint=f"afkit study run {study.name}",
        )
    print(make_page(study, recipe.saved(study, saved), path))
    return ExitCode.OK


def cmd_clean(args: argparse.Namespace) -> int:
    """afkit study clean: what the study's run (here, with these sites) wrote, removed."""
    study = model.load(args.name)
    key = run_key(args)
    if study.runner == "host":
        return clean.host_run(host.results_dir(study, key), args.workdir / recipe.keyed(study, key))
    path = campaign_file(args, study)
    if not path.is_file():
        raise NotFoundError(f"study {study.name} has not been run here ({path} does not exist)",
                            hint="give the run's --sites, --label or --workdir")  # fmt: skip
    return clean.campaign_run(path)


def _where_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", help="the study (afkit study list)")
    p.add_argument(
        "--sites",
        type=Path,
        metavar="FILE",
        help="your sites: the campaign keys image, sites, storage, and roles (and params); "
        "default: the federation in the box (afkit federation urls), scaled",
    )
    p.add_argument(
        "--scale",
        type=argtypes.positive,
        default=1.0,
        metavar="S",
        help="multiply the recipe's job counts (*_jobs) and file sizes (*_mb) by S (default 1)",
    )
    p.add_argument(
        "--image",
        type=Path,
        metavar="SIF",
        help="in the box: the image the jobs run in (default: the study's, build/bench.sif or "
        "build/alice-root.sif, which make demo links)",
    )
    p.add_argument(
        "--token",
        type=Path,
        metavar="FILE",
        help="in the box, when the federation is guarded: your WLCG token file of its issuer (mode "
        "0600; read and create scopes for the study's data), named as every storage's credential",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="list what the run would write (datasets, device files, results: folder, size, free space "
        "there) and whether it fits; write nothing (exit 3 when it would not fit)",
    )
    p.add_argument(
        "--set",
        action="append",
        metavar="NAME=VALUE",
        help="a recipe parameter for this run (repeatable; YAML value, e.g. repetitions=1); the page says so",
    )
    _workdir_arg(p)


def _workdir_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--label",
        metavar="LABEL",
        help="keys this run's results folder, campaign file and storage paths (up to 24 letters, "
        "digits, '_', '-'; default: none in the box; with --sites, the file's name and a hash of its path)",
    )
    p.add_argument(
        "--workdir",
        type=Path,
        default=DEFAULT_WORKDIR,
        metavar="DIR",
        help="where the study's campaign file is written (default studies/, as DIR/NAME/campaign.yaml)",
    )


def register(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "study",
        help="rerun published facility studies",
        description="Published facility studies rerun "
        "at your sites or on the federation in the box (docs/studies.md).",
    )
    ss = parser.add_subparsers(dest="study_command", metavar="ACTION")
    ss.required = True
    p = ss.add_parser("list", help="the studies afkit knows")
    p.set_defaults(func=cmd_list)
    p = ss.add_parser("show", help="a study: the original, its roles, parameters and claims")
    p.add_argument("name", help="the study (afkit study list)")
    p.set_defaults(func=cmd_show)
    p = ss.add_parser("run", help="run a study's campaign and write its page (RESULTS/study/index.html)")
    _where_args(p)
    p.set_defaults(func=cmd_run)
    p = ss.add_parser("clean", help="remove what a study's run wrote: its datasets, results and campaign")
    p.add_argument("name", help="the study (afkit study list)")
    p.add_argument(
        "--sites", type=Path, metavar="FILE", help="the run with this sites file (default: the box's)"
    )
    _workdir_arg(p)
    p.set_defaults(func=cmd_clean)
    p = ss.add_parser("page", help="make a study's page again from the records there are")
    p.add_argument("name", help="the study (afkit study list)")
    p.add_argument("--sites", type=Path, metavar="FILE", help="the page of the run with this sites file")
    _workdir_arg(p)
    p.set_defaults(func=cmd_page)
