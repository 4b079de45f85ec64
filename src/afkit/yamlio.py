"""Reading YAML: PyYAML's safe loader, on libyaml's parser when PyYAML was built with it.

PyYAML's wheels bundle libyaml, whose ``CSafeLoader`` builds the same Python objects as the pure
Python ``SafeLoader`` (same tags, same errors, ``yaml.YAMLError`` with its marks) about ten times
faster: the campaign schema, read on every campaign load, took 0.4 s of a step command's start with
the pure Python parser. Every YAML afkit reads goes through :func:`load`; a file a user gives (a
campaign, a sites file) through :func:`read`, whose errors are afkit's.
"""

from __future__ import annotations

from pathlib import Path
from typing import IO, Any

import yaml

from afkit.errors import InvalidError, PrereqError

SafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load(stream: str | bytes | IO[str] | IO[bytes]) -> Any:
    """The one YAML document in STREAM, read with the safe loader (no arbitrary Python objects)."""
    return yaml.load(stream, Loader=SafeLoader)


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
        return load(text)
    except yaml.YAMLError as err:
        raise InvalidError(f"{path}: not valid YAML: {err}") from err
    except RecursionError as err:
        raise InvalidError(
            f"{path}: nested too deeply to read", hint=f"a {what} file nests a few levels"
        ) from err
