"""afkit's job core: a benchmark job run on a batch worker without snakemake.

Every job of rule ``job`` runs one command on its spec, ``afkit campaign job SPEC -o RECORD``
(the rule's ``shell:``); batch jobs (HTCondor and SLURM sites) run the same command as ``python -m
afkit.campaign.jobcore SPEC -o RECORD --log LOG`` instead of a snakemake on the worker (afkit's
executors submit :func:`batch_command`). The spec (afkit.campaign.contract.JobSpec) is written by
planning (afkit.campaign.plan.write_specs), an input of the job. On a site with
the submit host's files the python is the submit host's (snakemake's own, shared software) and the
paths are relative to the submit directory, the job's working directory.

A site with ``shared_fs: false`` (docs/federation.md) cannot see the submit host's checkout, venv
or submit directory. Its jobs import nothing from the submit host either:
the workflow makes, on the submit host, for each such job

- the **core**, ``RESULTS/jobcore/afkit.zip``: afkit's package (its ``.py`` files and the package
  data a job needs, e.g. ROOT macros; not the workflow's ``afkit/data``) as a zip; and
- the job's **spec**, ``RESULTS/jobspec/BENCH/ID.json``: the job, its site, tree and binds, and the
  paths of the image's description (``image.json``, also an input), its record and its log
  (relative to the submit directory),

both inputs of the job's rule, so HTCondor transfers them with the job's other inputs
(snakemake-executor-plugin-htcondor lists a job's inputs as ``transfer_input_files``). The job
wrapper (``workflows/scripts/htcondor-sandbox-job``, itself transferred as the job's executable)
unpacks the core in the job's sandbox and runs ``python3 -m afkit.campaign.jobcore SPEC`` with the
worker's own ``python3``: the job wrapper's modules (``afkit.campaign.job`` and what it imports) use
the standard library only. The record is written where the spec says; HTCondor transfers it back.
The payload inside the image runs on the same unpacked package (bound into the container).
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from afkit.atomic import atomic_path
from afkit.errors import AfkitError, ExitCode

CORE_NAME = "afkit.zip"
JOB_RULE = "job"  # the workflow's rule of a benchmark job (workflows/rules/jobs.smk)


class SnakemakeJob(Protocol):
    """What :func:`batch_command` reads of a snakemake job (snakemake-interface-executor-plugins'
    ``JobExecutorInterface``): its rule's name, its named inputs (``spec``), outputs and logs."""

    @property
    def name(self) -> str: ...

    @property
    def input(self) -> object: ...

    @property
    def output(self) -> Sequence[object]: ...

    @property
    def log(self) -> Sequence[object]: ...

    def is_group(self) -> bool: ...


def batch_command(job: SnakemakeJob, python: str) -> str | None:
    """The command of a batch job that runs JOB (a snakemake job) without snakemake: its job core
    on its spec (the rule's input ``spec``) with PYTHON, in the submit directory. None for any
    other job (another rule, a group, a job without a spec): it runs snakemake as usual.

    afkit's executors (src/snakemake_executor_plugin_afkit_{htcondor,slurm}) submit this instead
    of the remote snakemake command line (snakemake-interface-executor-plugins'
    ``RealExecutor.format_job_exec``): the worker then starts no snakemake (seconds per job)."""
    if job.is_group() or job.name != JOB_RULE:
        return None
    spec = getattr(job.input, "spec", None)
    if not spec:
        return None
    args = [str(spec), "-o", str(job.output[0]), "--log", str(job.log[0])]
    return f"{python} -m afkit.campaign.jobcore {shlex.join(args)}"


def credential_files(job: SnakemakeJob) -> list[str]:
    """The credential files a benchmark job of a site without the submit host's files takes along
    (its storage's token or proxy and CA bundle, the registry login its pull of the image uses:
    host paths from its spec): afkit's HTCondor executor
    adds them to the job's transfer_input_files, HTCondor puts them at the top of the job's sandbox
    (afkit.campaign.job.in_sandbox) and removes them with it. Not inputs of the rule: a renewed
    token (a newer file) must not make snakemake rerun finished jobs. None for any other job."""
    from afkit.campaign.contract import JobSpec

    given = getattr(job.input, "spec", None) if not job.is_group() and job.name == JOB_RULE else None
    if not given:
        return []
    spec = JobSpec.read(Path(str(given)))
    if spec.site.shared_fs:
        return []
    cred = spec.credential
    files = [f for f in (cred.path, cred.ca) if cred.kind and f]
    return files + ([spec.registry_login] if spec.registry_login else [])


def core_files(pkg: Path) -> list[Path]:
    """The files of afkit's package PKG that a job needs, sorted: its modules and the package data
    next to them (e.g. ROOT macros of the payloads), not compiled files and not ``afkit/data`` (the
    workflow, templates and image profiles: the submit host's)."""
    from afkit.paths import DATA_FOLDER

    return sorted(
        p for p in pkg.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
        and p.relative_to(pkg).parts[0] != DATA_FOLDER
    )  # fmt: skip


def pack(output: Path) -> None:
    """Write afkit's package (the installed one: ``.py`` files and the package data a job needs,
    :func:`core_files`) as the zip OUTPUT."""
    from afkit.campaign.job import package_dir

    pkg = package_dir()
    with atomic_path(output) as tmp, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in core_files(pkg):
            # fixed times: the same sources give the same zip (no rerun of the jobs when unchanged)
            info = zipfile.ZipInfo(str(Path("afkit") / path.relative_to(pkg)), (1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, path.read_bytes())


DESCRIPTION = (
    "Run campaign jobs from their specs (RESULTS/jobspec/BENCH/ID.json, written by planning) and write "
    "their records; several specs run together (a wave at a local site). Exit 0 when every record is "
    "written (status ok or failed), 1 on an error (no record), 130 when interrupted (no record)."
)


def parser() -> argparse.ArgumentParser:
    """The arguments of ``python -m afkit.campaign.jobcore``: those of ``afkit campaign job``."""
    p = argparse.ArgumentParser(prog="python3 -m afkit.campaign.jobcore", description=DESCRIPTION)
    add_arguments(p)
    return p


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("specs", nargs="+", type=Path, metavar="SPEC", help="a job's spec (JSON)")
    p.add_argument("-o", "--output", nargs="+", type=Path, metavar="RECORD",
                   help="where each job's record goes (default: the path its spec names)")  # fmt: skip
    p.add_argument("--log", nargs="+", type=Path, metavar="LOG",
                   help="each job's log (default: beside its record, .log)")  # fmt: skip


def run_specs(specs: list[Path], outputs: list[Path] | None, logs: list[Path] | None) -> int:
    """Run the jobs of SPECS (together when several); 0 when every record is written."""
    from afkit.campaign import interrupt
    from afkit.campaign.contract import JobSpec
    from afkit.campaign.job import run_all
    from afkit.errors import UsageError

    for given, what in ((outputs, "-o RECORD"), (logs, "--log LOG")):
        if given is not None and len(given) != len(specs):
            raise UsageError(f"{len(specs)} spec(s) but {len(given)} {what}: give one per spec")
    jobs = [JobSpec.read(p) for p in specs]
    outs = outputs or [Path(j.record) for j in jobs]
    logs = logs or [o.with_suffix(".log") for o in outs]
    for p in (*outs, *logs):
        p.parent.mkdir(parents=True, exist_ok=True)
    interrupt.install()  # Ctrl-C, SIGTERM: the payloads are stopped, no record is written
    try:
        run_all(jobs, outs, logs)
    except KeyboardInterrupt:
        interrupt.reap()
        print("afkit: interrupted: the job's payload was stopped, no record written", file=sys.stderr)
        return int(ExitCode.INTERRUPTED)
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python3 -m afkit.campaign.jobcore SPEC... [-o RECORD...] [--log LOG...]``: the jobs of the
    specs (paths relative to the working directory, the job's sandbox on a site without the submit
    host's files); exit 0 when their records are written (status ok or failed)."""
    from afkit.cli import print_error

    args = parser().parse_args(sys.argv[1:] if argv is None else argv)
    try:
        return run_specs(args.specs, args.output, args.log)
    except AfkitError as err:
        return print_error(err)
    except KeyboardInterrupt:  # before the handlers were installed: nothing was started
        print("afkit: interrupted: no record written", file=sys.stderr)
        return int(ExitCode.INTERRUPTED)
    except OSError as err:
        print(f"afkit: error: {err} (cwd {os.getcwd()})", file=sys.stderr)
        return int(ExitCode.FAILURE)


if __name__ == "__main__":
    raise SystemExit(main())
