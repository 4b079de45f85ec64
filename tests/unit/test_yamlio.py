"""afkit.yamlio: PyYAML's safe loader on libyaml's parser, same objects and errors as SafeLoader."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from afkit import yamlio
from afkit.errors import InvalidError

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


BOMB = "".join(  # "billion laughs": 9 levels of 9 aliases, 9**9 values once expanded
    f"{chr(97 + i)}: &{chr(97 + i)} [{', '.join([f'*{chr(96 + i)}' if i else 'lol'] * 9)}]\n"
    for i in range(9)
)


@pytest.mark.parametrize("path", CAMPAIGNS, ids=[p.name for p in CAMPAIGNS])
def test_every_example_campaign_reads_within_the_limits_as_before(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert yamlio.bounded(text) == yamlio.load(text)


def test_an_alias_bomb_is_refused_at_once(tmp_path: Path) -> None:
    import time

    (tmp_path / "c.yaml").write_text(BOMB)
    start = time.monotonic()
    with pytest.raises(InvalidError, match=r"c\.yaml: line \d+: expands to more than 200,000 values"):
        yamlio.read(tmp_path / "c.yaml", "campaign")
    assert time.monotonic() - start < 1.0


def test_a_key_given_twice_is_refused_naming_both_lines(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text("name: a\nversion: 1\nsites:\n  x: 1\n  x: 2\n")
    with pytest.raises(InvalidError, match=r"line 5: key 'x' again \(first on line 4\)"):
        yamlio.read(tmp_path / "c.yaml", "campaign")


def test_merge_keys_and_plain_aliases_still_read(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text("base: &b {x: 1}\nd:\n  <<: *b\n  y: 2\ne: *b\nnan_name: nan\n")
    got = yamlio.read(tmp_path / "c.yaml", "campaign")
    assert got == {"base": {"x": 1}, "d": {"x": 1, "y": 2}, "e": {"x": 1}, "nan_name": "nan"}


def test_a_node_inside_itself_is_refused(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text("a: &a [1, *a]\n")
    with pytest.raises(InvalidError, match=r"c\.yaml: line 1: an alias refers to a node that holds it"):
        yamlio.read(tmp_path / "c.yaml", "campaign")


def test_a_file_past_the_size_limit_is_refused(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text("# " + "x" * yamlio.MAX_BYTES + "\n")
    with pytest.raises(InvalidError, match="larger than 4 MiB"):
        yamlio.read(tmp_path / "c.yaml", "campaign")


def test_afkit_campaign_validate_refuses_an_alias_bomb_in_one_error_line(tmp_path: Path) -> None:
    import subprocess
    import sys
    import time

    (tmp_path / "bomb.yaml").write_text(BOMB)
    start = time.monotonic()
    argv = [sys.executable, "-m", "afkit", "campaign", "validate", str(tmp_path / "bomb.yaml")]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert time.monotonic() - start < 30  # afkit's start-up on a loaded machine; the refusal itself < 1 s
    assert proc.returncode == 6, proc.stderr
    assert proc.stderr.count("afkit: error:") == 1 and "Traceback" not in proc.stderr
    assert "expands to more than 200,000 values" in proc.stderr


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ("/dev/null", "campaign file /dev/null is a character device, not a file"),
        ("folder", "campaign file folder is a directory, not a file"),
        ("fifo", "campaign file fifo is a named pipe (FIFO), not a file"),
        ("none.yaml", "campaign file not found: none.yaml"),
    ],
)
@pytest.mark.parametrize("command", ["validate", "run"])
def test_what_is_no_campaign_file_is_named_as_what_it_is(
    tmp_path: Path, given: str, says: str, command: str
) -> None:
    """Exit 5 with one error line, at once: a FIFO is never opened (it would wait for a writer)."""
    import os
    import subprocess
    import sys

    (tmp_path / "folder").mkdir()
    os.mkfifo(tmp_path / "fifo")
    argv = [sys.executable, "-m", "afkit", "campaign", command, given]
    proc = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 5, proc.stderr
    assert [ln for ln in proc.stderr.splitlines() if ln.startswith("afkit: error:")] == [
        f"afkit: error: {says}"
    ]
