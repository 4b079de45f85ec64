"""A study: a published measurement afkit reruns (package data ``afkit/data/studies/NAME.yaml``).

A study file holds the original (its source, figures and numbers with units), the roles the study
needs of a facility (which site runs the jobs, which storage is one server, ...), the recipe's
parameters at a user's facility and in the box (scaled, with each scale factor named), the recipe
(datasets and benchmarks by role) and the claims, each with a machine-checkable criterion whose
thresholds are fixed in the file before any run (docs/studies.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import cast

from afkit import yamlio
from afkit.errors import InvalidError, NotFoundError

ROLE_KINDS = ("site", "site-list", "storage", "storage-list")
# how a study runs: a campaign of jobs at sites (afkit campaign run), or on the host the command
# runs on, as root (the disk-server study: afkit.study.diskserver)
RUNNERS = ("campaign", "host")


@dataclass(frozen=True)
class Role:
    name: str
    kind: str  # site | site-list | storage | storage-list
    doc: str
    optional: bool = False


@dataclass(frozen=True)
class Claim:
    id: str
    text: str
    original: str
    criterion: dict[str, object]

    @property
    def kind(self) -> str:
        return str(self.criterion["kind"])


@dataclass(frozen=True)
class Study:
    name: str
    title: str
    source: dict[str, object]
    original: dict[str, dict[str, object]]
    roles: dict[str, Role]
    params: dict[str, object]
    box: dict[str, object]
    recipe: dict[str, object]
    claims: list[Claim] = field(default_factory=list)
    runner: str = "campaign"

    def value(self, key: str) -> float:
        """The original's number KEY (``original.KEY.value``)."""
        return float(cast(float, self.original[key]["value"]))

    @property
    def box_params(self) -> dict[str, object]:
        return cast("dict[str, object]", self.box.get("params", {}))

    @property
    def box_roles(self) -> dict[str, object]:
        return cast("dict[str, object]", self.box.get("roles", {}))


def studies_dir() -> Path:
    """The folder of the study files (package data)."""
    return Path(str(resources.files("afkit") / "data" / "studies"))


def names() -> list[str]:
    return sorted(p.stem for p in studies_dir().glob("*.yaml"))


def load(name: str) -> Study:
    """The study NAME (NotFoundError naming the studies there are)."""
    path = studies_dir() / f"{name}.yaml"
    if "/" in name or name.startswith(".") or not path.is_file():
        raise NotFoundError(
            f"no study named {name!r}", hint=f"studies: {', '.join(names())} (afkit study list)"
        )
    return parse(yamlio.load(path.read_text(encoding="utf-8")), str(path))


def _mapping(data: object, what: str) -> dict[str, object]:
    if not isinstance(data, dict):
        raise InvalidError(f"{what}: expected a mapping, got {type(data).__name__}")
    return cast("dict[str, object]", data)


def parse(data: object, where: str) -> Study:
    """The study described by DATA (a study file's YAML), checked (InvalidError naming WHERE)."""
    d = _mapping(data, where)
    missing = [
        k
        for k in ("name", "title", "source", "original", "roles", "params", "box", "recipe", "claims")
        if k not in d
    ]
    if missing:
        raise InvalidError(f"{where}: missing keys {', '.join(missing)}")
    roles = {}
    for rname, spec in _mapping(d["roles"], f"{where}: roles").items():
        r = _mapping(spec, f"{where}: roles.{rname}")
        if r.get("kind") not in ROLE_KINDS:
            raise InvalidError(f"{where}: roles.{rname}.kind must be one of {', '.join(ROLE_KINDS)}")
        roles[rname] = Role(rname, str(r["kind"]), str(r.get("doc", "")), bool(r.get("optional", False)))
    claims = []
    raw_claims = d["claims"]
    if not isinstance(raw_claims, list):
        raise InvalidError(f"{where}: claims must be a list")
    for i, c in enumerate(raw_claims):
        cm = _mapping(c, f"{where}: claims[{i}]")
        crit = _mapping(cm.get("criterion"), f"{where}: claims[{i}].criterion")
        if "kind" not in crit:
            raise InvalidError(f"{where}: claims[{i}].criterion has no kind")
        claims.append(Claim(str(cm["id"]), str(cm["text"]), str(cm.get("original", "")), crit))
    original = {k: _mapping(v, f"{where}: original.{k}") for k, v in _mapping(d["original"], where).items()}
    runner = str(d.get("runner", "campaign"))
    if runner not in RUNNERS:
        raise InvalidError(f"{where}: runner must be one of {', '.join(RUNNERS)}, not {runner!r}")
    return Study(
        name=str(d["name"]),
        title=str(d["title"]),
        source=_mapping(d["source"], f"{where}: source"),
        original=original,
        roles=roles,
        params=_mapping(d["params"], f"{where}: params"),
        box=_mapping(d["box"], f"{where}: box"),
        recipe=_mapping(d["recipe"], f"{where}: recipe"),
        claims=claims,
        runner=runner,
    )
