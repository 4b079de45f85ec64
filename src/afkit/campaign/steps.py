"""A campaign job inside the image: time each step of the job, HammerCloud-style.

The job wrapper (afkit.campaign.job) runs ``python -m afkit.campaign.steps SPEC.json`` inside the
image with afkit's package bound read-only at ``/afkit`` and ``/`` as the working directory, where
``-m`` finds it: images built from CVMFS tags do not contain afkit. Steps: ``setup`` (container
start + the software environment: the imports the processing needs), ``stage_in`` (copy mode: the
inputs copied to the job's scratch; 0 in direct mode), ``processing`` (afkit.campaign.processing: N
clients of afkit's benchmark engine) and ``stage_out`` (the job's output written back).

Writes the payload's part of the job record (afkit.campaign.contract.PayloadResult) to the file the
spec names (``result``, in the job's scratch); exit 1 when the job failed (the result says why).
Standard library only, plus the image's XRootD bindings for ``root://`` inputs and uproot for
analysis jobs (payload root: the image's ROOT, ``root.exe`` on PATH, and neither of them).
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import shutil
import sys
import time
import traceback
from pathlib import Path

import afkit
from afkit.atomic import atomic_path
from afkit.bench.rootread import find_root
from afkit.bench.sources import fetch, import_xrootd_client, is_xrootd_url
from afkit.campaign import processing
from afkit.campaign.contract import PayloadResult, PayloadSpec
from afkit.errors import one_line
from afkit.image.model import INFO_PATH, EnvVar


def describe(err: BaseException) -> str:
    """'Type: message', with the system's reason when an OSError caused it (No such file ...) and
    an afkit error's hint (the trees in the file, for a tree it does not hold)."""
    text = f"{type(err).__name__}: {err}"
    hint = getattr(err, "hint", None)  # afkit.errors.AfkitError's: what to do about it
    if hint:
        text += f" ({hint})"
    cause = err.__cause__
    if isinstance(cause, OSError) and cause.strerror and cause.strerror not in text:
        text += f" ({cause.strerror})"
    return text


def software_env(info_path: str = INFO_PATH) -> dict[str, object]:
    """The tag environment of an image built by `afkit image build`, as the job sees it: the tag,
    how many of its variables there are, those the job's environment lacks (or has with another
    value: the check of `afkit image validate`) and the values of the profile's required ones.
    Empty for other images."""
    try:
        info = json.loads(Path(info_path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    env = [EnvVar(str(v["name"]), str(v["value"]), bool(v.get("inherit"))) for v in info.get("env", [])]
    return {
        "tag": info.get("tag", ""),
        "vars": len(env),
        "missing": [v.name for v in env if not v.holds(os.environ.get(v.name))],
        "required": {name: os.environ.get(name) for name in info.get("required", [])},
    }


def stage_in(spec: PayloadSpec) -> tuple[list[str], int]:
    """(the inputs to process, bytes copied): copy mode copies them into the job's scratch."""
    urls = spec.job.urls
    if spec.job.access != "copy":
        return list(urls), 0
    dest_dir = os.path.join(spec.scratch, "input")
    os.makedirs(dest_dir, exist_ok=True)
    local = [os.path.join(dest_dir, f"{i:04d}-{os.path.basename(u.rstrip('/'))}") for i, u in enumerate(urls)]
    return local, sum(fetch(url, local[i]) for i, url in enumerate(urls))


def stage_out(spec: PayloadSpec, result: dict[str, int]) -> int:
    src = os.path.join(spec.scratch, "output.json")
    with open(src, "w", encoding="utf-8") as fh:
        json.dump(result, fh)
    with atomic_path(spec.stage_out) as tmp:
        shutil.copyfile(src, tmp)
    return os.path.getsize(spec.stage_out)


def run_steps(spec: PayloadSpec, steps: dict[str, float]) -> PayloadResult:
    """Set up, stage in, process, stage out; STEPS gets each step's seconds as it ends. What the
    steps measured: the processing's metrics (afkit.campaign.processing), the bytes staged in and
    written back, the processing's start."""
    root = spec.job.payload == "root"  # the image's ROOT reads (its own XRootD client, TNetXNG)
    if root:
        find_root()
    elif spec.job.type == "analysis":
        importlib.import_module("uproot")
    if any(is_xrootd_url(u) for u in spec.job.urls) and (not root or spec.job.access == "copy"):
        import_xrootd_client()  # with afkit's XRootD client settings (afkit.bench.sources)
    t = time.time()
    steps["setup"] = t - spec.t_launch
    inputs, staged = stage_in(spec)
    steps["stage_in"] = time.time() - t
    start = time.time()
    out = processing.process(spec, inputs, Path(spec.scratch) / "bench")
    steps["processing"] = time.time() - start
    t = time.time()
    written = stage_out(spec, {"bytes": out.bytes or 0, "events": out.events or 0})
    steps["stage_out"] = time.time() - t
    return dataclasses.replace(out, bytes_staged=staged, processing_start=start, bytes_out=written)


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] in ("-h", "--help"):
        print(f"usage: python -m afkit.campaign.steps SPEC.json\n{__doc__}", file=sys.stderr)
        return 0 if argv in (["-h"], ["--help"]) else 2
    spec = PayloadSpec.read(Path(argv[0]))
    engine = f"afkit {afkit.__version__} ({os.path.dirname(afkit.__file__ or '')})"
    steps: dict[str, float] = {}
    rec = PayloadResult(host=os.uname().nodename, container_start=time.time(), status="ok", steps=steps,
                        engine=engine, software_env=software_env() or None)  # fmt: skip
    # software_env before the job's own settings change the environment
    os.environ.update(spec.env)  # XRD_* of the job's
    try:
        rec = rec.updated(run_steps(spec, steps))
    except Exception as err:  # the result carries the failure; the wrapper decides what it means
        traceback.print_exc(file=sys.stderr)  # the whole story goes to the job's log
        shown: BaseException = err
        if isinstance(err, processing.ProcessingFailed):  # its intervals and gaps until the failure
            rec.intervals, rec.gaps = err.intervals, err.gaps
            shown = err.__cause__ or err  # the message is the real error's
        rec.status, rec.error = "failed", one_line(describe(shown), marks=(), first=True)
    rec.write(Path(spec.result))
    return 0 if rec.status == "ok" else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
