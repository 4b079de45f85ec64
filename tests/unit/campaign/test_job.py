"""The job wrapper: apptainer exec of the payload, step timings, failure records, scratch cleanup.

Runs with a test double of apptainer (fixtures/apptainer: no container, binds become path rewrites),
so the payload script and the record format are tested on the host; the real container runs in the
integration tests.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import pytest

from afkit.campaign import job, plan
from afkit.campaign.contract import ImageInfo, JobRecord, JobSpec, SiteSpec
from afkit.errors import one_line

FIXTURES = Path(__file__).parent / "fixtures"
ROOT_DATA = Path(__file__).resolve().parents[2] / "data"


def spec_of(c: Any, j: plan.Job, sif: Path, tmp_path: Path, sha256: str = "0" * 64) -> JobSpec:
    """J's spec as planning makes it, its image described in TMP_PATH/image.json."""
    image = tmp_path / "image.json"
    image.write_text(json.dumps({"path": str(sif), "sha256": sha256, "tag": "T"}), encoding="utf-8")
    return dataclasses.replace(plan.specs(c, [j], results=str(tmp_path / "results"))[0], image=str(image))


def run_one(c: Any, bench: str, sif: Path, tmp_path: Path, n: int = 0) -> dict[str, Any]:
    j = [x for x in plan.expand(c) if x.bench == bench][n]
    spec = spec_of(c, j, sif, tmp_path)
    rec = job.run(spec, output=tmp_path / "out" / f"{j.id}.json", log=tmp_path / "out" / f"{j.id}.log")
    return rec.to_dict()


def steps_campaign(raw: dict[str, Any], access: list[str]) -> dict[str, Any]:
    raw["benchmarks"] = [
        {"name": "s", "type": "steps", "sites": ["here"], "datasets": ["hzz"], "sweep": {"access": access}}
    ]
    return raw


def test_copy_mode_times_every_step(
    raw: dict[str, Any], make: Any, fake_apptainer: Path, tmp_path: Path
) -> None:
    rec = run_one(make(steps_campaign(raw, ["copy"])), "s", fake_apptainer, tmp_path)
    assert rec["status"] == "ok", rec.get("error")
    assert set(rec["steps"]) == {"setup", "stage_in", "processing", "stage_out"}
    assert all(v >= 0 for v in rec["steps"].values())
    assert rec["bytes_staged"] == Path(rec["url"]).stat().st_size
    assert rec["bytes"] == rec["bytes_staged"]  # the staged copy was read once
    assert rec["image_sha256"] == "0" * 64 and len(rec["spec_sha256"]) == 64
    assert (tmp_path / "out" / f"{rec['id']}.json").is_file()
    calls = (tmp_path / "apptainer.calls").read_text()
    assert calls.startswith("-q exec --cleanenv --no-home --contain --pid --pwd / --bind ")
    scratch = Path(raw["sites"]["here"]["scratch"])
    assert list(scratch.iterdir()) == []  # the job's scratch directory is gone


def test_direct_mode_has_no_stage_in(
    raw: dict[str, Any], make: Any, fake_apptainer: Path, tmp_path: Path
) -> None:
    rec = run_one(make(steps_campaign(raw, ["direct"])), "s", fake_apptainer, tmp_path)
    assert rec["status"] == "ok", rec.get("error")
    assert rec["bytes_staged"] == 0
    assert rec["bytes"] > 0


def test_analysis_counts_events(raw: dict[str, Any], make: Any, fake_apptainer: Path, tmp_path: Path) -> None:
    raw["benchmarks"] = [
        {"name": "a", "type": "analysis", "sites": ["here"], "datasets": ["hzz"], "sweep": {"clients": [2]}}
    ]
    rec = run_one(make(raw), "a", fake_apptainer, tmp_path)
    assert rec["status"] == "ok", rec.get("error")
    assert rec["events"] == 2 * 2421  # two clients, each reads the HZZ tree once


def test_read_loops_for_the_duration(
    raw: dict[str, Any], make: Any, fake_apptainer: Path, tmp_path: Path
) -> None:
    gen = Path(raw["storage"]["disk"]["path"])
    for i in range(2):
        (gen / f"afkit-gen-{i:04d}.dat").write_bytes(os.urandom(1 << 20))
    raw["benchmarks"][0].update(duration=0.6, interval=0.2)
    rec = run_one(make(raw), "read", fake_apptainer, tmp_path)
    assert rec["status"] == "ok", rec.get("error")
    assert rec["bytes"] > 2 << 20  # looped over the two files more than once
    assert sum(s["bytes"] for s in rec["intervals"]) == rec["bytes"]
    assert rec["steps"]["processing"] >= 0.6


def test_unreadable_input_gives_a_failed_record(
    raw: dict[str, Any], make: Any, fake_apptainer: Path, tmp_path: Path
) -> None:
    (Path(raw["storage"]["disk"]["path"]) / "hzz" / "uproot-HZZ.root").unlink()
    rec = run_one(make(steps_campaign(raw, ["direct"])), "s", fake_apptainer, tmp_path)
    assert rec["status"] == "failed"
    assert "uproot-HZZ.root" in rec["error"] and "No such file" in rec["error"]
    assert (tmp_path / "out" / f"{rec['id']}.json").is_file()
    assert rec["bottleneck"] == "unknown"


def test_a_job_sampled_while_processing_has_a_bottleneck_verdict(
    raw: dict[str, Any], make: Any, fake_apptainer: Path, tmp_path: Path
) -> None:
    for i in range(2):
        (Path(raw["storage"]["disk"]["path"]) / f"afkit-gen-{i:04d}.dat").write_bytes(os.urandom(1 << 20))
    raw["benchmarks"][0].update(duration=2.2, interval=0.5)
    rec = run_one(make(raw), "read", fake_apptainer, tmp_path)
    assert rec["status"] == "ok", rec.get("error")
    assert rec["bottleneck"] in ("network", "disk", "cpu", "none")  # a sample fell inside the step
    assert rec["bottleneck_reason"]


def test_the_verdict_reads_only_the_samples_of_the_processing_step(tmp_path: Path) -> None:
    mon = tmp_path / "monitor.jsonl"
    busy = {"net_recv_bps": 0, "net_sent_bps": 0, "cpu_percent_per_core": [10.0]}
    times = (101.0, 102.0, 201.0, 202.0)
    lines = [dict(busy, t=t, disk_busy_percent=99.0 if t > 200 else 1.0) for t in times]
    mon.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    rec = JobRecord(status="ok", bytes=10, processing_start=100.2, steps={"processing": 2.0})
    site = SiteSpec(name="here", executor="local", link_rate="125MB/s")
    assert job.job_bottleneck(rec, mon, site)[0] == "none"
    rec.processing_start = 200.2
    assert job.job_bottleneck(rec, mon, site)[0] == "disk"


def test_missing_image_is_a_failed_record_with_apptainer_message(
    raw: dict[str, Any], make: Any, fake_apptainer: Path, tmp_path: Path
) -> None:
    c = make(steps_campaign(raw, ["direct"]))
    j = plan.expand(c)[0]
    spec = spec_of(c, j, fake_apptainer, tmp_path, sha256="x")
    fake_apptainer.unlink()
    with pytest.raises(Exception, match="image not found"):
        job.run(spec, output=tmp_path / "o.json", log=tmp_path / "o.log")
    assert not (tmp_path / "o.json").exists()


def test_afkit_bench_payload_read_and_analysis(
    raw: dict[str, Any], make: Any, fake_apptainer: Path, tmp_path: Path
) -> None:
    """payload afkit-bench: the job runs `python -m afkit bench ...` and takes its intervals and summary."""
    store = Path(raw["storage"]["disk"]["path"])
    (store / "hzz" / "uproot-HZZ-zlib.root").write_bytes((ROOT_DATA / "uproot-HZZ-zlib.root").read_bytes())
    raw["datasets"]["hzz"] = {"storage": "disk", "files": ["hzz/uproot-HZZ.root", "hzz/uproot-HZZ-zlib.root"],
                              "branches": ["Muon_Px"]}  # fmt: skip
    raw["benchmarks"] = [
        {"name": "r", "type": "read", "payload": "afkit-bench", "sites": ["here"], "datasets": ["hzz"],
         "duration": 1, "sweep": {"clients": [2], "block_size": ["64k"]}},
        {"name": "a", "type": "analysis", "payload": "afkit-bench", "sites": ["here"], "datasets": ["hzz"]},
    ]  # fmt: skip
    c = make(raw)
    rec = run_one(c, "r", fake_apptainer, tmp_path)
    assert rec["status"] == "ok", rec.get("error")
    assert rec["afkit_bench"] == "multi"
    assert rec["bytes"] > 0
    assert sum(s["bytes"] for s in rec["intervals"]) == rec["bytes"]
    rec = run_one(c, "a", fake_apptainer, tmp_path)
    assert rec["status"] == "ok", rec.get("error")
    assert rec["afkit_bench"] == "analysis"
    assert rec["events"] == 2 * 2421


def test_afkit_bench_analysis_needs_branches(raw: dict[str, Any]) -> None:
    from afkit.campaign.config import validate
    from afkit.errors import InvalidError

    raw["benchmarks"] = [{"name": "a", "type": "analysis", "payload": "afkit-bench", "sites": ["here"],
                          "datasets": ["hzz"]}]  # fmt: skip
    with pytest.raises(InvalidError, match=r"datasets\.hzz\.branches"):
        validate(raw)


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM", "SIGKILL"])
def test_a_payload_cut_off_by_a_signal_leaves_no_record(
    sig: str,
    raw: dict[str, Any],
    make: Any,
    fake_apptainer: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FAKE_APPTAINER_SIGNAL", sig)
    with pytest.raises(job.JobInterrupted, match="cut off"):
        run_one(make(steps_campaign(raw, ["direct"])), "s", fake_apptainer, tmp_path)
    assert not list((tmp_path / "out").glob("*.json"))  # neither failed nor ok


def test_the_executor_is_read_from_an_htcondor_job_ad(tmp_path: Path) -> None:
    ad = tmp_path / ".job.ad"
    ad.write_text('ClusterId = 42\nProcId = 3\nOwner = "afkit"\n')
    assert job.batch_identity({"_CONDOR_JOB_AD": str(ad), "PATH": "/bin"}) == ("htcondor", "42.3")


def test_the_executor_is_read_from_slurm_job_id() -> None:
    assert job.batch_identity({"SLURM_JOB_ID": "17"}) == ("slurm", "17")


def test_outside_a_batch_job_the_executor_is_local(
    raw: dict[str, Any], make: Any, fake_apptainer: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in ("_CONDOR_JOB_AD", "SLURM_JOB_ID"):
        monkeypatch.delenv(var, raising=False)
    raw = steps_campaign(raw, ["direct"])
    raw["sites"]["here"]["executor"] = "local"
    rec = run_one(make(raw), "s", fake_apptainer, tmp_path)
    assert (rec["executor"], rec["batch_job_id"]) == ("local", "")


def test_a_multi_line_error_is_one_line_with_the_root_cause() -> None:
    stderr = "Traceback (most recent call last):\n  File x\n"
    stderr += "OSError: cannot open root://se//f: [3011] no such file\n"
    assert one_line(stderr) == "OSError: cannot open root://se//f: [3011] no such file"


def test_an_analysis_error_is_one_line_and_the_full_text_is_in_the_log(
    raw: dict[str, Any], make: Any, fake_apptainer: Path, tmp_path: Path
) -> None:
    (Path(raw["storage"]["disk"]["path"]) / "hzz" / "uproot-HZZ.root").unlink()
    raw["benchmarks"] = [{"name": "a", "type": "analysis", "sites": ["here"], "datasets": ["hzz"]}]
    rec = run_one(make(raw), "a", fake_apptainer, tmp_path)
    assert rec["status"] == "failed"
    assert "\n" not in rec["error"] and "uproot-HZZ.root" in rec["error"]  # uproot's usage text is not
    assert "Files may be specified as" not in rec["error"]
    assert "Traceback" in (tmp_path / "out" / f"{rec['id']}.log").read_text()


def test_the_job_runs_the_campaigns_own_afkit_bound_into_the_image(
    raw: dict[str, Any], make: Any, fake_apptainer: Path, tmp_path: Path
) -> None:
    rec = run_one(make(steps_campaign(raw, ["direct"])), "s", fake_apptainer, tmp_path)
    assert rec["status"] == "ok", rec.get("error")
    # the container's /afkit (the fake's root stands for /), not the afkit of the test's venv
    assert rec["engine"] == f"afkit {job.afkit.__version__} ({tmp_path / 'container' / 'afkit'})"
    calls = (tmp_path / "apptainer.calls").read_text()
    assert f"--bind {job.package_dir()}:/afkit:ro" in calls and " -m afkit.campaign.steps " in calls


def test_read_intervals_have_the_campaigns_interval(
    raw: dict[str, Any], make: Any, fake_apptainer: Path, tmp_path: Path
) -> None:
    (Path(raw["storage"]["disk"]["path"]) / "afkit-gen-0000.dat").write_bytes(os.urandom(1 << 20))
    (Path(raw["storage"]["disk"]["path"]) / "afkit-gen-0001.dat").write_bytes(os.urandom(1 << 20))
    raw["benchmarks"][0].update(duration=1.0, interval=0.25)
    rec = run_one(make(raw), "read", fake_apptainer, tmp_path)
    ends = [s["time"] for s in rec["intervals"][:-1]]  # all but the last end on the 0.25 s grid
    assert len(ends) >= 3 and all(abs(t * 4 - round(t * 4)) < 1e-6 for t in ends), ends
    assert all(0 < s["t"] <= rec["steps"]["processing"] + 1e-3 for s in rec["intervals"])


def test_a_payload_result_that_breaks_the_record_contract_is_an_error_naming_the_job(
    raw: dict[str, Any], make: Any, fake_apptainer: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import subprocess

    def payload(cmd: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        result = json.loads(Path(cmd[-1]).read_text(encoding="utf-8"))["result"]  # the payload's spec
        Path(result).write_text(json.dumps({"status": "ok", "bytes": "many"}), encoding="utf-8")
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(job, "_run_payload", payload)
    c = make(steps_campaign(raw, ["direct"]))
    with pytest.raises(job.AfkitError, match=r"job here\.hzz\.origin\.direct.*bytes: 'many' is not int"):
        run_one(c, "s", fake_apptainer, tmp_path)
    assert not list((tmp_path / "out").glob("*.json"))  # no record written


def test_a_sites_env_reaches_its_payload_and_not_the_process_running_the_job(
    raw: dict[str, Any], make: Any, fake_apptainer: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The local executor runs jobs of several sites in one process: a site's env stays its own."""
    import subprocess

    seen: list[dict[str, str]] = []

    def fake(cmd: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        seen.append(env)
        return subprocess.CompletedProcess(cmd, 1, "", "stopped here")

    monkeypatch.setattr(job, "_run_payload", fake)
    monkeypatch.delenv("AFKIT_SITE_ONLY", raising=False)
    raw["sites"]["here"]["env"] = {"AFKIT_SITE_ONLY": "1"}
    rec = run_one(make(steps_campaign(raw, ["direct"])), "s", fake_apptainer, tmp_path)
    assert rec["status"] == "failed"
    assert seen and seen[0]["AFKIT_SITE_ONLY"] == "1"
    assert "AFKIT_SITE_ONLY" not in os.environ


def test_a_failed_processing_step_keeps_the_intervals_and_gaps_its_clients_wrote(tmp_path: Path) -> None:
    """afkit.campaign.processing: what a job record shows of a read that failed (docs/federation.md)."""
    from afkit.campaign import processing

    lines = [
        {"type": "interval", "t": 100, "bytes": 5, "ops": 1, "covered": 1.0},
        {"type": "error", "t": 101.2, "url": "root://h//f", "message": "reset"},
        {"type": "gap", "t": 101.2, "seconds": 3.0, "url": "root://h//f", "recovered": True},
        {"type": "interval", "t": 101, "bytes": 0, "ops": 0, "covered": 1.0},
        {"type": "gap", "t": 104.5, "seconds": 10.0, "url": "root://h//f", "recovered": False},
    ]
    (tmp_path / "bench.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    part = processing.failed_at("reset", tmp_path, 1.0, 100.0)
    assert [(i["t"], i["bytes"]) for i in part.intervals or []] == [(1.0, 5), (2.0, 0)]
    assert [(g["t"], g["recovered"]) for g in part.gaps or []] == [(101.2, True), (104.5, False)]
    assert all("type" not in g for g in part.gaps or [])


def test_a_torn_client_file_leaves_no_partial_result(tmp_path: Path) -> None:
    from afkit.campaign import processing

    (tmp_path / "bench.jsonl").write_text('{"type": "interval", "t": 1', encoding="utf-8")
    part = processing.failed_at("torn", tmp_path, 1.0, 0.0)
    assert (part.intervals, part.gaps) == (None, None)


def test_a_held_job_gets_a_failed_record_with_the_hold_reason(raw: dict[str, Any], make: Any) -> None:
    from afkit.campaign import jobrecord

    c = make(raw)
    j = plan.expand(c)[0]
    spec = plan.specs(c, [j])[0]
    held = job.held_record(spec, image=ImageInfo(path="/i.sif", sha256="0" * 64), batch_job_id="7.0",
                           reason="via condor_hold (by user afkit)", held_s=121, now=1000.0)  # fmt: skip
    rec = held.to_dict()
    assert jobrecord.problems(rec) == []
    assert (rec["status"], rec["hold_reason"], rec["batch_job_id"]) == (
        "failed",
        "via condor_hold (by user afkit)",
        "7.0",
    )
    assert (
        rec["error"] == "held by HTCondor for 121 s, removed from the queue: via condor_hold (by user afkit)"
    )
    assert (rec["start"], rec["end"]) == (879.0, 1000.0)


def test_the_executor_writes_a_held_jobs_record_from_its_spec_alone(
    raw: dict[str, Any], make: Any, fake_apptainer: Path, tmp_path: Path
) -> None:
    """A job's inputs are its spec and its dataset's ready marker: the image is the spec's."""
    from types import SimpleNamespace

    from afkit.campaign import held

    c = make(raw)
    spec = spec_of(c, plan.expand(c)[0], fake_apptainer, tmp_path)
    (tmp_path / "spec.json").write_text(spec.to_json(), encoding="utf-8")
    out = tmp_path / "job" / "r.json"
    inputs = SimpleNamespace(spec=str(tmp_path / "spec.json"), ready="x.ready")
    sm_job = SimpleNamespace(name="job", is_group=lambda: False, output=[str(out)], input=inputs)
    assert held.write_record(sm_job, "7.0", "via condor_hold", 3.0) == str(out)
    rec = JobRecord.read(out)
    assert (rec.status, rec.batch_job_id, rec.image_path) == ("failed", "7.0", str(fake_apptainer))
