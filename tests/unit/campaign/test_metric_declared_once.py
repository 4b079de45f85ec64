"""A payload metric is declared once (its field of afkit.campaign.contract.JobRecord), and that is all
a new one takes: it is then measured, in the payload's result, in the record and in jobs.csv.

The test adds one metric to a copy of afkit (ROOT's tree-cache bytes, ``cache_bytes`` of each root
client's summary, afkit.bench.rootread) by one line in the declaration and nowhere else, runs a
root payload's steps on it (its clients stood in for), puts the result into a record, aggregates
the table and reads it back.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path

from afkit.campaign import contract, processing

SRC = Path(contract.__file__).resolve().parents[2]  # the afkit under test: its src directory
DECLARATION = (
    "    root_cache_bytes: int | None = field(default=None, metadata=_metric(\n"
    '        "bytes the tree caches read (payload root)", source="root.cache_bytes", payloads=("root",),\n'
    '        unit="bytes"))  # fmt: skip\n'
)
END_OF_FIELDS = "\n    @classmethod\n    def planned("

# runs on the copy: a root payload's steps, its result into a record, the tables, the rows
SCRIPT = r"""
import json, sys
from pathlib import Path
from afkit.bench.multi import client_path
from afkit.campaign import aggregate, processing, rows, steps
from afkit.campaign.contract import Job, JobRecord, PayloadResult, PayloadSpec

tmp = Path(sys.argv[1])

def run_threads(configs, out_dir):
    out_dir.mkdir(parents=True, exist_ok=True)
    out = []
    for k in range(len(configs)):
        rec = {"type": "interval", "t": 10.0, "bytes": 100, "ops": 1, "events": 5}
        client_path(out_dir, k).write_text(json.dumps(rec) + "\n", encoding="utf-8")
        root = {"bytes_read": 110, "read_calls": 3, "vector_reads": 1, "cache_bytes": 1000 * (k + 1)}
        out.append({"type": "summary", "bytes": 100, "events": 5, "root": root})
    return out

steps.find_root = lambda: "root.exe"
processing.run_threads = run_threads
data = tmp / "f.root"
data.write_bytes(b"x")
job = Job(bench="a", type="analysis", site="here", dataset="d", scenario="origin", access="direct",
          clients=2, block_size="1M", stride="0", repetition=0, payload="root", branches=("px",),
          urls=(str(data),))
spec = PayloadSpec(job=job, tree="events", scratch=str(tmp), stage_out=str(tmp / "out.json"),
                   result=str(tmp / "result.json"), t_launch=0.0)
(tmp / "spec.json").write_text(spec.to_json(), encoding="utf-8")
assert steps.main([str(tmp / "spec.json")]) == 0
result = PayloadResult.read(tmp / "result.json")
base = JobRecord.planned(job)
base.campaign, base.image_sha256, base.image_tag, base.image_path = "c", "0" * 64, "T", "i.sif"
base.executor, base.batch_job_id, base.url, base.files, base.start, base.end = "local", "", "u", 1, 0.0, 1.0
base.image_fingerprint, base.bottleneck, base.bottleneck_reason = "", "cpu", "r"
base.wn_site, base.wn_address, base.submit_files, base.submit_host = "", "", "shared", "s"
record = base.updated(result)
record.write(tmp / "record.json")
aggregate.aggregate([JobRecord.read(tmp / "record.json")], tmp / "jobs.csv", tmp / "intervals.csv")
row = rows.read_jobs(tmp / "jobs.csv")[0]
print(json.dumps({
    "result": json.loads((tmp / "result.json").read_text()),
    "record": json.loads((tmp / "record.json").read_text()),
    "header": (tmp / "jobs.csv").read_text().splitlines()[0].split(","),
    "cell": row.value("root_cache_bytes"),
}))
"""


def test_one_declaration_puts_a_new_metric_in_the_result_the_record_and_the_table(tmp_path: Path) -> None:
    copy = tmp_path / "src"
    shutil.copytree(SRC / "afkit", copy / "afkit", ignore=shutil.ignore_patterns("__pycache__"))
    module = copy / "afkit" / "campaign" / "contract.py"
    text = module.read_text(encoding="utf-8")
    assert text.count(END_OF_FIELDS) == 1
    module.write_text(text.replace(END_OF_FIELDS, "\n" + DECLARATION + END_OF_FIELDS), encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(work)], capture_output=True, text=True,
                          env={"PYTHONPATH": str(copy), "PATH": "/usr/bin:/bin"}, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout)
    assert seen["result"]["root_cache_bytes"] == 3000  # summed over the two clients
    assert seen["record"]["root_cache_bytes"] == 3000
    assert seen["header"][-1] == "root_cache_bytes"  # appended: the columns before keep their place
    assert seen["header"][:-1] == contract.COLUMNS
    assert seen["cell"] == 3000  # read back typed


def test_a_metric_of_other_payloads_is_left_out() -> None:
    """``payloads`` says who produces a metric: a builtin payload has no ROOT counts, a root one no
    rootreadspeed verdict, though the summaries carry the keys."""
    summary = {
        "bytes": 5,
        "kind": "analysis",
        "root": {"bytes_read": 7},
        "readspeed": {"verdict": "io-bound"},
    }
    assert processing.measured("builtin", [summary]) == {"bytes": 5, "events": 0}
    assert processing.measured("root", [summary, summary])["root_bytes_read"] == 14
    assert "readspeed_verdict" not in processing.measured("root", [summary])
    assert processing.measured("afkit-bench", [summary])["afkit_bench"] == "analysis"
    assert processing.measured("rootreadspeed", [summary])["readspeed_verdict"] == "io-bound"


def test_the_typed_arguments_of_a_job_are_its_fields() -> None:
    """Job.from_dict builds a Job through _JobArgs, a second list of Job's fields (for mypy): it
    must name exactly Job's fields, or a new field goes unchecked."""
    assert set(contract._JobArgs.__annotations__) == {f.name for f in dataclasses.fields(contract.Job)}
