"""Render the Apptainer definition of an image from ``templates/apptainer/image.def.j2``."""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import jinja2

from afkit import __version__, paths
from afkit.errors import NotFoundError, UsageError
from afkit.image.model import Resolution
from afkit.image.profile import Profile

TEMPLATE = "apptainer/image.def.j2"
DEFAULT_MIRROR = "http://deb.debian.org/debian"


@dataclass(frozen=True)
class Base:
    bootstrap: str
    from_: str | None = None
    os_version: str | None = None
    mirror: str | None = None

    def describe(self) -> str:
        return f"{self.bootstrap}:{self.from_ or self.os_version}"


def parse_base(spec: str) -> Base:
    """``docker://IMG``, ``localimage:PATH`` (or a path to a .sif), ``debootstrap:SUITE``, ``library://``,
    ``oras://`` -> Base; UsageError for anything else, NotFoundError for a missing local image."""
    if re.search(r"[\s'\"`$;&|<>\\]", spec):
        raise UsageError(f"base image {spec!r} contains spaces or shell characters")
    for scheme in ("docker", "library", "oras"):
        if spec.startswith(f"{scheme}://"):
            return Base(scheme, spec[len(scheme) + 3 :])
    if spec.startswith("debootstrap:"):
        suite = spec.split(":", 1)[1]
        if not re.fullmatch(r"[a-z][a-z0-9-]*", suite):
            raise UsageError(f"debootstrap suite {suite!r} is not a suite name (e.g. debootstrap:trixie)")
        return Base("debootstrap", None, suite, os.environ.get("AFKIT_DEBIAN_MIRROR", DEFAULT_MIRROR))
    path = spec.split(":", 1)[1] if spec.startswith("localimage:") else spec
    if spec.startswith("localimage:") or path.endswith(".sif") or path.startswith("/"):
        local = Path(path).resolve()
        if not local.exists():
            raise NotFoundError(f"base image {local} does not exist", hint="build it first (scripts/mkbase)")
        return Base("localimage", str(local))
    raise UsageError(
        f"base image {spec!r} is not understood",
        hint="use docker://IMAGE, localimage:PATH, debootstrap:SUITE, library:// or oras://",
    )


def given_base(cli: str | None) -> str | None:
    """The base the user gave: --base, else $AFKIT_BASE_IMAGE; None for the profile's default."""
    return cli or os.environ.get("AFKIT_BASE_IMAGE") or None


def choose_base(profile: Profile, arch: str, cli: str | None) -> Base:
    """--base wins, then $AFKIT_BASE_IMAGE, then the profile's default for ARCH."""
    return parse_base(given_base(cli) or profile.base_for(arch))


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(paths.templates_dir())),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )
    env.filters["shquote"] = lambda v: shlex.quote(str(v))
    return env


def render(
    profile: Profile,
    res: Resolution,
    base: Base,
    staged: Path,
    closure_sha256: str,
    build_time: str,
) -> str:
    for var in res.env:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", var.name):
            raise UsageError(f"environment variable name {var.name!r} cannot go into an image")
    return (
        environment()
        .get_template(TEMPLATE)
        .render(
            version=__version__,
            profile=profile.name,
            repository=profile.repository,
            tag=res.tag,
            arch=res.arch,
            n_units=len(res.units),
            closure_sha256=closure_sha256,
            bootstrap=base.bootstrap,
            from_=base.from_,
            os_version=base.os_version,
            mirror=base.mirror,
            staged=str(staged),
            env=res.env,
            required=profile.env_required,
            proofs=profile.proof,
            build_time=build_time,
        )
    )
