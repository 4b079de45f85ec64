#!/usr/bin/env python3
"""afkit CI configuration helper: tag lists, schema checks, the per-tag child pipeline.

Called by the ci/*.sh scripts (which pick a Python with PyYAML and jsonschema); usable by hand:

  cicfg.py tags  --images DIR --profile P [--override "T1 T2"]   print the tags, one per line
  cicfg.py check --images DIR [--profile-schema FILE]            schema-check profiles and tag lists
  cicfg.py child --images DIR --profile P --output FILE [--override ...]   write the child pipeline

Exit codes: 0 ok, 2 usage, 5 not found (profile or tag list), 6 invalid (schema, bad tag).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

EX_USAGE, EX_NOT_FOUND, EX_INVALID = 2, 5, 6
TAG_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*/[A-Za-z0-9][A-Za-z0-9._+-]*")
PROFILE_RE = re.compile(r"[a-z0-9][a-z0-9_-]*")
SCHEMA = Path(__file__).resolve().parent / "schema" / "tags.schema.json"
RUNNER_TAGS = ["apptainer", "cvmfs"]
OUT = "out/images"


class CfgError(Exception):
    def __init__(self, code: int, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.hint = hint


def load_yaml(path: Path) -> Any:
    try:
        with path.open(encoding="utf-8") as fh:
            return yaml.safe_load(fh)
    except FileNotFoundError as err:
        raise CfgError(EX_NOT_FOUND, f"{path}: no such file") from err
    except yaml.YAMLError as err:
        raise CfgError(EX_INVALID, f"{path}: not valid YAML: {err}") from err


def schema_errors(data: Any, schema: dict[str, Any], where: Path) -> list[str]:
    import jsonschema  # only the 'check' and 'tags' paths need it

    validator = jsonschema.Draft202012Validator(schema)
    out = []
    for err in sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path)):
        loc = "/".join(str(p) for p in err.absolute_path) or "(top level)"
        out.append(f"{where}: {loc}: {err.message}")
    return out


def parse_override(text: str) -> list[str]:
    """AFKIT_TAGS: tags separated by blanks, commas or newlines."""
    return [t for t in re.split(r"[\s,]+", text) if t]


def check_tags(tags: list[str], where: str) -> list[str]:
    errors = []
    for tag in tags:
        if not TAG_RE.fullmatch(tag):
            errors.append(f"{where}: bad tag '{tag}' (a tag is Package/version, e.g. AliPhysics/vAN-20201018_ROOT6-1)")
    seen: set[str] = set()
    for tag in tags:
        if tag in seen:
            errors.append(f"{where}: tag '{tag}' is listed twice")
        seen.add(tag)
    return errors


def tag_list(images: Path, profile: str, override: str | None) -> list[str]:
    if not PROFILE_RE.fullmatch(profile):
        raise CfgError(EX_USAGE, f"bad profile name '{profile}'", "a profile is a directory under images/")
    if override is not None and override.strip():
        tags = parse_override(override)
        errors = check_tags(tags, "AFKIT_TAGS")
        if errors:
            raise CfgError(EX_INVALID, "; ".join(errors))
        return tags
    path = images / profile / "tags.yaml"
    if not path.is_file():
        raise CfgError(
            EX_NOT_FOUND,
            f"no tag list for profile '{profile}' ({path})",
            f"create {path} (see docs/gitlab-ci.md) or set AFKIT_TAGS",
        )
    data = load_yaml(path)
    errors = schema_errors(data, json.loads(SCHEMA.read_text(encoding="utf-8")), path)
    if not errors and data["profile"] != profile:
        errors.append(f"{path}: profile is '{data['profile']}' but the file is in images/{profile}/")
    if errors:
        raise CfgError(EX_INVALID, "\n".join(errors))
    return list(data["tags"])


def check_all(images: Path, profile_schema: Path | None) -> list[str]:
    """Schema-check every images/*/profile.yaml and images/*/tags.yaml; return the errors."""
    errors: list[str] = []
    tags_schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    pschema = json.loads(profile_schema.read_text(encoding="utf-8")) if profile_schema else None
    for prof_dir in sorted(p for p in images.iterdir() if p.is_dir()):
        prof_file, tags_file = prof_dir / "profile.yaml", prof_dir / "tags.yaml"
        profile: Any = None
        if prof_file.is_file():
            try:
                profile = load_yaml(prof_file)
            except CfgError as err:
                errors.append(str(err))
            else:
                if pschema is not None:
                    errors += schema_errors(profile, pschema, prof_file)
                if isinstance(profile, dict) and profile.get("name") != prof_dir.name:
                    errors.append(f"{prof_file}: name is '{profile.get('name')}', expected '{prof_dir.name}'")
        if not tags_file.is_file():
            continue
        if not prof_file.is_file():
            errors.append(f"{tags_file}: there is no {prof_file} for these tags")
        try:
            tags = load_yaml(tags_file)
        except CfgError as err:
            errors.append(str(err))
            continue
        tag_errors = schema_errors(tags, tags_schema, tags_file)
        errors += tag_errors
        if tag_errors:
            continue
        if tags["profile"] != prof_dir.name:
            errors.append(f"{tags_file}: profile is '{tags['profile']}', expected '{prof_dir.name}'")
        pattern = profile.get("tag", {}).get("pattern") if isinstance(profile, dict) else None
        if isinstance(pattern, str):
            for tag in tags["tags"]:
                if not re.fullmatch(pattern, tag):
                    errors.append(f"{tags_file}: tag '{tag}' does not match the profile's pattern {pattern}")
    return errors


def job_suffix(profile: str, tag: str) -> str:
    return f"{profile}:{tag.replace('/', ':')}"


def image_name(profile: str, tag: str) -> str:
    package, version = tag.split("/", 1)
    return f"{profile}-{package.lower()}-{version}"


def child_pipeline(profile: str, tags: list[str]) -> dict[str, Any]:
    """The build -> validate -> publish jobs, one chain per tag (independent of each other)."""
    doc: dict[str, Any] = {
        "stages": ["build", "validate", "publish"],
        "variables": {"AFKIT_PROFILE": profile},
        "default": {"tags": list(RUNNER_TAGS)},
    }
    for tag in tags:
        sfx, name = job_suffix(profile, tag), image_name(profile, tag)
        out = f"{OUT}/{name}"
        variables = {"AFKIT_TAG": tag, "AFKIT_IMAGE_NAME": name, "AFKIT_IMAGE_DIR": out}
        doc[f"build:{sfx}"] = {
            "stage": "build",
            "variables": dict(variables),
            "script": ['ci/build.sh --profile "$AFKIT_PROFILE" --tag "$AFKIT_TAG" --output "$AFKIT_IMAGE_DIR"'],
            "artifacts": {
                "name": name,
                "paths": [f"{out}/{name}.sif", f"{out}/{name}.json"],
                "expire_in": "1 week",
            },
        }
        doc[f"validate:{sfx}"] = {
            "stage": "validate",
            "needs": [{"job": f"build:{sfx}", "artifacts": True}],
            "variables": dict(variables),
            "script": ['ci/validate.sh --profile "$AFKIT_PROFILE" "$AFKIT_IMAGE_DIR/$AFKIT_IMAGE_NAME.sif"'],
            "artifacts": {
                "when": "always",
                "paths": [f"{out}/{name}.junit.xml", f"{out}/{name}.validated"],
                "reports": {"junit": f"{out}/{name}.junit.xml"},
                "expire_in": "1 week",
            },
        }
        doc[f"publish:{sfx}"] = {
            "stage": "publish",
            "needs": [
                {"job": f"build:{sfx}", "artifacts": True},
                {"job": f"validate:{sfx}", "artifacts": True},
            ],
            "variables": dict(variables),
            "rules": [
                {"if": '$AFKIT_PUBLISH == "never"', "when": "never"},
                {"if": "$CI_COMMIT_TAG"},
                {"if": "$CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH"},
                {"if": '$AFKIT_PUBLISH == "always"'},
            ],
            "resource_group": f"publish:{sfx}",
            "script": [
                'ci/publish.sh --profile "$AFKIT_PROFILE" --tag "$AFKIT_TAG"'
                ' "$AFKIT_IMAGE_DIR/$AFKIT_IMAGE_NAME.sif"'
            ],
        }
    return doc


def write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="cicfg.py", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("tags", help="print a profile's CI tags, one per line")
    c = sub.add_parser("check", help="schema-check images/*/profile.yaml and images/*/tags.yaml")
    g = sub.add_parser("child", help="write the child pipeline (build/validate/publish per tag)")
    for p in (t, c, g):
        p.add_argument("--images", type=Path, required=True, help="the images/ directory")
    for p in (t, g):
        p.add_argument("--profile", required=True)
        p.add_argument("--override", help="AFKIT_TAGS: tags separated by blanks or commas")
    c.add_argument("--profile-schema", type=Path, help="JSON schema of profile.yaml")
    g.add_argument("--output", type=Path, required=True)
    args = parser.parse_args(argv)
    try:
        if args.cmd == "tags":
            print("\n".join(tag_list(args.images, args.profile, args.override)))
        elif args.cmd == "check":
            errors = check_all(args.images, args.profile_schema)
            if errors:
                raise CfgError(EX_INVALID, "\n".join(errors), "fix the files named above")
        else:
            tags = tag_list(args.images, args.profile, args.override)
            header = (
                "# Generated by ci/generate.sh: do not edit. One build -> validate -> publish chain per tag.\n"
            )
            body = yaml.safe_dump(child_pipeline(args.profile, tags), sort_keys=False, width=200)
            write_atomic(args.output, header + body)
            print("\n".join(tags))
    except CfgError as err:
        print(f"cicfg: error: {err}", file=sys.stderr)
        if err.hint:
            print(f"cicfg: hint: {err.hint}", file=sys.stderr)
        return err.code
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
