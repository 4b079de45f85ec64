"""afkit study list|show as docs/studies.md writes them, and the errors of run/page before any job."""

from __future__ import annotations

import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml


def afkit(line: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    argv = shlex.split(line)
    assert argv[0] == "afkit"
    return subprocess.run([sys.executable, "-m", "afkit", *argv[1:]], capture_output=True, text=True,
                          cwd=cwd, check=False)  # fmt: skip


def test_study_list_names_the_studies() -> None:
    proc = afkit("afkit study list")
    assert proc.returncode == 0
    names = [line.split()[0] for line in proc.stdout.splitlines()]
    assert names == sorted(names) and {"dcotf-xcache", "fr-alpes", "gsi-trains"} <= set(names)
    assert "The ALICE Analysis Facility Prototype at GSI" in proc.stdout


def test_study_show_prints_roles_parameters_and_claims() -> None:
    proc = afkit("afkit study show gsi-trains")
    assert proc.returncode == 0
    assert "servers    storage-list" in proc.stdout
    assert "demand: 2.5MB/s" in proc.stdout  # the box's
    assert "server-knee:" in proc.stdout and "'r2_min': 0.95" in proc.stdout


def test_study_show_fr_alpes_prints_its_site_list_roles_and_claims() -> None:
    proc = afkit("afkit study show fr-alpes")
    assert proc.returncode == 0
    assert "workers    site-list" in proc.stdout and "data       storage-list" in proc.stdout
    assert "reco_file_mb: 20" in proc.stdout  # the box's
    assert "copy-varies:" in proc.stdout and "'ratio_min': 2.0" in proc.stdout


def test_study_show_prague_diskserver_prints_its_parameters_and_claims() -> None:
    proc = afkit("afkit study show prague-diskserver")
    assert proc.returncode == 0
    assert "tuned_read_ahead_kb: 1024" in proc.stdout and "data_dir:" in proc.stdout
    assert "runs on the host the command runs on, as root" in proc.stdout and "roles" not in proc.stdout
    assert "tuned-reads-faster:" in proc.stdout and "'cut_min': 0.05" in proc.stdout


def test_study_show_kit_htda_prints_its_sources_demand_and_claims() -> None:
    proc = afkit("afkit study show kit-htda")
    assert proc.returncode == 0
    assert (
        "demand: 0.5MB/s" in proc.stdout and "slow_mbit: 16" in proc.stdout and "sources: {}" in proc.stdout
    )
    assert "network-plateau:" in proc.stdout and "'kind': 'not_here'" in proc.stdout


def test_an_unknown_study_is_exit_5_naming_the_studies() -> None:
    proc = afkit("afkit study show nosuch")
    assert proc.returncode == 5
    assert "no study named 'nosuch'" in proc.stderr and "gsi-trains" in proc.stderr


def test_a_sites_file_without_a_role_is_exit_6_naming_it(tmp_path: Path) -> None:
    sites = {"image": {"sif": "x.sif"}, "sites": {"farm": {"executor": "local", "storage": "a"}},
             "storage": {"a": {"url": "root://a:1094", "path": str(tmp_path)}},
             "roles": {"workers": "farm", "server": "a"}}  # fmt: skip
    (tmp_path / "my-sites.yaml").write_text(yaml.safe_dump(sites))
    proc = afkit("afkit study run gsi-trains --sites my-sites.yaml", cwd=tmp_path)
    assert proc.returncode == 6
    assert "roles.servers is missing" in proc.stderr
    assert not (tmp_path / "studies").exists()  # nothing written, nothing started


def test_a_role_naming_an_unknown_storage_is_exit_6(tmp_path: Path) -> None:
    sites = {"image": {"sif": "x.sif"}, "sites": {"farm": {"executor": "local", "storage": "a"}},
             "storage": {"a": {"url": "root://a:1094", "path": str(tmp_path)}},
             "roles": {"workers": "farm", "server": "a", "servers": ["a", "b"]}}  # fmt: skip
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(sites))
    proc = afkit("afkit study run gsi-trains --sites s.yaml", cwd=tmp_path)
    assert proc.returncode == 6
    assert "roles.servers: 'b' is not in storage (a)" in proc.stderr


def test_set_rejects_a_parameter_the_study_lacks(tmp_path: Path) -> None:
    proc = afkit("afkit study run gsi-trains --sites s.yaml --set nosuch=1", cwd=tmp_path)
    assert proc.returncode == 5  # the sites file is looked at first: missing
    sites = {"image": {"sif": "x.sif"}, "sites": {"farm": {"executor": "local", "storage": "a"}},
             "storage": {"a": {"url": "root://a:1094", "path": str(tmp_path)}},
             "roles": {"workers": "farm", "server": "a", "servers": ["a"]}}  # fmt: skip
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(sites))
    proc = afkit("afkit study run gsi-trains --sites s.yaml --set nosuch=1", cwd=tmp_path)
    assert proc.returncode == 2
    assert "has no parameter 'nosuch'" in proc.stderr


CHILD = """
import os, signal, sys
from pathlib import Path
out, release = Path(sys.argv[1]), Path(sys.argv[1] + ".release")
def stop(signum, frame):
    with out.open("a") as f:
        f.write(signal.Signals(signum).name + "\\n")
    while not release.exists():  # its own stop lasts until the test lets it end (snakemake cancelling)
        os.sched_yield()
    with out.open("a") as f:
        f.write("stopped\\n")
    raise SystemExit(130)
signal.signal(signal.SIGINT, stop)
out.write_text("")
while True:
    signal.pause()
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupt_of_a_study_stops_its_campaign_run_and_waits_for_it(
    tmp_path: Path, sig: signal.Signals
) -> None:
    """SIGINT or SIGTERM to `afkit study run`'s process alone: its `afkit campaign run` gets one
    SIGINT (as from Ctrl-C: it stops its snakemake), and the study exits 130 only once it has ended."""
    from waitsupport import wait_until

    said = tmp_path / "child.txt"
    study = (
        "import sys; from afkit import signals\n"
        "raise SystemExit(signals.forwarded([sys.executable, '-c', sys.argv[1], sys.argv[2]]))\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", study, CHILD, str(said)])
    try:
        wait_until(said.is_file, 60, what="the campaign run to start", proc=proc)
        proc.send_signal(sig)
        wait_until(lambda: "SIGINT" in said.read_text(), 60, what="the campaign run's stop", proc=proc)
        assert proc.poll() is None  # the study waits while its campaign run stops
        Path(f"{said}.release").touch()
        assert proc.wait(timeout=60) == 130
    finally:
        proc.kill()
        proc.wait()
    assert said.read_text() == "SIGINT\nstopped\n"  # one SIGINT, and its stop ran to its end
