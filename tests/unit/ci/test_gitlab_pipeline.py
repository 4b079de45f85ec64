"""The GitLab pipelines as GitLab reads them: .gitlab-ci.yml and every generated child pipeline
against GitLab's published CI schema (ci/schema/gitlab-ci.json), resource_group keys against
GitLab's key rule, publish only from protected refs. Runs ci/cicfg.py as the CI scripts do."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
CICFG = REPO / "ci" / "cicfg.py"
PROFILES = sorted(p.parent.name for p in (REPO / "images").glob("*/tags.yaml"))
# Tags that stretch the key: '+' (not allowed in a key or an OCI name), a long version, one word.
EDGE_TAGS = "AliPhysics/vAN-20201018_ROOT6-1 Root+Fix/v6.30+p1 O2Physics/" + "d" * 120


def cicfg(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(CICFG), *map(str, args)], capture_output=True, text=True)


def child(
    tmp_path: Path, profile: str, override: str | None = None, functional: str = "none"
) -> tuple[Path, dict[str, Any]]:
    out = tmp_path / f"{profile}-{functional}.yml"
    extra = ["--override", override] if override else []
    extra += ["--functional", functional]
    proc = cicfg("child", "--images", REPO / "images", "--profile", profile, "--output", out, *extra)
    assert proc.returncode == 0, proc.stderr
    return out, yaml.safe_load(out.read_text())


def resource_group_pattern() -> Any:
    sys.path.insert(0, str(CICFG.parent))
    try:
        import cicfg as module  # the module the ci scripts run
    finally:
        sys.path.remove(str(CICFG.parent))
    return module.GITLAB_RESOURCE_GROUP


def test_the_parent_pipeline_is_valid_gitlab_ci() -> None:
    proc = cicfg("pipeline", REPO / ".gitlab-ci.yml")
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("profile", PROFILES)
def test_every_child_pipeline_is_valid_gitlab_ci(tmp_path: Path, profile: str) -> None:
    path, _ = child(tmp_path, profile)
    proc = cicfg("pipeline", path)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("profile", PROFILES)
def test_every_resource_group_key_is_one_gitlab_accepts(tmp_path: Path, profile: str) -> None:
    override = EDGE_TAGS if profile == "alice" else None
    _, doc = child(tmp_path, profile, override)
    jobs = [job for job in doc.values() if isinstance(job, dict)]
    keys = [job["resource_group"] for job in jobs if "resource_group" in job]
    assert keys, "no publish job has a resource_group"
    pattern = resource_group_pattern()
    for key in keys:
        assert pattern.fullmatch(key) and len(key) <= 255, key
    assert len(set(keys)) == len(keys)


@pytest.mark.parametrize("key", ["publish:alice:AliPhysics:vAN-1", "/publish/a", "publish/a/", "a+b", "a@b"])
def test_keys_gitlab_refuses_are_reported(tmp_path: Path, key: str) -> None:
    bad = tmp_path / "bad.yml"
    bad.write_text(yaml.safe_dump({"job": {"script": ["true"], "resource_group": key}}))
    proc = cicfg("pipeline", bad)
    assert proc.returncode == 6 and "is not a key GitLab accepts" in proc.stderr


def test_schema_errors_are_reported_with_the_job(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yml"
    bad.write_text(yaml.safe_dump({"job": {"script": ["true"], "when": "sometimes"}}))
    proc = cicfg("pipeline", bad)
    assert proc.returncode == 6 and "job/when: 'sometimes' is not one of" in proc.stderr


def test_publish_runs_only_on_protected_refs(tmp_path: Path) -> None:
    _, doc = child(tmp_path, "alice")
    publish = [job for name, job in doc.items() if name.startswith("publish:")]
    for job in publish:
        never = [r["if"] for r in job["rules"] if r.get("when") == "never"]
        runs = [r for r in job["rules"] if r.get("when") != "never"]
        assert '$CI_COMMIT_REF_PROTECTED != "true"' in never
        # every rule that runs the job comes after the protected check
        assert job["rules"].index(runs[0]) > job["rules"].index(
            {"if": '$CI_COMMIT_REF_PROTECTED != "true"', "when": "never"}
        )


def test_the_parent_takes_inputs_not_form_variables() -> None:
    header, _ = yaml.safe_load_all((REPO / ".gitlab-ci.yml").read_text())
    assert set(header["spec"]["inputs"]) == {"profile", "tags", "jobs"}
    assert header["spec"]["inputs"]["jobs"]["options"] == ["all", "images", "functional"]
    text = (REPO / ".gitlab-ci.yml").read_text()
    assert "$AFKIT_JOBS" not in text and "$AFKIT_TAGS" not in text


def test_no_venv_is_cached_only_pips_cache() -> None:
    _, body = yaml.safe_load_all((REPO / ".gitlab-ci.yml").read_text())
    caches = [job["cache"] for job in body.values() if isinstance(job, dict) and "cache" in job]
    assert caches and all(".venv/" not in c["paths"] for c in caches)


@pytest.mark.parametrize("mode", ["after-publish", "only"])
def test_the_functional_child_pipelines_are_valid_gitlab_ci(tmp_path: Path, mode: str) -> None:
    path, _ = child(tmp_path, "alice", functional=mode)
    proc = cicfg("pipeline", path)
    assert proc.returncode == 0, proc.stderr


def test_a_scheduled_pipeline_tests_each_published_image_after_its_publish_job(tmp_path: Path) -> None:
    _, doc = child(
        tmp_path, "alice", "AliPhysics/vAN-20201018_ROOT6-1 O2Physics/daily-20250401-0000-1", "after-publish"
    )
    assert doc["stages"][-1] == "functional"
    for sfx, baseline in (("AliPhysics:vAN-20201018_ROOT6-1", "alice/aliphysics"),
                          ("O2Physics:daily-20250401-0000-1", "alice/o2physics")):  # fmt: skip
        job = doc[f"functional:alice:{sfx}"]
        assert job["needs"] == [{"job": f"publish:alice:{sfx}", "artifacts": True}]
        # it runs exactly when its publish job runs, one at a time per baseline
        assert job["rules"] == doc[f"publish:alice:{sfx}"]["rules"]
        assert job["variables"]["AFKIT_BASELINE"] == baseline
        assert job["resource_group"] == f"functional/{baseline}"
        assert job["script"][0].startswith("ci/functional.sh ") and "--published" in job["script"][0]


def test_functional_only_tests_what_the_registry_serves_without_building(tmp_path: Path) -> None:
    _, doc = child(tmp_path, "alice", "AliPhysics/vAN-20201018_ROOT6-1", "only")
    jobs = [name for name, job in doc.items() if isinstance(job, dict) and "script" in job]
    assert jobs == ["functional:alice:AliPhysics:vAN-20201018_ROOT6-1"]
    job = doc[jobs[0]]
    assert doc["stages"] == ["functional"] and job["needs"] == [] and "--published" not in job["script"][0]
    assert {"if": '$CI_COMMIT_REF_PROTECTED != "true"', "when": "never"} in job["rules"]


def test_the_parent_decides_on_the_schedule_as_gitlab_sets_it() -> None:
    """A child pipeline's CI_PIPELINE_SOURCE is 'parent_pipeline': the generator job (in the
    parent) reads 'schedule' and passes it on."""
    _, body = yaml.safe_load_all((REPO / ".gitlab-ci.yml").read_text())
    gen = body["images-generate"]
    assert gen["rules"][0] == {
        "if": '$CI_PIPELINE_SOURCE == "schedule"',
        "variables": {"AFKIT_SCHEDULED": "true"},
    }
    assert gen["variables"]["AFKIT_SCHEDULED"] == "false"
    assert (
        '--scheduled "$AFKIT_SCHEDULED"' in gen["script"][0]
        and '--jobs "$AFKIT_INPUT_JOBS"' in gen["script"][0]
    )
    # lint and test jobs run only with jobs=all
    assert body[".afkit-shell"]["rules"][0] == {"if": '"$[[ inputs.jobs ]]" != "all"', "when": "never"}


def test_the_functional_campaign_gets_the_image_under_test(tmp_path: Path) -> None:
    template = REPO / "workflows" / "config" / "functional.yaml"
    sif, key, out = tmp_path / "i.sif", tmp_path / "pub.asc", tmp_path / "c.yaml"
    proc = cicfg("functional-campaign", "--template", template, "--sif", sif, "--fingerprint", "AB" * 20,
                 "--key", key, "--output", out)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    data, orig = yaml.safe_load(out.read_text()), yaml.safe_load(template.read_text())
    assert data["image"] == {"sif": str(sif), "fingerprint": "AB" * 20, "key": str(key)}
    assert {k: v for k, v in data.items() if k != "image"} == {k: v for k, v in orig.items() if k != "image"}
