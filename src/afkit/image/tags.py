"""Tags and the image identity made from them, defined once for the builder, the CLI and CI.

Parse what users type (alienv forms included) and refuse anything unsafe; from a parsed tag, the
image's name (``AliPhysics_vAN-1``: the builder's default SIF name and the CI artifacts' name), its
OCI reference in a registry (``oras://REGISTRY/alice/aliphysics:vAN-1``) and the GitLab
``resource_group`` key that serializes the publish jobs of that reference. ``afkit image name``
prints them; ``ci/`` calls it (and ``ci/cicfg.py`` imports this module) instead of keeping copies.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from afkit.errors import UsageError
from afkit.image.profile import Profile

# Characters a tag may contain at all, whatever the profile; checked before anything else.
_SAFE = re.compile(r"[A-Za-z0-9._+,:@/-]+")
# One tag item in its canonical form: Package/version (alice) or one word (LCG_105). A profile's
# tag.pattern narrows it further; CI tag lists (images/*/tags.yaml, AFKIT_TAGS) hold such items.
ITEM = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*(?:/[A-Za-z0-9][A-Za-z0-9._+-]*)?")
ITEM_HINT = "a tag is Package/version (AliPhysics/vAN-20201018_ROOT6-1) or one word (LCG_105)"
# OCI distribution spec: a tag is at most 128 characters of [A-Za-z0-9_.-], starting with [A-Za-z0-9_].
OCI_TAG_MAX = 128
# GitLab keeps resource_group keys of at most 255 characters (app/models/ci/resource_group.rb).
RESOURCE_GROUP_MAX = 255


@dataclass(frozen=True)
class Tag:
    """A parsed tag: the text the user gave and its items (``Pkg/ver`` or ``LCG_105``)."""

    text: str
    items: tuple[str, ...]

    @property
    def slug(self) -> str:
        """The image's name, a plain file name: ``AliPhysics/vAN-1`` -> ``AliPhysics_vAN-1``.

        The builder's default ``NAME.sif``/``NAME.json`` and the CI artifacts use it."""
        return "+".join(item.replace("/", "_") for item in self.items)

    def package_version(self, profile_name: str) -> tuple[str, str]:
        """(package, version) of a one-item tag as OCI names them: the package lower-cased, '+'
        as '_' in both; a one-word tag (``LCG_105``) is version ``LCG_105`` of package PROFILE."""
        if len(self.items) != 1:
            raise UsageError(
                f"tag {self.text!r} names {len(self.items)} items; a registry reference names one",
                hint="publish each item's image on its own",
            )
        package, sep, version = self.items[0].partition("/")
        if not sep:
            package, version = profile_name, package
        version = version.replace("+", "_")
        if len(version) > OCI_TAG_MAX:
            raise UsageError(f"version {version!r} is longer than an OCI tag may be ({OCI_TAG_MAX})")
        return package.lower().replace("+", "_"), version

    def oci_ref(self, registry_image: str, profile_name: str) -> str:
        """``oras://REGISTRY_IMAGE/PROFILE/package:version`` (OCI repository names are lower case)."""
        package, version = self.package_version(profile_name)
        base = registry_image.removeprefix("oras://").rstrip("/").lower()
        return f"oras://{base}/{profile_name}/{package}:{version}"

    def resource_group(self, profile_name: str) -> str:
        """The GitLab ``resource_group`` of the publish job: ``publish/PROFILE/package/version``.

        One key per registry reference (tags that publish to the same reference share it), made of
        characters GitLab accepts in a key (letters, digits, ``-_/.``; no ``:``, which GitLab refuses
        silently: the jobs would then not be serialized)."""
        package, version = self.package_version(profile_name)
        key = f"publish/{profile_name}/{package}/{version}"
        if len(key) > RESOURCE_GROUP_MAX:
            raise UsageError(f"resource group {key!r} is longer than GitLab allows ({RESOURCE_GROUP_MAX})")
        return key


def item(text: str) -> Tag:
    """TEXT as one canonical item (the form of CI tag lists), whatever the profile; exit 2 if not."""
    if not ITEM.fullmatch(text):
        raise UsageError(f"bad tag {text!r}", hint=ITEM_HINT)
    return Tag(text=text, items=(text,))


def parse(text: str, profile: Profile) -> Tag:
    """Parse TEXT for PROFILE or raise UsageError (exit 2) saying what is wrong."""
    if not text:
        raise UsageError("empty tag", hint=f"give one, e.g. -t {profile.tag_example}")
    if not _SAFE.fullmatch(text):
        bad = sorted({c for c in text if not _SAFE.fullmatch(c)})
        shown = " ".join(repr(c) for c in bad)
        raise UsageError(
            f"tag {text!r} contains characters that are not allowed: {shown}",
            hint=f"a tag looks like {profile.tag_example}",
        )
    if text.startswith("/") or ".." in text or "//" in text:
        raise UsageError(
            f"tag {text!r} looks like a path ('..', '//' or a leading '/')",
            hint=f"give the tag, not a path: e.g. {profile.tag_example}",
        )
    raw_items = text.split(",")
    if len(raw_items) > 1 and not profile.multiple:
        raise UsageError(f"profile '{profile.name}' takes one tag, got {len(raw_items)}: {text!r}")
    items = []
    for raw in raw_items:
        canon = _strip_vo(raw, profile)
        if not re.fullmatch(profile.tag_pattern, canon):
            raise UsageError(
                f"tag item {raw!r} does not look like a '{profile.name}' tag",
                hint=f"expected something like {profile.tag_example}",
            )
        if not ITEM.fullmatch(canon):  # a profile's pattern may be wider than the grammar
            raise UsageError(f"tag item {raw!r} is not Package/version or one word", hint=ITEM_HINT)
        items.append(canon)
    if len(set(items)) != len(items):
        raise UsageError(f"tag {text!r} names the same item twice")
    return Tag(text=text, items=tuple(items))


def _strip_vo(raw: str, profile: Profile) -> str:
    """``VO_ALICE@AliPhysics::vAN-1`` -> ``AliPhysics/vAN-1`` (alienv's grid form)."""
    if profile.vo_prefix and raw.startswith(profile.vo_prefix):
        rest = raw[len(profile.vo_prefix) :]
        if "::" not in rest:
            raise UsageError(
                f"tag {raw!r}: the {profile.vo_prefix} form needs Package::version",
                hint=f"e.g. {profile.vo_prefix}{profile.tag_example.replace('/', '::')}",
            )
        name, _, version = rest.partition("::")
        return f"{name}/{version}"
    if "::" in raw:
        name, _, version = raw.partition("::")
        return f"{name}/{version}"
    return raw


def nearest(wanted: str, candidates: list[str], n: int = 5) -> list[str]:
    """The candidates closest to WANTED (difflib), best first."""
    return difflib.get_close_matches(wanted, candidates, n=n, cutoff=0.4)
