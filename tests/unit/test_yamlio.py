"""afkit.yamlio: PyYAML's safe loader on libyaml's parser, same objects and errors as SafeLoader."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from afkit import yamlio

CAMPAIGNS = sorted((Path(__file__).resolve().parents[2] / "workflows" / "config").glob("*.yaml"))


def test_the_installed_pyyaml_has_libyaml_and_afkit_uses_it() -> None:
    # PyYAML's wheels bundle libyaml; without it every campaign load parses the schema in pure Python
    assert yaml.__with_libyaml__ and yamlio.SafeLoader is yaml.CSafeLoader


@pytest.mark.parametrize("path", CAMPAIGNS, ids=[p.name for p in CAMPAIGNS])
def test_every_example_campaign_reads_as_the_pure_python_safe_loader_reads_it(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert yamlio.load(text) == yaml.load(text, Loader=yaml.SafeLoader)


def test_python_objects_are_refused_as_by_the_safe_loader() -> None:
    with pytest.raises(yaml.YAMLError):
        yamlio.load("!!python/object/apply:os.system ['true']")


def test_a_syntax_error_is_a_yaml_error_with_its_line() -> None:
    with pytest.raises(yaml.MarkedYAMLError) as err:
        yamlio.load("a: [1, 2\nb: 3\n")
    assert err.value.problem_mark is not None and err.value.problem_mark.line >= 1
