"""The commands a reader of README.md and docs/*.md would type, collected by one rule.

``tests/unit/test_docs_commands.py`` checks that each of them is run, as written, by a test named
in ``tests/docs-commands.yaml``. The rule (docs/CONVENTIONS.md, "Commands in the docs"):

* Fenced blocks name their language. In ``sh``/``bash``/``shell`` blocks every line is a command
  but blank and ``#`` comment lines; in ``console`` blocks the ``$ `` lines are (prompt dropped),
  the other lines are output. A line ending in ``\\`` continues on the next one (joined with one
  space); a trailing `` # comment`` is dropped. Other blocks (``text``, ``yaml``, ``json``) hold
  no commands: a line there that starts like a command must be a synopsis.
* An inline code span (it may wrap onto the next line) is a command when it starts with one of
  afkit's entry points (``afkit``, ``python3 -m afkit``, ``make``, ``snakemake``, ``bats``,
  ``git``, ``sudo``, or a program under ``scripts/``, ``ci/``, ``bench/``, ``tests/fixtures/``),
  unless it is a synopsis (``[``, ``|``, ``…``, ``...`` or ``<…>`` in it) or a name: one word
  (``scripts/testbed``), or ``afkit`` and words that are not a complete command line
  (``afkit bench read``: its files are missing; ``afkit federation urls`` is complete, so it is a
  command). Other programs' inline spans describe what afkit or upstream does; a command of
  theirs that a reader types goes into a fenced block.

``python3 tests/unit/docsupport.py`` prints every command with where it was found.
"""

from __future__ import annotations

import argparse
import bisect
import contextlib
import functools
import io
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
COMMAND_FENCES = ("sh", "bash", "shell")
CONSOLE_FENCE = "console"
ENTRY = re.compile(
    r"^(?:sudo\s+)?(?:afkit|python3 -m afkit|make|snakemake|bats|git|"
    r"\.?/?(?:scripts|ci|bench|tests/fixtures)/[\w./-]+)(?:\s|$)"
)
SYNOPSIS = re.compile(r"\[|\||…|\.\.\.|<[^>]*>")
PLACEHOLDER_WORD = re.compile(r"(?<![\w/.-])[A-Z][A-Z0-9_]*(?:\.[a-z]+)?(?![\w/-])")
FENCE = re.compile(r"^(\s*)(`{3,})\s*([^\s`]*)")
SPAN = re.compile(r"(?<!`)`((?:[^`\n]|\n(?!\s*\n))+)`(?!`)")
SUBCOMMAND_WORD = re.compile(r"^[a-z][a-z0-9-]*$")


@dataclass(frozen=True)
class DocCommand:
    """One command as written (after the normalisation above) and where it is."""

    text: str
    path: str  # relative to the repository
    line: int
    source: str  # "fence" or "inline"


@dataclass
class Scan:
    commands: list[DocCommand] = field(default_factory=list)
    names: list[DocCommand] = field(default_factory=list)  # afkit command names in inline spans
    problems: list[str] = field(default_factory=list)


def doc_files(repo: Path = REPO) -> list[Path]:
    return [repo / "README.md", *sorted((repo / "docs").glob("*.md"))]


def strip_comment(line: str) -> str:
    """``line`` without a trailing `` # comment`` (a ``#`` outside quotes after a blank)."""
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line.rstrip()


def join_continuations(lines: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Lines ending in a backslash joined with the next (one space), numbered by their first line."""
    joined: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    for number, text in lines:
        if pending is not None:
            number, text = pending[0], f"{pending[1]} {text.strip()}"
        if text.endswith("\\"):
            pending = (number, text[:-1].rstrip())
            continue
        pending = None
        joined.append((number, text))
    if pending is not None:
        joined.append(pending)
    return joined


def fence_commands(lang: str, body: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """The commands of one fenced block of language ``lang`` (numbered body lines)."""
    if lang in COMMAND_FENCES:
        lines = [(n, t) for n, t in body if t.strip() and not t.lstrip().startswith("#")]
    elif lang == CONSOLE_FENCE:
        lines, continued = [], False
        for n, t in body:
            if t.startswith("$ ") or continued:
                lines.append((n, t[2:] if t.startswith("$ ") and not continued else t))
                continued = t.rstrip().endswith("\\")
    else:
        return []
    out = []
    for n, t in join_continuations(lines):
        text = strip_comment(t.strip())
        if text:
            out.append((n, text))
    return out


def fence_problems(lang: str, body: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Lines that look like a command in a block that holds none (text, yaml, console output)."""
    if lang in COMMAND_FENCES:
        return []
    out = []
    for n, t in body:
        text = t.strip()
        if lang == CONSOLE_FENCE and text.startswith("$ "):
            continue
        if ENTRY.match(text) and not is_synopsis(text) and not PLACEHOLDER_WORD.search(text):
            out.append((n, f"a command in a '{lang}' block: put it in an sh or console block"))
    return out


def is_synopsis(text: str) -> bool:
    return bool(SYNOPSIS.search(text))


def afkit_words(text: str) -> list[str] | None:
    """The arguments of an afkit command line made of plain words only, else None."""
    words = text.split()
    if words[:1] == ["sudo"]:
        words = words[1:]
    if words[:3] == ["python3", "-m", "afkit"]:
        words = ["afkit", *words[3:]]
    if words[:1] != ["afkit"] or not all(SUBCOMMAND_WORD.match(w) for w in words[1:]):
        return None
    return words[1:]


def is_name(text: str) -> bool:
    """A span naming a program, or an afkit command without the arguments it needs."""
    words = text.split()
    if len(words[1:] if words[0] == "sudo" else words) <= 1:
        return True
    args = afkit_words(text)
    return args is not None and not afkit_complete(args)


@functools.cache
def afkit_parser(area: str | None) -> argparse.ArgumentParser:
    """afkit's parser for AREA, built once (a scan asks it about hundreds of spans)."""
    from afkit import cli

    return cli.build_parser(area)


def afkit_complete(args: list[str]) -> bool:
    """Whether ``afkit ARGS`` is a complete command line (not an area alone, nothing missing)."""
    from afkit import cli

    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
        try:
            ns = afkit_parser(cli.selected_area(args)).parse_args(args)
        except SystemExit:
            return False
    func = getattr(ns, "func", None)
    return func is not None and "usage_handler" not in getattr(func, "__qualname__", "")


def scan_file(path: Path, repo: Path = REPO) -> Scan:
    rel = str(path.relative_to(repo))
    result = Scan()
    lines = path.read_text(encoding="utf-8").splitlines()
    prose: list[tuple[int, str]] = []  # the lines outside fenced blocks, for inline spans
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            prose.append((i + 1, lines[i]))
            i += 1
            continue
        prose.append((i + 1, ""))  # a fence ends a paragraph
        indent, ticks, lang = m.groups()
        start, i = i + 1, i + 1
        body: list[tuple[int, str]] = []
        while i < len(lines) and not lines[i].strip().startswith(ticks):
            body.append((i + 1, lines[i][len(indent) :] if lines[i].startswith(indent) else lines[i]))
            i += 1
        i += 1  # the closing fence
        if not lang:
            result.problems.append(f"{rel}:{start}: a fenced block without a language (sh, console, text)")
            continue
        result.commands += [DocCommand(t, rel, n, "fence") for n, t in fence_commands(lang, body)]
        result.problems += [f"{rel}:{n}: {p}" for n, p in fence_problems(lang, body)]
    inline_spans(rel, prose, result)
    return result


def inline_spans(rel: str, prose: list[tuple[int, str]], result: Scan) -> None:
    """The commands and afkit names among the inline code spans of ``prose``."""
    text = "\n".join(t for _, t in prose)
    starts = [0]
    for _, t in prose:
        starts.append(starts[-1] + len(t) + 1)
    for m in SPAN.finditer(text):
        span = " ".join(m.group(1).split())
        if not ENTRY.match(span) or is_synopsis(span):
            continue
        found = DocCommand(span, rel, prose[bisect.bisect_right(starts, m.start()) - 1][0], "inline")
        if not is_name(span):
            result.commands.append(found)
        elif afkit_words(span):
            result.names.append(found)


def scan(repo: Path = REPO) -> Scan:
    total = Scan()
    for path in doc_files(repo):
        one = scan_file(path, repo)
        total.commands += one.commands
        total.names += one.names
        total.problems += one.problems
    return total


def where(entry: dict[str, object]) -> str:
    """Where the tests of a tests/docs-commands.yaml entry run it."""
    if "exception" in entry:
        return "exception"
    tests = [str(t) for t in entry["tests"]]  # type: ignore[attr-defined]
    if any(t.startswith("tests/integration/host/") for t in tests):
        return "host-driven testbed"
    if any(t.startswith("tests/integration/") for t in tests):
        return "testbed"
    return "host"


def main() -> int:
    import yaml

    result = scan()
    for cmd in result.commands:
        print(f"{cmd.path}:{cmd.line}: [{cmd.source}] {cmd.text}")
    for problem in result.problems:
        print(f"problem: {problem}", file=sys.stderr)
    distinct = {c.text for c in result.commands}
    table = yaml.safe_load((REPO / "tests" / "docs-commands.yaml").read_text(encoding="utf-8"))
    counts: dict[str, int] = {}
    for entry in table["commands"]:
        counts[where(entry)] = counts.get(where(entry), 0) + 1
    print(f"{len(result.commands)} commands ({len(distinct)} distinct); tests/docs-commands.yaml: "
          + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())))  # fmt: skip
    return 1 if result.problems else 0


if __name__ == "__main__":
    sys.exit(main())
