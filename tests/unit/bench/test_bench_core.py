"""The engine core the campaign job runs inside the image: standard library only.

Images built from CVMFS tags have Python but not afkit (nor numpy): the job imports afkit from the
package bound at /afkit (afkit.campaign.job). Here a job runs the way it does there: `python -m
afkit.campaign.steps SPEC` from a directory holding only `afkit` (the bound package), without
site-packages (-S), so any import outside the standard library fails the job.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import time
from pathlib import Path

import afkit
from afkit.campaign.contract import Job, PayloadSpec

PACKAGE = Path(afkit.__file__).resolve().parent


def run_job(tmp_path: Path, **spec_kw: object) -> tuple[dict[str, object], list[str]]:
    root = tmp_path / "container"
    root.mkdir()
    (root / "afkit").symlink_to(PACKAGE)
    data = tmp_path / "data.bin"
    data.write_bytes(b"x" * 300_000)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    job = {"type": "steps", "access": "copy", "urls": [str(data)], "clients": 2, "payload": "builtin",
           "block_size": "64k", "stride": "0", "duration": 1.0, "interval": 0.5}  # fmt: skip
    job.update(spec_kw)
    job = Job.from_dict({"bench": "b", "site": "here", "dataset": "d", "scenario": "origin", "repetition": 0,
                         **job})  # fmt: skip
    result = scratch / "result.json"
    spec = PayloadSpec(job=job, tree="events", scratch=str(scratch), stage_out=str(scratch / "out.json"),
                       result=str(result), t_launch=time.time())  # fmt: skip
    (tmp_path / "spec.json").write_text(spec.to_json())
    code = "import runpy; runpy.run_module('afkit.campaign.steps', run_name='__main__', alter_sys=True)"
    # -S: no site-packages (only the standard library and the working directory); -E: no PYTHON*
    probe = "import atexit, sys; atexit.register(lambda: print('MODULES', *sys.modules, file=sys.stderr))"
    proc = subprocess.run([sys.executable, "-E", "-S", "-c", f"{probe}; {code}", str(tmp_path / "spec.json")],
                          cwd=root, capture_output=True, text=True, check=False, timeout=60)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    modules = proc.stderr.rsplit("MODULES ", 1)[1].split()
    return json.loads(result.read_text()), modules


def test_a_job_runs_with_the_standard_library_alone(tmp_path: Path) -> None:
    rec, modules = run_job(tmp_path)
    assert rec["status"] == "ok", rec
    assert rec["bytes"] == 2 * 300_000 and rec["bytes_staged"] == 300_000  # two clients read the copy
    assert str(rec["engine"]).endswith("/container/afkit)")
    ours = {"afkit", "__main__", "__mp_main__"}
    outside = {m.split(".")[0] for m in modules} - set(sys.stdlib_module_names) - ours
    assert not outside, outside


def test_the_core_parses_as_python_3_9(tmp_path: Path) -> None:
    """The images' Python may be old (AlmaLinux 9: 3.9): the modules the job loads use 3.9 syntax."""
    _rec, modules = run_job(tmp_path, type="read", access="direct")
    loaded = sorted(m for m in modules if m.startswith("afkit"))
    assert "afkit.bench.readbench" in loaded and "afkit.campaign.contract" in loaded
    for name in loaded:
        path = PACKAGE.parent / (name.replace(".", "/") + ".py")
        if not path.is_file():
            path = path.with_suffix("") / "__init__.py"
        ast.parse(path.read_text(encoding="utf-8"), str(path), feature_version=(3, 9))
