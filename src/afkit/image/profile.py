"""Image profiles: the data that makes the engine serve one experiment (``images/<name>/profile.yaml``)."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, NotRequired, TypedDict

import jsonschema
import yaml

from afkit import paths, yamlio
from afkit.errors import InvalidError, NotFoundError, PrereqError
from afkit.image.model import PROOF_FILE

SCHEMA_PATH = Path(__file__).with_name("profile.schema.json")


# profile.yaml as profile.schema.json admits it (the key names are the file format's)
class TagSection(TypedDict):
    pattern: str
    example: str
    vo_prefix: NotRequired[str]
    multiple: NotRequired[bool]


class ModulesSection(TypedDict):
    """``modules:`` of a profile whose resolver is ``modules``."""

    modulepath: list[str]
    package_dir: str
    unit_globs: NotRequired[list[str]]
    published: NotRequired[str]


class LcgSection(TypedDict):
    """``lcg:`` of a profile whose resolver is ``lcg-view``."""

    view: str
    setup: str
    manifest: list[str]
    generators_manifest: NotRequired[list[str]]
    release_dir: str
    tags_glob: NotRequired[str]


class BaseRequirementEntry(TypedDict):
    what: str
    packages: dict[str, str]
    path: NotRequired[str]
    library: NotRequired[str]
    applies_if: NotRequired[str]


class EnvSection(TypedDict, total=False):
    required: list[str]
    exclude: list[str]
    set: dict[str, str]


class ProofEntry(TypedDict):
    name: str
    command: list[str]
    optional: NotRequired[bool]
    expect: NotRequired[str]
    applies_if: NotRequired[str]


class ProfileDocument(TypedDict):
    """A profile.yaml that passed ``validate_data``."""

    name: str
    description: NotRequired[str]
    repository: str
    resolver: str
    architectures: list[str]
    tag: TagSection
    modules: NotRequired[ModulesSection]
    lcg: NotRequired[LcgSection]
    hidden: NotRequired[list[str]]
    base: dict[str, str]
    base_requires: NotRequired[list[BaseRequirementEntry]]
    env: NotRequired[EnvSection]
    proof: list[ProofEntry]


@dataclass(frozen=True)
class Proof:
    name: str
    command: tuple[str, ...]
    optional: bool = False
    expect: str | None = None
    applies_if: str | None = None

    def on(self, file: str = PROOF_FILE) -> tuple[str, ...]:
        """The command with ``{file}`` (the file a reading proof opens) replaced by FILE."""
        return tuple(word.replace("{file}", file) for word in self.command)

    @property
    def reads(self) -> bool:
        return any("{file}" in word for word in self.command)


@dataclass(frozen=True)
class BaseRequirement:
    """Something the base image must carry (a file or a library), and the package per OS family."""

    what: str
    packages: dict[str, str]
    path: str | None = None
    library: str | None = None
    applies_if: str | None = None

    @property
    def item(self) -> str:
        return self.path or self.library or ""


@dataclass(frozen=True)
class Profile:
    name: str
    path: Path
    repository: str
    resolver: str
    architectures: tuple[str, ...]
    tag_pattern: str
    tag_example: str
    vo_prefix: str | None
    multiple: bool
    base: dict[str, str]
    proof: tuple[Proof, ...]
    base_requires: tuple[BaseRequirement, ...] = ()
    hidden: tuple[str, ...] = ()
    env_required: tuple[str, ...] = ()
    env_exclude: tuple[str, ...] = ()
    env_set: tuple[tuple[str, str], ...] = ()
    modules: ModulesSection | None = None
    lcg: LcgSection | None = None
    description: str = ""

    def base_for(self, arch: str) -> str:
        return self.base.get(arch) or self.base.get("*") or next(iter(self.base.values()))

    def modules_section(self) -> ModulesSection:
        """``modules:`` (the schema check makes a ``modules`` resolver's profile have it)."""
        if self.modules is None:
            raise InvalidError(f"profile {self.path}: resolver '{self.resolver}' needs a 'modules' section")
        return self.modules

    def lcg_section(self) -> LcgSection:
        """``lcg:`` (the schema check makes an ``lcg-view`` resolver's profile have it)."""
        if self.lcg is None:
            raise InvalidError(f"profile {self.path}: resolver '{self.resolver}' needs an 'lcg' section")
        return self.lcg


@cache
def schema() -> dict[str, object]:
    """profile.schema.json (a JSON Schema document, read by jsonschema only)."""
    data: dict[str, object] = json.loads(SCHEMA_PATH.read_text())
    return data


def profiles_dir() -> Path:
    env = os.environ.get("AFKIT_PROFILES_DIR")
    return Path(env) if env else paths.images_dir()


def available() -> list[str]:
    root = profiles_dir()
    return sorted(p.parent.name for p in root.glob("*/profile.yaml"))


def validate_data(data: Any, where: str) -> ProfileDocument:
    """DATA (a YAML document) as a profile; InvalidError naming the first schema violation."""
    validator = jsonschema.Draft202012Validator(schema())
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        err = errors[0]
        loc = "/".join(str(p) for p in err.absolute_path) or "(top level)"
        raise InvalidError(
            f"profile {where} is invalid at {loc}: {err.message}",
            hint=f"fix it against the schema {SCHEMA_PATH}",
        )
    key = "modules" if data["resolver"] == "modules" else "lcg"
    if key not in data:
        raise InvalidError(
            f"profile {where}: resolver '{data['resolver']}' needs a '{key}' section",
            hint=f"add it (see {SCHEMA_PATH})",
        )
    try:
        re.compile(data["tag"]["pattern"])
    except re.error as exc:
        raise InvalidError(f"profile {where}: tag.pattern is not a valid regex: {exc}") from exc
    doc: ProfileDocument = data
    return doc


def load(name: str) -> Profile:
    """Load and validate profile NAME (or a path to a profile.yaml)."""
    path = Path(name) if name.endswith((".yaml", ".yml")) else profiles_dir() / name / "profile.yaml"
    if not re.fullmatch(r"[a-z][a-z0-9_-]*", name) and not name.endswith((".yaml", ".yml")):
        raise NotFoundError(f"no such profile '{name}'", hint=f"profiles: {', '.join(available())}")
    if not path.is_file():
        raise NotFoundError(f"no such profile '{name}' ({path})", hint=f"profiles: {', '.join(available())}")
    try:
        data = yamlio.load(path.read_text())
    except yaml.YAMLError as exc:
        raise InvalidError(f"profile {path} is not valid YAML: {exc}") from exc
    return from_dict(validate_data(data, str(path)), path)


def from_dict(data: ProfileDocument, path: Path) -> Profile:
    tag = data["tag"]
    env = data.get("env", {})
    return Profile(
        name=data["name"],
        path=path,
        repository=data["repository"],
        resolver=data["resolver"],
        architectures=tuple(data["architectures"]),
        tag_pattern=tag["pattern"],
        tag_example=tag["example"],
        vo_prefix=tag.get("vo_prefix"),
        multiple=bool(tag.get("multiple", False)),
        base=dict(data["base"]),
        proof=tuple(
            Proof(
                p["name"],
                tuple(p["command"]),
                bool(p.get("optional", False)),
                p.get("expect"),
                p.get("applies_if"),
            )
            for p in data["proof"]
        ),
        base_requires=tuple(
            BaseRequirement(
                r["what"], dict(r["packages"]), r.get("path"), r.get("library"), r.get("applies_if")
            )
            for r in data.get("base_requires", [])
        ),
        hidden=tuple(data.get("hidden", [])),
        env_required=tuple(env.get("required", [])),
        env_exclude=tuple(env.get("exclude", [])),
        env_set=tuple(env.get("set", {}).items()),
        modules=data.get("modules"),
        lcg=data.get("lcg"),
        description=data.get("description", ""),
    )


def cvmfs_root() -> Path:
    """Where repositories are mounted on this host (``$AFKIT_CVMFS_ROOT``, default ``/cvmfs``)."""
    return Path(os.environ.get("AFKIT_CVMFS_ROOT", "/cvmfs"))


def repo_root(profile: Profile) -> Path:
    """The mounted repository; exit 3 when it is not there."""
    root = cvmfs_root() / profile.repository
    try:
        ok = root.is_dir() and any(root.iterdir())
    except OSError:
        ok = False
    if not ok:
        raise PrereqError(
            f"CVMFS repository {root} is not mounted (or empty)",
            hint=f"mount it (cvmfs_config probe {profile.repository}) or point AFKIT_CVMFS_ROOT "
            "at a directory holding it",
        )
    return root
