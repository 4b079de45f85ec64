"""Campaign validation: defaults, errors naming the key and the allowed values, the hash."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from afkit.campaign import config
from afkit.errors import InvalidError, NotFoundError

WORKFLOWS = Path(__file__).resolve().parents[3] / "workflows"


def test_defaults_are_filled(raw: dict[str, Any], make: Any) -> None:
    c = make(raw)
    site = c.config["sites"]["here"]
    assert site["resources"] == {"cores": 1, "mem_mb": 1000, "runtime": 30}
    assert site["apptainer_args"] == []
    assert c.config["storage"]["remote"]["caches"] == {}
    assert c.config["benchmarks"][0]["sweep"]["access"] == ["direct"]
    assert c.config["benchmarks"][0]["sweep"]["repetitions"] == 1
    assert c.config["locations"] == {"default": "redirlocal", "pairs": {}}
    assert c.config["datasets"]["hzz"]["tree"] == "events"


def _error(raw: dict[str, Any]) -> str:
    with pytest.raises(InvalidError) as exc:
        config.validate(raw)
    return str(exc.value)


def test_bad_executor_names_key_and_allowed_values(raw: dict[str, Any]) -> None:
    raw["sites"]["here"]["executor"] = "condor"
    msg = _error(raw)
    assert "sites.here.executor" in msg
    assert '"local", "htcondor", "slurm"' in msg


def test_bad_scenario_names_allowed_values(raw: dict[str, Any]) -> None:
    raw["benchmarks"][0]["sweep"]["scenario"] = ["xcash"]
    msg = _error(raw)
    assert "benchmarks[0].sweep.scenario[0]" in msg
    assert '"xcache-dca"' in msg


def test_unknown_key_lists_allowed_keys(raw: dict[str, Any]) -> None:
    raw["sites"]["here"]["scrach"] = "/tmp"
    msg = _error(raw)
    assert "sites.here: unknown key(s) scrach" in msg
    assert "scratch" in msg


def test_missing_required_key(raw: dict[str, Any]) -> None:
    del raw["datasets"]
    assert "'datasets' is a required property" in _error(raw)


def test_image_needs_exactly_one_source(raw: dict[str, Any]) -> None:
    raw["image"] = {"sif": "a.sif", "build": {"profile": "alice", "tag": "T"}}
    assert "exactly one of 'sif'" in _error(raw)


def test_unknown_storage_reference(raw: dict[str, Any]) -> None:
    raw["sites"]["here"]["storage"] = "nowhere"
    msg = _error(raw)
    assert "sites.here.storage: unknown storage 'nowhere'" in msg
    assert "disk, remote" in msg


def test_unknown_site_in_benchmark(raw: dict[str, Any]) -> None:
    raw["benchmarks"][0]["sites"] = ["mars"]
    assert "benchmarks[0].sites[0]: unknown site 'mars'; allowed values: far, here" in _error(raw)


def test_cache_scenario_needs_cache_endpoint(raw: dict[str, Any]) -> None:
    raw["benchmarks"][0]["sweep"]["scenario"] = ["xcache-dca"]
    assert "needs storage.disk.caches.xcache-dca" in _error(raw)


def test_storage_url_must_be_endpoint_without_path(raw: dict[str, Any]) -> None:
    raw["storage"]["disk"]["url"] = "root://host:1094//data"
    assert "storage.disk.url" in _error(raw)


def test_hash_changes_with_content_not_results(raw: dict[str, Any], make: Any) -> None:
    h = make(raw).hash
    other = copy.deepcopy(raw)
    other["results"] = "elsewhere"
    assert make(other).hash == h
    other["version"] = 2
    assert make(other).hash != h


def test_results_folder_is_keyed_by_name_and_version_not_content(raw: dict[str, Any], make: Any) -> None:
    edited = copy.deepcopy(raw)
    edited["datasets"]["hzz"]["tree"] = "fixed"
    assert make(edited).hash != make(raw).hash
    assert make(raw).results_dir == make(edited).results_dir
    assert make(raw).results_dir.name == "unit-v1"
    edited["version"] = "2b"
    assert make(edited).results_dir.name == "unit-v2b"


def test_a_version_that_is_no_folder_name_is_refused(raw: dict[str, Any]) -> None:
    raw["version"] = "../x"
    assert "version" in _error(raw)


def test_load_missing_file(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError):
        config.load(tmp_path / "nope.yaml")


def test_load_bad_yaml(tmp_path: Path) -> None:
    p = tmp_path / "c.yaml"
    p.write_text("name: [unclosed\n", encoding="utf-8")
    with pytest.raises(InvalidError, match="not valid YAML"):
        config.load(p)


def test_load_sets_base_dir(raw: dict[str, Any], tmp_path: Path, write: Any) -> None:
    c = config.load(write(raw))
    assert c.base_dir == tmp_path.resolve()
    assert c.resolve("fake.sif") == tmp_path.resolve() / "fake.sif"


def test_relative_paths_follow_the_campaign_folder_as_named_through_a_symlink(
    raw: dict[str, Any], tmp_path: Path, write: Any
) -> None:
    """The checkout's workflows/ is a link into the package: ../../build/x.sif of a campaign in
    workflows/config/ is the checkout's build/, not one beside the package's data."""
    real = write(raw)
    (tmp_path / "data" / "config").mkdir(parents=True)
    real.rename(tmp_path / "data" / "config" / "c.yaml")
    (tmp_path / "checkout").mkdir()
    (tmp_path / "checkout" / "workflows").symlink_to(tmp_path / "data")
    c = config.load(tmp_path / "checkout" / "workflows" / "config" / "c.yaml")
    assert c.resolve("../../build/x.sif").resolve() == (tmp_path / "checkout" / "build" / "x.sif").resolve()


@pytest.mark.parametrize("name", sorted(p.name for p in (WORKFLOWS / "config").glob("*.yaml")))
def test_example_campaigns_are_valid(name: str) -> None:
    c = config.load(WORKFLOWS / "config" / name)
    # config.yaml, the workflow's default campaign, is a link to the demo
    assert c.name == (WORKFLOWS / "config" / name).resolve().stem


def test_a_sites_link_rate_must_be_bytes_per_second(raw: dict[str, Any], make: Any) -> None:
    raw["sites"]["here"]["link_rate"] = "1.25GB/s"
    assert make(raw).config["sites"]["here"]["link_rate"] == "1.25GB/s"
    raw["sites"]["here"]["link_rate"] = "10Gbit"
    with pytest.raises(InvalidError, match="link_rate"):
        config.validate(raw)


def _readspeed_bench(**sweep: Any) -> dict[str, Any]:
    return {"name": "anchor", "type": "analysis", "payload": "rootreadspeed", "sites": ["here"],
            "datasets": ["hzz"], "sweep": {"scenario": ["origin"], **sweep}}  # fmt: skip


def test_rootreadspeed_payload_with_branches_and_one_client_is_valid(raw: dict[str, Any]) -> None:
    raw["datasets"]["hzz"]["branches"] = ["Muon_Px"]
    raw["benchmarks"].append(_readspeed_bench(clients=[1]))
    assert config.validate(raw)["benchmarks"][-1]["payload"] == "rootreadspeed"


def test_rootreadspeed_payload_refuses_several_clients(raw: dict[str, Any]) -> None:
    raw["datasets"]["hzz"]["branches"] = ["Muon_Px"]
    raw["benchmarks"].append(_readspeed_bench(clients=[1, 4]))
    assert "rootreadspeed runs one client of an analysis benchmark" in _error(raw)


def test_rootreadspeed_payload_needs_the_datasets_branches(raw: dict[str, Any]) -> None:
    raw["benchmarks"].append(_readspeed_bench())
    assert "datasets.hzz.branches: benchmarks[1] runs rootreadspeed" in _error(raw)


def test_spread_needs_a_train_over_two_datasets(raw: dict[str, Any], write: Any) -> None:
    raw["benchmarks"][0]["spread"] = True
    with pytest.raises(InvalidError, match=r"benchmarks\[0\]\.spread"):
        config.load(write(raw))


def test_demand_needs_the_builtin_payload(raw: dict[str, Any], write: Any) -> None:
    raw["benchmarks"][0].update(demand="2MB/s", payload="afkit-bench")
    with pytest.raises(InvalidError, match=r"benchmarks\[0\]\.demand"):
        config.load(write(raw))
