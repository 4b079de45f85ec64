"""payload: root in a campaign: its keys, the image's ROOT checked before any job, the job record's
ROOT counts, the job core carrying the reader macro. The payload's reads with the real ROOT are in
tests/unit/bench/test_bench_rootread.py; in an image, over root:// through XCache, in
tests/integration/test_image_realroot.py."""

from __future__ import annotations

import json
import os
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from afkit.campaign import config, image, jobcore, jobrecord
from afkit.campaign.contract import ImageInfo
from afkit.errors import ExitCode, InvalidError, PrereqError

REPO = Path(__file__).resolve().parents[3]


def analysis(raw: dict[str, Any], **bench: Any) -> dict[str, Any]:
    raw["benchmarks"] = [{"name": "a", "type": "analysis", "sites": ["here"], "datasets": ["hzz"], **bench}]
    return raw


def test_payload_root_and_its_reader_settings_validate(raw: dict[str, Any]) -> None:
    cfg = config.validate(analysis(raw, payload="root", root={"reader": "rdataframe", "cache_mb": 0}))
    assert cfg["benchmarks"][0]["root"] == {"reader": "rdataframe", "work": "read", "cache_mb": 0}


def test_the_reader_settings_reach_the_jobs_spec_and_its_root_client(raw: dict[str, Any], make: Any) -> None:
    """Planning puts the benchmark's root key into each job's spec; the payload's spec carries it
    into the image, where each client is a ROOT reader with those settings."""
    from afkit.bench.rootread import RootReadConfig
    from afkit.campaign import plan, processing
    from afkit.campaign.contract import JobSpec, PayloadSpec

    c = make(analysis(raw, payload="root", root={"reader": "rdataframe", "work": "histogram", "cache_mb": 8}))
    spec = JobSpec.from_json(plan.specs(c, plan.expand(c)[:1])[0].to_json())
    assert (spec.root.reader, spec.root.work, spec.root.cache_mb) == ("rdataframe", "histogram", 8.0)
    inside = PayloadSpec(job=spec.job, tree="DF_*/O2track", scratch="/tmp", stage_out="", result="",
                         t_launch=0.0, root=spec.root)  # fmt: skip
    client = processing.client_config(inside, ["f.root"], 1.0)
    assert isinstance(client, RootReadConfig)
    assert (client.reader, client.work, client.cache_mb, client.tree) == (
        "rdataframe",
        "histogram",
        8.0,
        "DF_*/O2track",
    )
    assert client.branches == list(spec.job.branches)


def test_payload_root_is_for_analysis_benchmarks_only(raw: dict[str, Any]) -> None:
    raw["benchmarks"][0]["payload"] = "root"
    with pytest.raises(InvalidError, match=r"benchmarks\[0\]\.payload: root runs analysis benchmarks only"):
        config.validate(raw)


def test_reader_settings_without_payload_root_are_refused(raw: dict[str, Any]) -> None:
    with pytest.raises(InvalidError, match=r"benchmarks\[0\]\.root: the ROOT reader's settings need payload"):
        config.validate(analysis(raw, root={"work": "histogram"}))


def test_an_unknown_reader_is_refused_by_the_schema(raw: dict[str, Any]) -> None:
    with pytest.raises(InvalidError, match="reader"):
        config.validate(analysis(raw, payload="root", root={"reader": "tbrowser"}))


def test_the_job_records_root_counts_are_optional_integer_columns() -> None:
    for name in ("root_bytes_read", "root_read_calls", "root_vector_reads"):
        assert name in jobrecord.COLUMNS
    ok = {"status": "ok", "root_bytes_read": 10, "root_read_calls": 2, "root_vector_reads": 1}
    assert not [p for p in jobrecord.problems(ok, part="payload") if p.startswith("root_")]
    assert "root_read_calls: '2' is not int" in jobrecord.problems(
        {**ok, "root_read_calls": "2"}, part="payload"
    )


def test_the_job_core_carries_the_reader_macro(tmp_path: Path) -> None:
    jobcore.pack(tmp_path / "afkit.zip")
    with zipfile.ZipFile(tmp_path / "afkit.zip") as zf:
        names = zf.namelist()
    assert {"afkit/bench/rootread/afkit_read.C", "afkit/bench/rootread/afkit_read_rdf.C",
            "afkit/bench/rootread.py"} <= set(names)  # fmt: skip


@pytest.fixture
def root_json(tmp_path: Path) -> Path:
    out = tmp_path / "results" / "image" / "root.json"
    out.parent.mkdir(parents=True)
    return out


def check(fake_sif: Path, out: Path) -> None:
    """check_root on the fake image: the stand-in apptainer runs the probe on this host."""
    info = ImageInfo(path=str(fake_sif), sha256="0" * 64, tag="O2Physics/daily-x")
    image.check_root(info, ["ao2d"], output=out, log=out.with_suffix(".log"))


def test_an_image_without_root_is_refused_naming_the_tag(
    fake_apptainer: Path, root_json: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = [p for p in os.environ["PATH"].split(os.pathsep) if not (Path(p) / "root.exe").exists()]
    monkeypatch.setenv("PATH", os.pathsep.join(path))
    with pytest.raises(PrereqError) as err:
        check(fake_apptainer, root_json)
    assert err.value.code == ExitCode.PREREQ
    assert str(err.value) == (
        "the image of tag O2Physics/daily-x has no ROOT (no root.exe on PATH in its environment), but "
        "benchmark(s) ao2d run the image's own ROOT (payload: root); no job ran"
    )
    refused = image.refusal(root_json.parents[1])  # what afkit campaign run exits with
    assert refused is not None and refused.code == ExitCode.PREREQ and "has no ROOT" in str(refused)
    assert not root_json.exists()


def test_an_image_with_root_passes_and_says_which(
    fake_apptainer: Path, root_json: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake = tmp_path / "rootbin"
    fake.mkdir()
    for name, text in (("root.exe", "exit 0"), ("root-config", "echo 6.40.00")):
        (fake / name).write_text(f"#!/bin/sh\n{text}\n")
        (fake / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    (root_json.parent / image.REFUSED).write_text('{"error": "old", "hint": "", "code": 3}')
    check(fake_apptainer, root_json)
    assert json.loads(root_json.read_text()) == {"root_exe": str(fake / "root.exe"), "version": "6.40.00"}
    assert not (root_json.parent / image.REFUSED).exists()  # an earlier refusal is gone


def test_every_job_waits_for_the_root_check(raw: dict[str, Any], write: Any, tmp_path: Path) -> None:
    """snakemake's dry run: with a payload: root benchmark, rule image_root is an input of every job."""
    import subprocess

    raw = analysis(raw, payload="root")
    raw["benchmarks"].append({"name": "r", "type": "read", "sites": ["here"], "datasets": ["gen"]})
    cfile = write(raw)
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "-s", str(REPO / "workflows" / "Snakefile"), "--configfile",
         str(cfile), "-n", "--cores", "1"],
        cwd=tmp_path, capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "image_root" in proc.stdout
