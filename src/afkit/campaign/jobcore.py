"""afkit's job core: a benchmark job run on a batch worker without snakemake.

Every batch job of rule ``job`` (HTCondor and SLURM sites) runs ``python -m afkit.campaign.jobcore
SPEC`` instead of a snakemake on the worker (afkit's executors submit :func:`batch_command`); the
spec is made on the submit host by the local rule ``jobspec``, an input of the job. On a site with
the submit host's files the python is the submit host's (snakemake's own, shared software) and the
paths are relative to the submit directory, the job's working directory.

A site with ``shared_fs: false`` (docs/federation.md) cannot see the submit host's checkout, venv
or submit directory. Its jobs import nothing from the submit host either:
the workflow makes, on the submit host, for each such job

- the **core**, ``RESULTS/jobcore/afkit.zip``: afkit's package (its ``.py`` files and the ROOT
  reader macro of ``payload: root``) as a zip; and
- the job's **spec**, ``RESULTS/jobspec/BENCH/ID.json``: the job, its campaign context, the image
  (``image.json``) and the paths of its record and log (relative to the submit directory),

both inputs of the job's rule, so HTCondor transfers them with the job's other inputs
(snakemake-executor-plugin-htcondor lists a job's inputs as ``transfer_input_files``). The job
wrapper (``workflows/scripts/htcondor-sandbox-job``, itself transferred as the job's executable)
unpacks the core in the job's sandbox and runs ``python3 -m afkit.campaign.jobcore SPEC`` with the
worker's own ``python3``: the job wrapper's modules (``afkit.campaign.job`` and what it imports) use
the standard library only. The record is written where the spec says; HTCondor transfers it back.
The payload inside the image runs on the same unpacked package (bound into the container).
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import zipfile
from pathlib import Path
from typing import Any

from afkit.atomic import atomic_path, write_atomic
from afkit.errors import AfkitError, ExitCode

CORE_NAME = "afkit.zip"
JOB_RULE = "job"  # the workflow's rule of a benchmark job (workflows/rules/jobs.smk)


def batch_command(job: Any, python: str) -> str | None:
    """The command of a batch job that runs JOB (a snakemake job) without snakemake: its job core
    on its spec (the rule's input ``jobspec``) with PYTHON, in the submit directory. None for any
    other job (another rule, a group, a job without a spec): it runs snakemake as usual.

    afkit's executors (src/snakemake_executor_plugin_afkit_{htcondor,slurm}) submit this instead
    of the remote snakemake command line (snakemake-interface-executor-plugins'
    ``RealExecutor.format_job_exec``): the worker then starts no snakemake (seconds per job)."""
    if job.is_group() or job.name != JOB_RULE:
        return None
    spec = getattr(job.input, "jobspec", None)
    if not spec:
        return None
    return f"{python} -m afkit.campaign.jobcore {shlex.quote(str(spec))}"


# what the job core carries: afkit's modules and the package data its payloads run (ROOT macros)
PACKED = ("*.py", "*.C")


def pack(output: Path) -> None:
    """Write afkit's package (``.py`` files and ROOT macros, the installed one) as the zip OUTPUT."""
    from afkit.campaign.job import package_dir

    pkg = package_dir()
    files = sorted({p for pattern in PACKED for p in pkg.rglob(pattern)})
    with atomic_path(output) as tmp, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in files:
            # fixed times: the same sources give the same zip (no rerun of the jobs when unchanged)
            info = zipfile.ZipInfo(str(Path("afkit") / path.relative_to(pkg)), (1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, path.read_bytes())


def write_spec(
    output: Path, *, job: dict[str, Any], campaign: dict[str, Any], image: Path, record: str, log: str
) -> None:
    """The job's spec: everything ``run`` needs, the image's description read from IMAGE."""
    spec = {
        "job": job,
        "campaign": campaign,
        "image": json.loads(image.read_text(encoding="utf-8")),
        "record": record,
        "log": log,
    }
    write_atomic(output, json.dumps(spec, indent=1, sort_keys=True) + "\n")


def main(argv: list[str] | None = None) -> int:
    """``python3 -m afkit.campaign.jobcore SPEC.json``: run the job of SPEC (paths relative to the
    working directory, the job's sandbox); exit 0 when its record is written (status ok or failed)."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python3 -m afkit.campaign.jobcore SPEC.json", file=sys.stderr)
        return int(ExitCode.USAGE)
    from afkit.campaign.job import run
    from afkit.cli import print_error

    try:
        spec = json.loads(Path(args[0]).read_text(encoding="utf-8"))
        record, log = Path(spec["record"]), Path(spec["log"])
        for p in (record, log):
            p.parent.mkdir(parents=True, exist_ok=True)
        run(spec["job"], campaign=spec["campaign"], image=spec["image"], output=record, log=log)
    except AfkitError as err:
        return print_error(err)
    except (OSError, KeyError, json.JSONDecodeError) as err:
        print(f"afkit: error: job spec {args[0]}: {err!r} (cwd {os.getcwd()})", file=sys.stderr)
        return int(ExitCode.FAILURE)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
