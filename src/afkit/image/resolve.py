"""Resolve a tag to its closure and environment, with the resolver the profile names.

The resolvers are the entries of ``RESOLVERS`` (profile key ``resolver``), one ``Resolver`` each:
``modules`` (environment-modules modulefiles, e.g. alice.cern.ch) and ``lcg-view`` (an LCG view's
manifest and ``setup.sh``, sft.cern.ch). Each says which tags exist and resolves one; the closure
helpers below are shared.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from afkit.errors import AfkitError, InvalidError, NotFoundError, PrereqError
from afkit.image import envcapture
from afkit.image.model import EnvVar, Resolution, Unit
from afkit.image.profile import LcgSection, Profile
from afkit.image.tags import Tag, nearest

IMAGE_CVMFS = "/cvmfs"

_MODULES_SCRIPT = r"""set -e
if [ "$#" -gt 0 ] && [ -n "${AFKIT_MODULES_FORCE:-}" ]; then
  # a requirement that cannot be found is a warning, as with alienv's Modules 3.2
  code=$("$AFKIT_MODULECMD" bash load --force "$@") || true
  eval "$code" || true
elif [ "$#" -gt 0 ]; then
  code=$("$AFKIT_MODULECMD" bash load "$@")
  eval "$code"
fi
unset AFKIT_MODULES_FORCE
env -0
"""

_SOURCE_SCRIPT = r"""set -e
if [ "$#" -gt 0 ]; then . "$1" >/dev/null; fi
env -0
"""


def modulecmd() -> str:
    """The environment-modules ``modulecmd`` (``$AFKIT_MODULECMD`` wins); exit 3 when missing."""
    cmd = os.environ.get("AFKIT_MODULECMD") or shutil.which("modulecmd")
    if not cmd:
        for cand in ("/usr/bin/modulecmd", "/usr/share/Modules/libexec/modulecmd.tcl"):
            if os.access(cand, os.X_OK):
                cmd = cand
                break
    if not cmd:
        raise PrereqError(
            "environment-modules 'modulecmd' not found",
            hint="install it (apt-get install environment-modules / dnf install environment-modules) "
            "or set AFKIT_MODULECMD",
        )
    return cmd


def image_root(profile: Profile) -> str:
    return f"{IMAGE_CVMFS}/{profile.repository}"


def published_dir(profile: Profile, src: Path, arch: str) -> Path:
    """The directory of a modules profile's published tags (``Pkg/version`` modulefiles)."""
    mods = profile.modules_section()
    return src / mods.get("published", mods["modulepath"][-1]).format(arch=arch)


def resolve(profile: Profile, tag: Tag, src: Path) -> Resolution:
    """Resolve TAG for PROFILE in the repository mounted at SRC."""
    return RESOLVERS[profile.resolver].resolve(profile, tag, src)


# --- tag listing and lookup -------------------------------------------------------------------


def list_tags(profile: Profile, src: Path) -> dict[str, list[str]]:
    """Tags per architecture, sorted."""
    out: dict[str, list[str]] = {}
    for arch in profile.architectures:
        found = RESOLVERS[profile.resolver].tags(profile, src, arch)
        if found:
            out[arch] = sorted(set(found))
    return out


def _item_exists(profile: Profile, src: Path, arch: str, item: str) -> bool:
    return RESOLVERS[profile.resolver].has(profile, src, arch, item)


def pick_arch(profile: Profile, tag: Tag, src: Path) -> str:
    """The first architecture (profile order) that has every item of TAG; else exit 5 with the nearest."""
    for arch in profile.architectures:
        if all(_item_exists(profile, src, arch, item) for item in tag.items):
            return arch
    archs_all = profile.architectures
    missing = [i for i in tag.items if not any(_item_exists(profile, src, a, i) for a in archs_all)]
    archs = ", ".join(profile.architectures)
    if not missing:
        raise NotFoundError(
            f"no single architecture has all of {tag.text!r} in {profile.repository} (looked in {archs})",
            hint="build the items separately, or choose versions built for the same architecture",
        )
    item = missing[0]
    candidates = RESOLVERS[profile.resolver].candidates(profile, src, item)
    near = nearest(item, candidates)
    hint = "list the tags with: afkit image tags --profile " + profile.name
    near_text = f"; nearest: {', '.join(near)}" if near else ""
    raise NotFoundError(
        f"unknown tag {item!r} in {profile.repository} (looked in {archs}){near_text}", hint=hint
    )


def _module_candidates(profile: Profile, src: Path, item: str) -> list[str]:
    """Cheap candidate list: the versions of the same package, else the package names."""
    name = item.split("/", 1)[0]
    found: set[str] = set()
    for arch in profile.architectures:
        pkg = published_dir(profile, src, arch) / name
        if pkg.is_dir():
            found.update(f"{name}/{p.name}" for p in pkg.iterdir())
    if found:
        return sorted(found)
    for arch in profile.architectures:
        base = published_dir(profile, src, arch)
        if base.is_dir():
            for pkg in base.iterdir():
                found.update(f"{pkg.name}/{v.name}" for v in list(pkg.iterdir())[-3:] if pkg.is_dir())
    return sorted(found)


# --- closure helpers --------------------------------------------------------------------------


def _rel(path: Path, src: Path) -> str | None:
    """PATH relative to the repository: under SRC (as given or resolved) or under its published
    path /cvmfs/<repo> (absolute symlinks and scripts of the real repositories name that one)."""
    for root in (str(src), os.path.realpath(src), f"{IMAGE_CVMFS}/{src.name}"):
        text = str(path)
        if text == root:
            return ""
        if text.startswith(root + "/"):
            return text[len(root) + 1 :]
    return None


def _unit_for(rel: str, globs: list[str]) -> tuple[str, bool]:
    """(unit rel, matched) for a path: the prefix matching a unit glob; (rel, False) otherwise."""
    parts = rel.split("/")
    for glob in globs:
        gparts = glob.split("/")
        if len(parts) >= len(gparts) and all(
            fnmatch.fnmatchcase(p, g) for p, g in zip(parts, gparts, strict=False)
        ):
            return "/".join(parts[: len(gparts)]), True
    return rel, False


def _is_glob_ancestor(rel: str, globs: list[str]) -> bool:
    """True for a directory above the units (e.g. BASEDIR=<arch>/Packages): never staged whole."""
    parts = rel.split("/") if rel else []
    for glob in globs:
        gparts = glob.split("/")
        if len(parts) < len(gparts) and all(
            fnmatch.fnmatchcase(p, g) for p, g in zip(parts, gparts, strict=False)
        ):
            return True
    return False


def _add(units: dict[str, Unit], rel: str, label: str) -> None:
    if rel and rel not in units:
        units[rel] = Unit(rel, label)


def _hidden(profile: Profile, src: Path, arch: str, units: dict[str, Unit]) -> None:
    """The profile's hidden dependencies (globs); a symlink among them brings its target through
    _expand_links, which both resolvers run on every unit afterwards."""
    for pattern in profile.hidden:
        for match in sorted(src.glob(pattern.format(arch=arch))):
            rel = _rel(match, src)
            if rel is not None:
                _add(units, rel, "hidden")


def _last_two(unit: str) -> str:
    return "/".join(unit.split("/")[-2:])


def _lcg_label(unit: str) -> str:
    """lcg/releases/ROOT/6.30.02-78779/<platform> -> ROOT/6.30.02-78779"""
    return "/".join(unit.split("/")[-3:-1])


def _env_units(
    env_values: list[str],
    src: Path,
    globs: list[str],
    units: dict[str, Unit],
    warnings: list[str],
    label: Callable[[str], str] = _last_two,
) -> None:
    for token in envcapture.path_tokens(env_values, src):
        rel = _rel(token, src)
        if rel is None or _is_glob_ancestor(rel, globs):
            continue
        if not ((src / rel).exists() or (src / rel).is_symlink()):
            continue
        unit, matched = _unit_for(rel, globs)
        if not matched:
            warnings.append(f"{rel} (from the environment) is outside every unit glob; staged as is")
        _add(units, unit, label(unit) if matched else "environment")


def _expand_links(units: dict[str, Unit], src: Path, globs: list[str]) -> None:
    """Symlinks stay symlinks: a unit that is, or lies under, a symlink inside the repository is
    staged as the link plus what it points to (its package when a unit glob matches), chains
    followed. A link on the way to a unit replaces the unit (the stager keeps it as a link)."""
    todo = list(units)
    seen: set[str] = set()
    while todo:
        rel = todo.pop()
        if rel in seen:
            continue
        seen.add(rel)
        parts = rel.split("/")
        for i in range(1, len(parts) + 1):
            head = "/".join(parts[:i])
            link = src / head
            if not link.is_symlink():
                continue
            text = os.readlink(link)
            target = Path(os.path.normpath(text if os.path.isabs(text) else link.parent / text))
            target_rel = _rel(target, src)
            if target_rel is None:
                break  # leaves the repository: the stager keeps it as it is and says so
            _add(units, head, "symlink")
            rest = "/".join(parts[i:])
            new = f"{target_rel}/{rest}" if rest else target_rel
            unit, matched = _unit_for(new, globs)
            _add(units, unit, _last_two(unit) if matched else "symlink target")
            todo.append(unit)
            break


def _placement_warning(profile: Profile, src: Path, warnings: list[str]) -> None:
    """The real trees name their published path: alibuild's GCC-Toolchain modulefile loads
    Toolchain/GCC-<v> and grid-base-packages only from /cvmfs, LCG views link to and source
    /cvmfs/sft.cern.ch. Elsewhere the environment is the one alienv/setup.sh give there."""
    if str(src) != image_root(profile):
        warnings.append(
            f"{profile.repository} is at {src}, not at {image_root(profile)}: modulefiles and setup "
            "scripts that name /cvmfs give the environment they give there, not the one of a site"
        )


def _rewrite_map(src: Path, profile: Profile) -> dict[str, str]:
    return {str(src): image_root(profile), os.path.realpath(src): image_root(profile)}


def _tool_env(profile: Profile, env: list[EnvVar], fields: dict[str, str]) -> list[EnvVar]:
    """ENV plus the profile's ``env.set`` (what the experiment's tool sets besides the tag, e.g.
    alienv's MODULEPATH and ALIEN_ORGANISATION), FIELDS filled in; those win over the tag's."""
    if not profile.env_set:
        return env
    names = {name for name, _ in profile.env_set}
    out = [e for e in env if e.name not in names]
    for name, template in profile.env_set:
        try:
            value = template.format(**fields)
        except (KeyError, IndexError, ValueError) as exc:
            raise InvalidError(
                f"profile {profile.path}: env.set.{name} {template!r} cannot be filled in ({exc!r})",
                hint=f"the {profile.resolver} resolver fills in: {', '.join(sorted(fields)) or 'nothing'}",
            ) from None
        out.append(EnvVar(name, value))
    return sorted(out, key=lambda e: e.name)


# --- resolvers --------------------------------------------------------------------------------


def _resolve_modules(profile: Profile, tag: Tag, src: Path) -> Resolution:
    arch = pick_arch(profile, tag, src)
    cmd = modulecmd()
    mods = profile.modules_section()
    modulepath = ":".join(str(src / mp.format(arch=arch)) for mp in mods["modulepath"])
    extra = {"MODULEPATH": modulepath, "AFKIT_MODULECMD": cmd}
    clean = envcapture.capture(_MODULES_SCRIPT, [], extra)
    warnings: list[str] = []
    try:
        loaded = envcapture.capture(_MODULES_SCRIPT, list(tag.items), extra)
    except AfkitError as err:
        missing = missing_toolchains(str(err))
        if not missing:
            raise load_error(str(err), list(tag.items), modulepath) from None
        # alienv's modulecmd (Modules 3.2) carries on when Toolchain/GCC-<v> is not published for
        # the platform, and alidist's GCC-Toolchain module then falls back on itself: do the same.
        loaded = envcapture.capture(_MODULES_SCRIPT, list(tag.items), {**extra, "AFKIT_MODULES_FORCE": "1"})
        warnings.append(
            f"{', '.join(missing)} not published for {arch} (no link in etc/toolchain/modulefiles/{arch}): "
            "GCC-Toolchain falls back on its own revision, as under alienv"
        )
    globs = [g.format(arch=arch) for g in mods.get("unit_globs", [])]
    units: dict[str, Unit] = {}
    modules = [m for m in loaded.get("LOADEDMODULES", "").split(":") if m]
    lmfiles = [f for f in loaded.get("_LMFILES_", "").split(":") if f]
    for module in modules:
        name, _, version = module.partition("/")
        # A module loaded through a symlinked modulefile (grid-base-packages/default -> v1-1) is
        # the package of the version it points to.
        through = next((Path(f) for f in lmfiles if f.endswith("/" + module)), None)
        if through is not None and through.is_symlink():
            version = Path(os.path.realpath(through)).name
        pkg = src / mods["package_dir"].format(arch=arch, name=name, version=version)
        rel = _rel(pkg, src)
        if rel is not None and pkg.is_dir():
            _add(units, rel, f"{name}/{version}")
    for lmfile in loaded.get("_LMFILES_", "").split(":"):
        rel = _rel(Path(lmfile), src) if lmfile else None
        if rel is not None:
            _add(units, rel, "modulefile")
    values = [v for k, v in loaded.items() if k not in ("MODULEPATH", "_LMFILES_") and clean.get(k) != v]
    _env_units(values, src, globs, units, warnings)
    _hidden(profile, src, arch, units)
    _expand_links(units, src, globs)
    _placement_warning(profile, src, warnings)
    rewrite = _rewrite_map(src, profile)
    env = envcapture.diff(clean, loaded, exclude=profile.env_exclude, rewrite=rewrite)
    env = _tool_env(profile, env, {"modulepath": envcapture.rewrite_paths(modulepath, rewrite)})
    return Resolution(
        profile=profile.name,
        repository=profile.repository,
        arch=arch,
        tag=tag.text,
        items=list(tag.items),
        units=_prune(units),
        env=env,
        modules=modules,
        warnings=warnings,
    )


# modulecmd's report (the first line may follow envcapture's "...failed (exit 1): " prefix)
_LOADING = re.compile(r"(?:^|\): )\s*Loading (\S+)\s*$")
_ERROR = re.compile(r"ERROR: (.*)")
_LOCATE = re.compile(r"Unable to locate a modulefile for '([^']+)'")


def missing_toolchains(stderr: str) -> list[str]:
    """The Toolchain/<v> modules a failed load could not find, when that is its only error."""
    errors = [m.group(1).strip() for m in map(_ERROR.search, stderr.splitlines()) if m]
    missing = [m.group(1) for m in map(_LOCATE.search, errors) if m and m.group(1).startswith("Toolchain/")]
    tolerated = ("Unable to locate a modulefile for 'Toolchain/", "Load of requirement")
    others = [e for e in errors if not e.startswith(tolerated)]
    return sorted(set(missing)) if missing and not others else []


# Tcl's errorInfo, which modulecmd prints under a modulefile's error: the command, then its place
# (modulecmd wraps long lines, so the place may span two)
_TCL_PLACE = re.compile(r'\(file\s+"([^"]+)"\s+line (\d+)\)')
_TCL_EXECUTING = re.compile(r"while (?:executing|compiling)\s*\n\s*(.*)")


def _tcl_error(stderr: str) -> tuple[str, str, str] | None:
    """(modulefile, line number, command) of the first Tcl error modulecmd reports, if any."""
    place = _TCL_PLACE.search(stderr)
    if place is None:
        return None
    executing = _TCL_EXECUTING.search(stderr, 0, place.start())
    command = executing.group(1).strip().removeprefix('"').removesuffix('"') if executing else ""
    return place.group(1), place.group(2), command


def load_error(stderr: str, items: list[str], modulepath: str) -> AfkitError:
    """A failed ``module load`` as the user needs it: which modulefile, which of its lines, which
    module could not be found, and MODULEPATH (exit 1: the tag exists, its modulefiles are broken).
    A Tcl error inside a modulefile (a syntax error, an unknown command) is named by the file and
    line modulecmd reports, and blamed on the modulefile."""
    lines = stderr.splitlines()
    tcl = _tcl_error(stderr)
    if tcl is not None:
        path, number, command = tcl
        cause = next((m.group(1).strip() for m in map(_ERROR.search, lines) if m), "Tcl error")
        shown = f' ("{command}")' if command else ""
        loaders = [m.group(1) for m in map(_LOADING.search, lines) if m]
        chain = list(dict.fromkeys(reversed(loaders)))
        via = f"; loaded through {' -> '.join(chain)}" if len(chain) > 1 else ""
        return AfkitError(
            f"cannot load {', '.join(items)}: {cause} at {path} line {number}{shown}{via}",
            hint=f"the modulefile {path} itself is broken (a Tcl syntax error or unknown command at line "
            f"{number}, as modulecmd reports it), not MODULEPATH: alienv fails on it too; pick another "
            "tag, or report the modulefile to the repository's maintainers",
        )
    failing, cause = "", ""
    for line in lines:
        if (m := _LOADING.search(line)) and not cause:
            failing = m.group(1)
        if (m := _ERROR.search(line)) and not cause:
            cause = m.group(1).strip()
    where, bad_line = "", ""
    missing = _LOCATE.search(cause)
    for directory in modulepath.split(":"):
        candidate = Path(directory) / failing if failing else None
        if candidate is not None and candidate.is_file():
            where = str(candidate)
            if missing:
                for text in candidate.read_text(errors="replace").splitlines():
                    if "module load" in text and missing.group(1) in text:
                        bad_line = text.strip()
                        break
            break
    if not cause:
        cause = " ".join(line.strip() for line in lines[-3:]) or "modulecmd failed without a message"
    parts = [f"cannot load {', '.join(items)}: {cause}"]
    if failing:
        parts.append(f"in {failing}" + (f" ({where})" if where else ""))
    if bad_line:
        parts.append(f"at the line '{bad_line}'")
    return AfkitError(
        "; ".join(parts) + f"; MODULEPATH was {modulepath}",
        hint="the repository's modulefiles need a module that is not on MODULEPATH: check the profile's "
        "modules.modulepath against the experiment's environment tool, or report the modulefile",
    )


_COMPILER_BASES = (
    "lcg/releases/contrib",
    "lcg/releases/external",
    "lcg/releases",
    "lcg/contrib",
    "lcg/external",
)


def lcg_compiler(text: str) -> tuple[str, str] | None:
    """(compiler, version) from a manifest's ``COMPILER: gcc;13.1.0`` (or ``GNU 13.1.0``) header."""
    for line in text.splitlines():
        if line.startswith("COMPILER:"):
            fields = [f for f in re.split(r"[;\s]+", line[len("COMPILER:") :].strip()) if f]
            if len(fields) >= 2:
                name = "gcc" if fields[0].upper() == "GNU" else fields[0]
                return name, fields[1]
    return None


def _lcg_compiler_unit(text: str, src: Path, arch: str) -> str | None:
    """Where a view's setup.sh finds its compiler (lcgcmake create_lcg_view.py's search order):
    releases/contrib, releases/external, releases, then contrib, each <compiler>/<version>/<arch>-<os>."""
    found = lcg_compiler(text)
    if found is None:
        return None
    name, version = found
    naked = "-".join([arch.split("-")[0].split("+")[0], *arch.split("-")[1:2]])
    for base in (
        "lcg/releases/contrib",
        "lcg/releases/external",
        "lcg/releases",
        "lcg/contrib",
        "lcg/external",
    ):
        rel = f"{base}/{name}/{version}/{naked}"
        if (src / rel).is_dir():
            return rel
    return None


def _manifest_dirs(text: str) -> list[str]:
    """Column 4 (the install directory, relative to the release directory) of every package line."""
    out = []
    for line in text.splitlines():
        fields = [f.strip() for f in line.split(";")]
        if line.strip().startswith("#") or len(fields) < 4 or not fields[3] or line.startswith("COMPILER:"):
            continue
        out.append(fields[3])
    return out


def parse_lcg_manifest(text: str) -> list[tuple[str, str, str]]:
    """(name, hash, version) of every package line of an ``LCG_externals_<platform>.txt``."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or ";" not in line:
            continue
        fields = [f.strip() for f in line.split(";")]
        if len(fields) >= 3 and fields[0] and fields[1] and fields[2]:
            out.append((fields[0], fields[1], fields[2]))
    return out


# Packages that lcgcmake installs one directory deeper, releases/<category>/<name>/<version>-<hash>
# (create_lcg_view.py getPackageName; the generators' manifest lists ./MCGenerators/<name>/...).
LCG_CATEGORIES = ("MCGenerators", "Grid")


def _first_file(src: Path, candidates: list[str], item: str, arch: str) -> Path | None:
    paths = [src / c.format(tag=item, arch=arch) for c in candidates]
    return next((p for p in paths if p.is_file()), None)


def _manifest_packages(
    manifest: Path, src: Path, lcg: LcgSection, arch: str, globs: list[str], warnings: list[str]
) -> dict[str, tuple[str, str | None]]:
    """Install unit -> (name/version, the release's link to it) of every package line."""
    out: dict[str, tuple[str, str | None]] = {}
    text = manifest.read_text()
    for (name, hsh, version), where in zip(parse_lcg_manifest(text), _manifest_dirs(text), strict=False):
        # The directory column is relative to the release directory (./ROOT/6.30.02/<platform>,
        # a symlink to releases/ROOT/6.30.02-<hash>/<platform>); older manifests are absolute.
        path = Path(os.path.normpath(Path(where) if os.path.isabs(where) else manifest.parent / where))
        link = _rel(path, src)
        if link is not None and (src / link).is_symlink():
            install = _rel(Path(os.path.realpath(src / link)), src)
        else:
            install, link = link, None
        if install is None or not (src / install).exists():
            install = lcg["release_dir"].format(name=name, version=version, hash=hsh, arch=arch)
        if not (src / install).exists():
            warnings.append(f"{manifest.name} lists {name} {version} but {install} does not exist")
            continue
        out[_unit_for(install, globs)[0]] = (f"{name}/{version}", link)
    return out


def _resolve_lcg(profile: Profile, tag: Tag, src: Path) -> Resolution:
    """The view's packages only (lcgcmake's create_lcg_view.py links a release's packages into
    the view but for its package blacklist: a manifest line alone stages nothing), each for the
    view's platform, plus both manifests, the compiler and what setup.sh names."""
    arch = pick_arch(profile, tag, src)
    item = tag.items[0]
    lcg = profile.lcg_section()
    view = src / lcg["view"].format(tag=item, arch=arch)
    setup = src / lcg["setup"].format(tag=item, arch=arch)
    manifest = _first_file(src, lcg["manifest"], item, arch)
    generators = _first_file(src, lcg.get("generators_manifest", []), item, arch)
    units: dict[str, Unit] = {}
    warnings: list[str] = []
    view_rel = _rel(view, src)
    assert view_rel is not None
    _add(units, view_rel, f"view {item}")
    # Any release directory (<releases>[/<category>]/<name>/<version>-<hash>/<platform>): the
    # view's packages and those reached only through setup.sh (the compiler runtime).
    release_root = lcg["release_dir"].split("{name}", 1)[0].rstrip("/")
    globs = [*(f"{release_root}/{c}/*/*/*" for c in LCG_CATEGORIES), f"{release_root}/*/*/*"]
    listed: dict[str, tuple[str, str | None]] = {}
    for found in (manifest, generators):
        if found is not None:
            listed.update(_manifest_packages(found, src, lcg, arch, globs, warnings))
            _add(units, _rel(found, src) or "", "manifest")
    if manifest is None:
        first = src / lcg["manifest"][0].format(tag=item, arch=arch)
        warnings.append(f"no manifest {first}; closure from the view's symlinks")
    else:
        compiler = _lcg_compiler_unit(manifest.read_text(), src, arch)
        if compiler:
            _add(units, compiler, "compiler " + "/".join(compiler.split("/")[-3:-1]))
    for link in _symlinks(view):
        rel = _rel(Path(os.path.realpath(link)), src)
        if rel is None:
            continue
        unit, matched = _unit_for(rel, globs)
        if not matched:
            continue
        label, release_link = listed.get(unit, (_lcg_label(unit), None))
        _add(units, unit, label)
        if release_link is not None:
            _add(units, release_link, label)
    clean = envcapture.capture(_SOURCE_SCRIPT, [], {})
    loaded = envcapture.capture(_SOURCE_SCRIPT, [str(setup)], {}) if setup.is_file() else clean
    if not setup.is_file():
        warnings.append(f"no {setup}: the image gets no environment from the view")
    values = [v for k, v in loaded.items() if clean.get(k) != v]
    _env_units(values, src, [*globs, view_rel], units, warnings, _lcg_label)
    env = envcapture.diff(clean, loaded, exclude=profile.env_exclude, rewrite=_rewrite_map(src, profile))
    env = _tool_env(profile, env, {})
    _hidden(profile, src, arch, units)
    _expand_links(units, src, globs)
    _placement_warning(profile, src, warnings)
    return Resolution(
        profile=profile.name,
        repository=profile.repository,
        arch=arch,
        tag=tag.text,
        items=list(tag.items),
        units=_prune(units),
        env=env,
        warnings=warnings,
    )


def _symlinks(root: Path) -> list[Path]:
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            if path.is_symlink():
                out.append(path)
    return out


def _prune(units: dict[str, Unit]) -> list[Unit]:
    """Drop units inside another unit; sorted by path."""
    rels = sorted(units)
    kept: list[Unit] = []
    for rel in rels:
        if any(rel.startswith(k.rel + "/") for k in kept):
            continue
        kept.append(units[rel])
    return kept


# --- the registry -----------------------------------------------------------------------------


class Resolver(Protocol):
    """One way to find a profile's tags and resolve one to its closure and environment."""

    def tags(self, profile: Profile, src: Path, arch: str) -> list[str]:
        """The tags published for ARCH (any order, may repeat)."""
        ...

    def has(self, profile: Profile, src: Path, arch: str, item: str) -> bool:
        """Whether ITEM (one item of a tag) is published for ARCH."""
        ...

    def candidates(self, profile: Profile, src: Path, item: str) -> list[str]:
        """What to search for the nearest names of an unknown ITEM."""
        ...

    def resolve(self, profile: Profile, tag: Tag, src: Path) -> Resolution: ...


class ModulesResolver:
    """Modulefiles ``Pkg/version`` under the profile's published directory, loaded by modulecmd."""

    def tags(self, profile: Profile, src: Path, arch: str) -> list[str]:
        base = published_dir(profile, src, arch)
        return [f"{p.parent.name}/{p.name}" for p in base.glob("*/*") if p.is_file()]

    def has(self, profile: Profile, src: Path, arch: str, item: str) -> bool:
        return (published_dir(profile, src, arch) / item).is_file()

    def candidates(self, profile: Profile, src: Path, item: str) -> list[str]:
        return _module_candidates(profile, src, item)

    def resolve(self, profile: Profile, tag: Tag, src: Path) -> Resolution:
        return _resolve_modules(profile, tag, src)


class LcgViewResolver:
    """LCG views ``lcg/views/LCG_N/ARCH``: the view's manifest and its ``setup.sh``."""

    def tags(self, profile: Profile, src: Path, arch: str) -> list[str]:
        pattern = profile.lcg_section().get("tags_glob", "lcg/views/*/{arch}").format(arch=arch)
        return [Path(p).relative_to(src).parts[2] for p in src.glob(pattern) if p.is_dir()]

    def has(self, profile: Profile, src: Path, arch: str, item: str) -> bool:
        view = profile.lcg_section()["view"].format(tag=item, arch=arch)
        return (src / view).is_dir()

    def candidates(self, profile: Profile, src: Path, item: str) -> list[str]:
        return sorted({t for tags in list_tags(profile, src).values() for t in tags})

    def resolve(self, profile: Profile, tag: Tag, src: Path) -> Resolution:
        return _resolve_lcg(profile, tag, src)


# profile.schema.json's enum of ``resolver`` lists these keys
RESOLVERS: dict[str, Resolver] = {"modules": ModulesResolver(), "lcg-view": LcgViewResolver()}
