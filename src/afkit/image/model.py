"""What resolving a tag yields: the closure (units to stage) and the environment to set.

Standard library only: the campaign job checks the image's environment with ``EnvVar.holds``
inside the image (afkit.campaign.steps).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict

# what an image built by afkit says about itself (tag, environment, ELF files): written by the
# definition (templates/apptainer/image.def.j2), read by `afkit image validate` and the campaign job
INFO_PATH = "/.afkit/image.json"
# The validation proofs' files (a ROOT macro, a reader to compile, a real ROOT file), in every image.
PROOF_PATH = "/.afkit/proof"
PROOF_SOURCE = Path(__file__).with_name("proof")
# The real ROOT file the reading proofs open by default ({file} in a proof command).
PROOF_FILE = f"{PROOF_PATH}/HZZ.root"


class ElfFacts(TypedDict):
    """What an ELF file needs at run time (afkit.image.elf.ElfInfo as JSON)."""

    interp: str | None
    needed: list[str]


class ElfFile(ElfFacts):
    """An ELF file of the closure (image.json ``elf``): its path relative to the repository."""

    path: str


@dataclass(frozen=True)
class Unit:
    """One root of the closure, relative to the repository root (a package directory, a file...)."""

    rel: str
    label: str  # e.g. "ROOT/v6-20-08-1", "modulefile", "hidden"


@dataclass(frozen=True)
class EnvVar:
    """A variable of the tag's environment, as it must read inside the image.

    With ``inherit`` the value is prepended to what the image already has (PATH-like variables
    that the clean environment had too), else it is set as is.
    """

    name: str
    value: str
    inherit: bool = False

    def holds(self, got: str | None) -> bool:
        """Does GOT, the variable as the running image has it, carry this value? Apptainer may
        append to path lists (LD_LIBRARY_PATH gets :/.singularity.d/libs)."""
        if got is None:
            return False
        if self.inherit:
            return got.startswith(self.value)
        return got == self.value or got.startswith(self.value + ":")


# image.json (INFO_PATH) and NAME.plan.json: key names are the file formats'
class UnitJSON(TypedDict):
    rel: str
    label: str


class EnvVarJSON(TypedDict):
    name: str
    value: str
    inherit: bool


class ResolutionJSON(TypedDict):
    """A Resolution as JSON (``Resolution.to_json``)."""

    profile: str
    repository: str
    arch: str
    tag: str
    items: list[str]
    units: list[UnitJSON]
    env: list[EnvVarJSON]
    modules: list[str]
    warnings: list[str]


class ProofJSON(TypedDict):
    """A validation proof of the profile (afkit.image.profile.Proof) as image.json keeps it."""

    name: str
    command: list[str]
    optional: bool
    expect: str | None
    applies_if: str | None


class ImageInfo(ResolutionJSON):
    """image.json: the resolution, the variables the profile requires, its proofs, the ELF files."""

    afkit: str  # the version that built the image
    required: list[str]
    proof: list[ProofJSON]
    elf: list[ElfFile]


@dataclass
class Resolution:
    profile: str
    repository: str
    arch: str
    tag: str
    items: list[str]
    units: list[Unit]
    env: list[EnvVar]
    modules: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> ResolutionJSON:
        return {
            "profile": self.profile,
            "repository": self.repository,
            "arch": self.arch,
            "tag": self.tag,
            "items": list(self.items),
            "units": [{"rel": u.rel, "label": u.label} for u in self.units],
            "env": [{"name": e.name, "value": e.value, "inherit": e.inherit} for e in self.env],
            "modules": list(self.modules),
            "warnings": list(self.warnings),
        }

    @classmethod
    def from_json(cls, data: ResolutionJSON) -> Resolution:
        return cls(
            profile=data["profile"],
            repository=data["repository"],
            arch=data["arch"],
            tag=data["tag"],
            items=list(data["items"]),
            units=[Unit(**u) for u in data["units"]],
            env=[EnvVar(**e) for e in data["env"]],
            modules=list(data.get("modules", [])),
            warnings=list(data.get("warnings", [])),
        )
