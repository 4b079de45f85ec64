"""Capture the environment a shell snippet produces, starting from a clean one (as alienv does)."""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from afkit.errors import AfkitError
from afkit.image.model import EnvVar

CLEAN_PATH = "/usr/local/bin:/usr/bin:/bin"
# Set by the shell itself, never part of a tag's environment.
SHELL_NOISE = frozenset({"PWD", "OLDPWD", "SHLVL", "_", "HOME", "LANG", "LC_ALL"})


def capture(script: str, args: Sequence[str], extra_env: dict[str, str]) -> dict[str, str]:
    """Run bash SCRIPT with ARGS in a clean environment (+EXTRA_ENV) and return its final environment.

    SCRIPT must end by printing ``env -0``. A failing script raises AfkitError with its stderr.
    """
    with tempfile.TemporaryDirectory(prefix="afkit-env-") as home:
        env = {"PATH": CLEAN_PATH, "HOME": home, "LANG": "C", "LC_ALL": "C", **extra_env}
        proc = subprocess.run(
            ["/bin/bash", "--noprofile", "--norc", "-c", script, "afkit-env", *args],
            env=env,
            cwd=home,
            capture_output=True,
            check=False,
        )
    if proc.returncode != 0:
        err = proc.stderr.decode(errors="replace").strip()
        raise AfkitError(f"evaluating the environment failed (exit {proc.returncode}): {err}")
    out: dict[str, str] = {}
    for chunk in proc.stdout.split(b"\0"):
        if b"=" in chunk:
            key, _, val = chunk.partition(b"=")
            out[key.decode()] = val.decode(errors="surrogateescape")
    return out


def diff(
    clean: dict[str, str],
    loaded: dict[str, str],
    *,
    exclude: Iterable[str] = (),
    rewrite: dict[str, str] | None = None,
) -> list[EnvVar]:
    """Variables LOADED adds or changes against CLEAN, host paths rewritten to image paths."""
    patterns = [re.compile(p) for p in exclude]
    result: list[EnvVar] = []
    for name in sorted(loaded):
        value = loaded[name]
        if name in SHELL_NOISE or clean.get(name) == value or any(p.fullmatch(name) for p in patterns):
            continue
        old = clean.get(name)
        inherit = False
        if old and value.endswith(":" + old):
            value, inherit = value[: -len(old) - 1], True
        result.append(EnvVar(name, rewrite_paths(value, rewrite or {}), inherit))
    return result


def rewrite_paths(value: str, mapping: dict[str, str]) -> str:
    """VALUE with every host path prefix of MAPPING replaced by its image path, longest first."""
    for src in sorted(mapping, key=len, reverse=True):
        if src != mapping[src]:
            value = value.replace(src, mapping[src])
    return value


def path_tokens(values: Iterable[str], root: Path) -> list[Path]:
    """Absolute paths under ROOT found in colon-separated VALUES (in order, unique)."""
    seen: dict[Path, None] = {}
    # The repository's published path too: real trees name /cvmfs/<repo> wherever they are mounted.
    prefixes = {str(root), os.path.realpath(root), f"/cvmfs/{root.name}"}
    for value in values:
        for token in value.split(":"):
            if any(token == p or token.startswith(p + "/") for p in prefixes):
                seen[Path(os.path.normpath(token))] = None
    return list(seen)
