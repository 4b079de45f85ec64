"""Reading YAML: PyYAML's safe loader, on libyaml's parser when PyYAML was built with it.

PyYAML's wheels bundle libyaml, whose ``CSafeLoader`` builds the same Python objects as the pure
Python ``SafeLoader`` (same tags, same errors, ``yaml.YAMLError`` with its marks) about ten times
faster: the campaign schema, read on every campaign load, took 0.4 s of a step command's start with
the pure Python parser. Every YAML afkit reads goes through :func:`load`.
"""

from __future__ import annotations

from typing import IO, Any

import yaml

SafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load(stream: str | bytes | IO[str] | IO[bytes]) -> Any:
    """The one YAML document in STREAM, read with the safe loader (no arbitrary Python objects)."""
    return yaml.load(stream, Loader=SafeLoader)
