"""A mixed HTCondor + SLURM campaign in the testbed, from docs/campaigns.md as written.

One run of the documented commands (``workflows/config/testbed-mixed.yaml`` through
``afkit campaign run``) is shared by the assertions that look at its results: the run that
``tests/integration/host/docs_commands.bats`` made from the host, exactly as written, when
``scripts/run-tests`` ran it just before (``AFKIT_DOCS_HOST_RUN=1``), else the same lines run here
without their ``scripts/testbed run`` prefix. The plain-snakemake path, the refusals and the
interrupts (one per batch executor: Ctrl-C to afkit, then the batch job must be gone and the rerun
must redo exactly it) each run on their own, in a directory with ``workflows/`` and ``C.yaml`` as
docs/campaigns.md writes the commands.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from itsupport import REPO
from waitsupport import running, wait_until

from afkit.paths import beside

pytestmark = pytest.mark.testbed

EXAMPLE = REPO / "workflows" / "config" / "testbed-mixed.yaml"
DOC_WORK = Path("/tmp/afkit-example")
HOST_RUN = DOC_WORK / ".afkit-doc-run.json"  # rc and output of the host's run (host/docs_commands.bats)
AS_AFKIT = "setpriv --reuid=afkit --regid=afkit --init-groups env HOME=/home/afkit USER=afkit LOGNAME=afkit "


def doc_block() -> list[str]:
    """The command lines of the docs' testbed-mixed block."""
    text = (REPO / "docs" / "campaigns.md").read_text(encoding="utf-8")
    m = re.search(r"<!-- testbed-mixed:[^\n]*-->\n```sh\n(.*?)```", text, re.S)
    assert m, "docs/campaigns.md lost its testbed-mixed block"
    return [ln for ln in m.group(1).splitlines() if ln.strip()]


def inside(line: str) -> str | None:
    """A documented host command as it runs inside the testbed (we are in it already)."""
    if line == "scripts/testbed up":
        return None  # it is up: this test runs inside it
    line = line.replace("scripts/testbed run --user afkit -- ", AS_AFKIT)
    return line.replace("scripts/testbed run -- ", "")


def as_afkit(cmd: list[str], cwd: Path, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["setpriv", "--reuid=afkit", "--regid=afkit", "--init-groups", *cmd],
        cwd=cwd, env=afkit_env(), capture_output=True, text=True, check=False, timeout=timeout,
    )  # fmt: skip


def afkit_env() -> dict[str, str]:
    return {
        **os.environ,
        "HOME": "/home/afkit",
        "USER": "afkit",
        "LOGNAME": "afkit",
        "XRD_CONNECTIONRETRY": "1",
    }


def jobs_csv(work: Path) -> list[dict[str, str]]:
    [path] = list(work.glob("results/*/aggregate/jobs.csv"))
    with path.open() as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="module")
def documented_run() -> Iterator[subprocess.CompletedProcess[str]]:
    if os.environ.get("AFKIT_DOCS_HOST_RUN") == "1" and HOST_RUN.is_file():
        done = json.loads(HOST_RUN.read_text())
        proc = subprocess.CompletedProcess(done["command"], done["status"], done["stdout"], done["stderr"])
    else:
        shutil.rmtree(DOC_WORK, ignore_errors=True)  # the docs' fixed directory, from an earlier run
        script = "\n".join(c for c in map(inside, doc_block()) if c)
        proc = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=REPO, capture_output=True,
                              text=True, check=False, timeout=900)  # fmt: skip
    try:
        yield proc
    finally:
        shutil.rmtree(DOC_WORK, ignore_errors=True)


def test_documented_mixed_campaign_exits_0(documented_run: subprocess.CompletedProcess[str]) -> None:
    assert documented_run.returncode == 0, documented_run.stderr[-4000:]
    assert documented_run.stdout.strip().endswith("report/report.html")


def test_every_row_names_the_executor_that_ran_it(documented_run: Any) -> None:
    rows = jobs_csv(DOC_WORK)
    assert len(rows) == 8
    assert {r["status"] for r in rows} == {"ok"}, [r["error"] for r in rows]
    for r in rows:
        assert r["executor"] == {"condor": "htcondor", "slurm": "slurm"}[r["site"]]
        assert r["batch_job_id"], r["id"]


def test_the_figures_keep_the_two_sites_apart(documented_run: Any) -> None:
    from afkit.campaign import figures
    from afkit.campaign.rows import read_jobs

    [table] = list(DOC_WORK.glob("results/*/aggregate/jobs.csv"))
    lines = figures.client_lines(read_jobs(table), "analysis")
    assert {k[0] for k in lines} == {"condor <- 127.0.0.1:1094", "slurm <- localhost:1094"}
    html = next(DOC_WORK.glob("results/*/report/report.html")).read_text()
    assert html.count("data:image/png;base64,") >= 2


def test_analysis_job_ids_carry_no_block_size(documented_run: Any) -> None:
    ids = [r["id"] for r in jobs_csv(DOC_WORK) if r["type"] == "analysis"]
    assert ids and not any(".b" in i for i in ids)


def test_job_logs_are_quiet(documented_run: Any) -> None:
    logs = "".join(p.read_text() for p in DOC_WORK.glob("results/*/job/*/*.log"))
    assert "$ apptainer" in logs
    assert "gocryptfs" not in logs
    assert "chdir" not in logs and "WARNING" not in logs


def test_a_rerun_with_nothing_to_do_exits_0(documented_run: Any) -> None:
    proc = as_afkit(["afkit", "campaign", "run", str(EXAMPLE)], DOC_WORK)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Nothing to be done" in proc.stderr


@pytest.fixture
def work() -> Iterator[Path]:
    """A directory of user afkit with the repository's workflows/ in it and C.yaml, the example
    campaign with its image path made absolute."""
    path = Path(f"/tmp/afkit-mixed-{uuid.uuid4().hex[:8]}")
    path.mkdir()
    shutil.chown(path, "afkit", "afkit")
    (path / "workflows").symlink_to(REPO / "workflows")
    variant(path, lambda raw: None)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)  # the directory this test made


def as_afkit_line(line: str, cwd: Path, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    """A command line as docs/campaigns.md writes it, run by user afkit in CWD."""
    return as_afkit(shlex.split(line), cwd, timeout)


def test_plain_snakemake_per_site_then_report(documented_run: Any, work: Path) -> None:
    for line in (
        "snakemake -s workflows/Snakefile --configfile C.yaml --profile workflows/profiles/htcondor --config afkit_site=condor",  # noqa: E501
        "snakemake -s workflows/Snakefile --configfile C.yaml --profile workflows/profiles/slurm --config afkit_site=slurm",  # noqa: E501
        "afkit campaign report C.yaml",
    ):
        proc = as_afkit_line(line, work)
        assert proc.returncode == 0, f"{line}: {proc.stderr[-3000:]}"
    rows = jobs_csv(work)
    assert len(rows) == 8 and {r["status"] for r in rows} == {"ok"}
    assert {r["executor"] for r in rows} == {"htcondor", "slurm"}
    proc = as_afkit_line("snakemake -s workflows/Snakefile --configfile C.yaml --report report.html", work)
    assert proc.returncode == 0, proc.stderr[-3000:]
    html = (work / "report.html").read_text()
    assert "jobs.csv" in html and "report.html" in html


def test_plain_snakemake_with_the_local_profile_refuses(documented_run: Any, work: Path) -> None:
    line = "snakemake -s workflows/Snakefile --configfile C.yaml --profile workflows/profiles/local"
    proc = as_afkit_line(line, work)
    assert proc.returncode == 4, proc.stderr[-3000:]
    assert "condor (htcondor)" in proc.stderr and "slurm (slurm)" in proc.stderr
    assert not list(work.glob("results/*/job"))


def variant(work: Path, change: Any) -> Path:
    raw = yaml.safe_load(EXAMPLE.read_text())
    raw["image"]["sif"] = str(beside(EXAMPLE.parent, raw["image"]["sif"]))  # as afkit takes it
    change(raw)
    path = work / "C.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def test_a_file_missing_on_its_server_stops_before_submission(documented_run: Any, work: Path) -> None:
    variant(work, lambda raw: raw["datasets"]["hzz"]["files"].append("afkit-example/gone.root"))
    proc = as_afkit_line("afkit campaign run C.yaml", work)
    assert proc.returncode == 5, proc.stderr[-3000:]
    assert "root://127.0.0.1:1094//afkit-example/gone.root" in proc.stderr
    assert not list(work.glob("results/*/*"))  # nothing submitted, nothing written


def queued(executor: str, work: Path) -> list[str]:
    if executor == "htcondor":
        cmd = ["condor_q", "-constraint", f'Iwd == "{work}"', "-af", "ClusterId"]
        return as_afkit(cmd, work, timeout=60).stdout.split()
    out = as_afkit(["squeue", "-h", "-u", "afkit", "-o", "%i %Z"], work, timeout=60).stdout
    return [ln.split()[0] for ln in out.splitlines() if ln.split()[1:] == [str(work)]]


def _proc_tree() -> dict[int, tuple[int, str, str]]:
    """pid -> (parent pid, state, cmdline) of every process."""
    tree = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmd = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, IndexError):
            continue
        tree[int(stat.parent.name)] = (int(fields[1]), fields[0], cmd)
    return tree


def job_processes(work: Path) -> dict[int, str]:
    """The running processes of this test's batch job: its job core (working directory WORK) and
    everything below it (Apptainer's starter, the container's init, the payload)."""
    tree = _proc_tree()
    found: dict[int, str] = {}
    for pid, (_, state, cmd) in tree.items():
        with contextlib.suppress(OSError):
            if (
                "afkit.campaign.jobcore" in cmd
                and state != "Z"
                and Path(f"/proc/{pid}/cwd").resolve() == work
            ):
                found[pid] = cmd
    grew = True
    while grew:
        below = {p: c for p, (pp, st, c) in tree.items() if pp in found and p not in found and st != "Z"}
        found.update(below)
        grew = bool(below)
    return found


def in_container(procs: dict[int, str]) -> dict[int, str] | None:
    """PROCS once the container's init (Apptainer's appinit, --pid) is among them."""
    return procs if any(c.startswith("appinit") for c in procs.values()) else None


def alive(pids: Iterable[int]) -> list[int]:
    return [p for p in pids if running(p)]


@pytest.mark.parametrize(("executor", "site"), [("htcondor", "condor"), ("slurm", "slurm")])
def test_ctrl_c_cuts_the_batch_job_off_and_the_rerun_redoes_it(
    documented_run: Any, work: Path, executor: str, site: str
) -> None:
    """Ctrl-C while the job's payload runs: afkit returns 130 only when the batch system has none of
    the campaign's jobs, no process of the job is left (also none reparented out of the batch
    system's tracking), the SLURM node is not drained and no record is written; the rerun redoes
    exactly the job (docs/campaigns.md, "Campaign interrupted"; tests/soak/interrupt_soak.py does
    this 30 times at random moments)."""

    def one_long_job(raw: dict[str, Any]) -> None:
        raw["name"] = f"it-interrupt-{executor}"
        raw["benchmarks"] = [{"name": "long", "type": "read", "sites": [site], "datasets": ["hzz"],
                              "duration": 20, "sweep": {"block_size": ["256k"]}}]  # fmt: skip

    variant(work, one_long_job)
    cmd = [
        "setpriv",
        "--reuid=afkit",
        "--regid=afkit",
        "--init-groups",
        *shlex.split("afkit campaign run C.yaml"),
    ]
    run = subprocess.Popen(
        cmd, cwd=work, env=afkit_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        payload = wait_until(lambda: in_container(job_processes(work)), timeout=240,
                             what="the job's payload in its container", proc=run)  # fmt: skip
        run.send_signal(signal.SIGINT)  # Ctrl-C to afkit
        out, _ = run.communicate(timeout=300)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == 130, out[-4000:]
    # all at afkit's exit, no waiting: afkit returned only once nothing of the campaign was left
    assert not queued(executor, work), out[-2000:]
    assert not alive(payload), [payload[p] for p in alive(payload)]
    if executor == "slurm":
        assert "drain" not in as_afkit(["sinfo", "-h", "-o", "%T"], work, timeout=60).stdout
    assert "have no record" in out.splitlines()[-1], out[-2000:]  # said last, once the jobs were gone
    assert not list(work.glob("results/*/job/*/*.json")), out[-2000:]  # neither failed nor ok
    again = as_afkit_line("afkit campaign retry C.yaml --missing", work)
    assert again.returncode == 0, again.stderr[-3000:]
    [record] = list(work.glob("results/*/job/*/*.json"))
    assert json.loads(record.read_text())["status"] == "ok"
