"""workflows/config/README.md documents every campaign key and matches the schema."""

from __future__ import annotations

from pathlib import Path

import pytest

from afkit import cli
from afkit.campaign import schemadoc
from afkit.campaign.config import load_schema
from afkit.errors import ExitCode


def test_the_committed_readme_matches_the_schema() -> None:
    assert schemadoc.readme_path().read_text(encoding="utf-8") == schemadoc.current(), (
        "workflows/config/README.md is stale: run 'afkit campaign config-doc' and commit it"
    )


def test_every_key_has_a_row_with_a_description() -> None:
    rows = schemadoc.keys(load_schema())
    assert {"name", "sites.NAME.executor", "benchmarks[].sweep.clients", "image.build.tag"} <= {
        k.path for k in rows
    }
    assert [k.path for k in rows if not k.description] == []


def test_a_new_schema_key_shows_up_in_the_readme() -> None:
    schema = load_schema()
    schema["properties"]["owner"] = {"type": "string", "description": "who runs it"}
    assert "| `owner` | string | no |  | who runs it |" in schemadoc.render(schema)


def test_check_fails_with_exit_6_when_the_file_differs(tmp_path: Path) -> None:
    stale = tmp_path / "README.md"
    stale.write_text("# old\n")
    assert cli.main(["campaign", "config-doc", "--check", "-o", str(stale)]) == ExitCode.INVALID


def test_config_doc_writes_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "README.md"
    assert cli.main(["campaign", "config-doc", "-o", str(out)]) == ExitCode.OK
    assert out.read_text(encoding="utf-8") == schemadoc.current()
    assert cli.main(["campaign", "config-doc", "--check", "-o", str(out)]) == ExitCode.OK
