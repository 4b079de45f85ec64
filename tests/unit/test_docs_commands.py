"""Every command of README.md and docs/*.md is run, as written, by a test (docs/CONVENTIONS.md).

``tests/unit/docsupport.py`` collects the commands; ``tests/docs-commands.yaml`` names, for each,
the tests that run it. These checks keep the two in step and keep the link from rotting: the named
test exists and its file holds the command exactly as it is run.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import docsupport

REPO = docsupport.REPO
TABLE = REPO / "tests" / "docs-commands.yaml"
WORD_START, WORD_END = r"(?<![A-Za-z0-9_])", r"(?![A-Za-z0-9_])"  # a placeholder is a word of its own


def table() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(TABLE.read_text(encoding="utf-8"))
    return data


def entries() -> list[dict[str, Any]]:
    return list(table()["commands"])


def test_every_fenced_block_says_its_language_and_text_blocks_hold_no_commands() -> None:
    assert docsupport.scan().problems == []


def test_every_documented_command_is_listed_once() -> None:
    documented = {c.text for c in docsupport.scan().commands}
    listed = [e["doc"] for e in entries()]
    assert sorted(documented - set(listed)) == [], "documented but not in tests/docs-commands.yaml"
    assert sorted(set(listed) - documented) == [], "in tests/docs-commands.yaml but no longer documented"
    assert len(listed) == len(set(listed)), "listed twice"


def placeholder_pattern(doc: str, words: list[str]) -> re.Pattern[str]:
    """``doc`` as a regex where each placeholder word stands for one value (the same each time)."""
    alternatives = "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))
    token = re.compile(rf"{WORD_START}({alternatives}){WORD_END}")
    parts, seen, pos = [], set[str](), 0
    for m in token.finditer(doc):
        parts.append(re.escape(doc[pos : m.start()]))
        word = m.group(1)
        group = re.sub(r"\W", "_", word)
        parts.append(f"(?P={group})" if word in seen else rf"(?P<{group}>\S+)")
        seen.add(word)
        pos = m.end()
    parts.append(re.escape(doc[pos:]))
    return re.compile("".join(parts) + r"\Z")


def substitution_problem(entry: dict[str, Any], words: list[str]) -> str | None:
    run, doc = entry.get("run", entry["doc"]), entry["doc"]
    if run == doc or "exception" in entry:
        return None
    if not any(re.search(rf"{WORD_START}{re.escape(w)}{WORD_END}", doc) for w in words):
        return f"{doc!r} has no placeholder of the table: run it as written"
    if not placeholder_pattern(doc, words).match(run):
        return f"{run!r} is not {doc!r} with its placeholders filled in"
    return None


def test_a_substituted_command_differs_only_in_its_placeholders() -> None:
    words = list(table()["placeholders"])
    assert [p for p in (substitution_problem(e, words) for e in entries()) if p] == []


def test_an_exception_gives_its_reason_and_a_test_names_its_test() -> None:
    bad = []
    for entry in entries():
        if "exception" in entry and len(str(entry["exception"]).split()) < 8:
            bad.append(f"{entry['doc']}: say why it cannot run here and what runs instead")
        if "exception" not in entry and not all("::" in t for t in entry["tests"]):
            bad.append(f"{entry['doc']}: name the test (FILE::TEST) that runs it")
    assert bad == []


def file_runs(text: str, command: str) -> bool:
    """``text`` holds ``command`` as a whole command that is run: not in a comment, a bats test's
    name or `backquotes` (a docstring's mention)."""
    before = r"(?:^|(?<=[\s'\"(]))"
    after = r"(?=$|['\");]| [|&<>#]| 2>| \\$)"
    pattern = re.compile(before + re.escape(command) + after, re.M)
    for m in pattern.finditer(text):
        line = text[text.rfind("\n", 0, m.start()) + 1 : m.start()].lstrip()
        if not line.startswith(("#", "@test")):
            return True
    return False


def test_file_runs_finds_whole_commands_only() -> None:
    text = "  run afkit campaign report C.yaml --grouping server\n# afkit campaign report C.yaml\n"
    assert not file_runs(text, "afkit campaign report C.yaml")
    assert file_runs(text, "afkit campaign report C.yaml --grouping server")
    assert file_runs("x = 'make demo'\n", "make demo")
    assert not file_runs('@test "make demo works" {\n', "make demo")
    assert not file_runs('    """the `make demo` run"""\n', "make demo")


def defines(text: str, path: str, name: str) -> bool:
    if path.endswith(".py"):
        return re.search(rf"^def {re.escape(name)}\(", text, re.M) is not None
    if path.endswith(".bats"):
        return f'@test "{name}"' in text
    return name in text  # a step of scripts/run-tests: its JUnit case name


def run_problems(entry: dict[str, Any]) -> list[str]:
    run = entry.get("run", entry["doc"])
    problems = [] if entry["tests"] else [f"{entry['doc']}: no test named"]
    for test in entry["tests"]:
        path, _, name = test.partition("::")
        source = REPO / path
        if not source.is_file():
            problems.append(f"{test}: {path} does not exist")
            continue
        text = source.read_text(encoding="utf-8")
        if name and not defines(text, path, name):
            problems.append(f"{test}: {path} has no such test")
        if not file_runs(text, run):
            problems.append(f"{test}: {path} does not run {run!r} as written")
    return problems


def test_the_named_tests_exist_and_hold_the_command_as_run() -> None:
    assert [p for e in entries() for p in run_problems(e)] == []


def test_every_afkit_name_in_the_docs_is_a_command() -> None:
    """A span such as `afkit bench read` names a real command (a stale name fails here)."""
    from afkit import cli

    bad = []
    for name in docsupport.scan().names:
        words = docsupport.afkit_words(name.text) or []
        try:
            cli.build_parser(cli.selected_area(words)).parse_args([*words, "--help"])
        except SystemExit as exc:
            if exc.code != 0:
                bad.append(f"{name.path}:{name.line}: {name.text}")
    assert bad == []
