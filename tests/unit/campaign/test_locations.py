"""Input-location templates: RedirLocal, origin, cache URLs, per-pair overrides, missing templates."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from afkit.campaign import locations
from afkit.errors import InvalidError, NotFoundError


def test_same_site_reads_the_local_mount(raw: dict[str, Any], make: Any, store: Path) -> None:
    loc = locations.resolve(make(raw), "here", "hzz", "origin", "direct")
    assert loc.template == "redirlocal"
    assert loc.urls == (f"{store}/hzz/uproot-HZZ.root",)


def test_other_site_reads_the_origin_url(raw: dict[str, Any], make: Any) -> None:
    loc = locations.resolve(make(raw), "far", "hzz", "origin", "copy")
    assert loc.urls == ("root://127.0.0.1:1094//data/hzz/uproot-HZZ.root",)


def test_cache_scenario_reads_the_cache(raw: dict[str, Any], make: Any) -> None:
    loc = locations.resolve(make(raw), "here", "hzz", "xcache", "direct")
    assert loc.urls == ("root://127.0.0.1:1095//data/hzz/uproot-HZZ.root",)


def test_an_absolute_file_below_the_export_is_read_as_the_relative_one(
    raw: dict[str, Any], make: Any
) -> None:
    raw["datasets"]["hzz"]["files"] = ["/data/hzz/uproot-HZZ.root"]  # storage disk's export: /data
    loc = locations.resolve(make(raw), "far", "hzz", "origin", "copy")
    assert loc.urls == ("root://127.0.0.1:1094//data/hzz/uproot-HZZ.root",)


def test_with_the_export_slash_a_leading_slash_is_the_relative_file(raw: dict[str, Any], make: Any) -> None:
    raw["storage"]["disk"]["export"] = "/"
    raw["datasets"]["hzz"]["files"] = ["/hzz/uproot-HZZ.root"]
    loc = locations.resolve(make(raw), "far", "hzz", "origin", "copy")
    assert loc.urls == ("root://127.0.0.1:1094//hzz/uproot-HZZ.root",)


def test_an_absolute_file_outside_the_export_is_refused_naming_it(raw: dict[str, Any], make: Any) -> None:
    raw["datasets"]["hzz"]["files"] = ["/hzz/uproot-HZZ.root"]  # not below /data: which was meant?
    with pytest.raises(InvalidError) as err:
        make(raw)
    assert (
        "datasets.hzz.files[0]: '/hzz/uproot-HZZ.root' is not allowed: use a path below "
        "storage.disk.export '/data'" in str(err.value)
    )


def test_generated_dataset_lists_its_files(raw: dict[str, Any], make: Any) -> None:
    loc = locations.resolve(make(raw), "far", "gen", "origin", "direct")
    assert loc.urls == (
        "root://127.0.0.1:1094//data/afkit-gen-0000.dat",
        "root://127.0.0.1:1094//data/afkit-gen-0001.dat",
    )


def test_pair_override_wins(raw: dict[str, Any], make: Any) -> None:
    raw["locations"] = {"pairs": {"here/hzz": "remote"}}
    c = make(raw)
    assert (
        locations.resolve(c, "here", "hzz", "origin", "direct").urls[0].startswith("root://127.0.0.1:1094//")
    )
    assert locations.resolve(c, "here", "gen", "origin", "direct").urls[0].startswith("/")


def test_forward_template(raw: dict[str, Any], make: Any) -> None:
    raw["locations"] = {"default": "forward"}
    loc = locations.resolve(make(raw), "here", "hzz", "xcache", "direct")
    assert loc.urls == ("root://127.0.0.1:1095//root://127.0.0.1:1094//data/hzz/uproot-HZZ.root",)


def test_template_file_relative_to_campaign(raw: dict[str, Any], make: Any, tmp_path: Path) -> None:
    (tmp_path / "mine.j2").write_text("{{ wn.name }}:{{ dataset.name }}:{{ access }}:{{ file }}\n")
    raw["locations"] = {"default": "mine.j2"}
    assert locations.resolve(make(raw), "far", "hzz", "origin", "copy").urls == (
        "far:hzz:copy:hzz/uproot-HZZ.root",
    )


def test_pair_without_template_is_an_error(raw: dict[str, Any], make: Any) -> None:
    raw["locations"] = {"default": None, "pairs": {"here/hzz": "redirlocal"}}
    c = make(raw)
    assert locations.resolve(c, "here", "hzz", "origin", "direct")
    with pytest.raises(InvalidError) as exc:
        locations.resolve(c, "far", "hzz", "origin", "direct")
    assert "(site 'far', dataset 'hzz')" in str(exc.value)
    assert "locations.pairs['far/hzz']" in (exc.value.hint or "")


def test_unknown_template_name(raw: dict[str, Any], make: Any) -> None:
    raw["locations"] = {"default": "nosuch"}
    with pytest.raises(NotFoundError, match="'nosuch'") as exc:
        locations.resolve(make(raw), "here", "hzz", "origin", "direct")
    assert "redirlocal" in (exc.value.hint or "")


def test_empty_rendering_is_an_error(raw: dict[str, Any], make: Any, tmp_path: Path) -> None:
    (tmp_path / "empty.j2").write_text("{% if false %}x{% endif %}")
    raw["locations"] = {"default": "empty.j2"}
    with pytest.raises(InvalidError, match="empty location"):
        locations.resolve(make(raw), "here", "hzz", "origin", "direct")


def test_matrix_covers_pairs_and_scenarios(raw: dict[str, Any], make: Any) -> None:
    m = locations.matrix(make(raw))
    keys = {(loc.site, loc.dataset, loc.scenario) for loc in m}
    # origin for every pair; xcache only for datasets whose storage has that cache (both are on disk)
    assert len(keys) == 8
    text = locations.format_matrix(m)
    assert text.splitlines()[0].split()[:3] == ["SITE", "DATASET", "SCENARIO"]
    assert "root://127.0.0.1:1095//data/hzz/uproot-HZZ.root" in text


def test_generated_ao2d_dataset_lists_root_files(raw: dict[str, Any], make: Any) -> None:
    raw["datasets"]["gen"]["generate"]["kind"] = "ao2d"
    loc = locations.resolve(make(raw), "far", "gen", "origin", "direct")
    assert loc.urls[0] == "root://127.0.0.1:1094//data/afkit-gen-0000.root"
