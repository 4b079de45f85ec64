"""Reading YAML: PyYAML's safe loader, on libyaml's parser when PyYAML was built with it.

PyYAML's wheels bundle libyaml, whose ``CSafeLoader`` builds the same Python objects as the pure
Python ``SafeLoader`` (same tags, same errors, ``yaml.YAMLError`` with its marks) about ten times
faster: the campaign schema, read on every campaign load, took 0.4 s of a step command's start with
the pure Python parser. Every YAML afkit reads goes through :func:`load`; a file a user gives (a
campaign, a sites file) through :func:`read`, whose errors are afkit's.

A user's file is read with limits (:func:`bounded`), checked on libyaml's node graph before any
Python object is built: its size (``MAX_BYTES``), the values it expands to through aliases
(``MAX_VALUES``: a 10-line "billion laughs" file otherwise builds a graph that afkit's checks walk
for minutes) and a key twice in one mapping (YAML 1.1 leaves that undefined and PyYAML takes the
last: refused, naming both lines). NaN and infinities are refused by the checks of what is read,
naming the key (afkit.campaign.config, afkit.study.recipe).
"""

from __future__ import annotations

from pathlib import Path
from typing import IO, Any

import yaml

from afkit.errors import InvalidError, PrereqError

SafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
MAX_BYTES = 4 * 2**20  # a campaign is a few kB; the largest example is 10 kB
MAX_VALUES = 200_000  # scalars, lists and mappings, counting each alias's expansion again


class BoundError(ValueError):
    """A user's YAML past one of the limits (the message says which, with its line)."""


def _line(node: yaml.Node) -> int:
    return node.start_mark.line + 1


def _check(root: yaml.Node) -> None:
    """BoundError for ROOT's graph (module docstring): expands past MAX_VALUES, a duplicate key."""
    sizes: dict[int, int] = {}
    seen: set[int] = set()

    def size(node: yaml.Node) -> int:  # the values NODE expands to, each alias's shared node again
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in seen:  # a recursive alias (a node inside itself)
            raise BoundError(f"line {_line(node)}: an alias refers to a node that holds it")
        seen.add(key)
        total = 1
        if isinstance(node, yaml.MappingNode):
            lines: dict[object, int] = {}
            for k, v in node.value:
                if isinstance(k, yaml.ScalarNode) and k.value != "<<":
                    ident = (k.tag, k.value)
                    if ident in lines:
                        raise BoundError(
                            f"line {_line(k)}: key {k.value!r} again (first on line {lines[ident]})"
                        )
                    lines[ident] = _line(k)
                total += size(k) + size(v)
                if total > MAX_VALUES:
                    break
        elif isinstance(node, yaml.SequenceNode):
            for v in node.value:
                total += size(v)
                if total > MAX_VALUES:
                    break
        if total > MAX_VALUES:
            raise BoundError(
                f"line {_line(node)}: expands to more than {MAX_VALUES:,} values (through aliases)"
            )
        sizes[key] = total
        return total

    size(root)


def bounded(text: str) -> Any:
    """The one YAML document in TEXT, read as :func:`load` reads it, within the limits of the
    module docstring (BoundError otherwise; yaml.YAMLError for text that is not YAML)."""
    if len(text.encode("utf-8", errors="replace")) > MAX_BYTES:
        raise BoundError(f"larger than {MAX_BYTES // 2**20} MiB")
    loader = SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def load(stream: str | bytes | IO[str] | IO[bytes]) -> Any:
    """The one YAML document in STREAM, read with the safe loader (no arbitrary Python objects)."""
    return yaml.load(stream, Loader=SafeLoader)


def require_file(path: Path, what: str, hint: str) -> None:
    """NotFoundError (exit 5) unless PATH is a regular file, saying what it is instead (a directory,
    /dev/null, a FIFO: never opened, so a FIFO cannot hang the command) or that nothing is there."""
    from afkit.errors import NotFoundError
    from afkit.filekind import kind

    found = kind(path)
    if found is not None:
        raise NotFoundError(f"{what} file {path} is {found}, not a file", hint=hint)
    if not path.is_file():
        raise NotFoundError(f"{what} file not found: {path}", hint=hint)


def read(path: Path, what: str) -> Any:
    """The YAML document in the file PATH (a campaign or a sites file: WHAT): InvalidError (exit 6)
    for text that is not UTF-8, not YAML or nested too deeply for the parser; PrereqError (exit 3)
    when it cannot be read."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise InvalidError(f"{path}: not a text file (byte {err.start} is not UTF-8)",
                           hint=f"give a {what} YAML file") from err  # fmt: skip
    except OSError as err:
        raise PrereqError(f"{path}: cannot read it: {err.strerror or err}",
                          hint=f"make the {what} file readable by you") from err  # fmt: skip
    try:
        return bounded(text)
    except BoundError as err:
        raise InvalidError(f"{path}: {err}", hint=f"fix the {what} file") from err
    except yaml.YAMLError as err:
        raise InvalidError(f"{path}: not valid YAML: {err}") from err
    except RecursionError as err:
        raise InvalidError(
            f"{path}: nested too deeply to read", hint=f"a {what} file nests a few levels"
        ) from err
