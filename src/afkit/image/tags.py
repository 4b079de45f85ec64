"""Tag syntax: parse what users type (alienv forms included) and refuse anything unsafe."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from afkit.errors import UsageError
from afkit.image.profile import Profile

# Characters a tag may contain at all, whatever the profile; checked before anything else.
_SAFE = re.compile(r"[A-Za-z0-9._+,:@/-]+")


@dataclass(frozen=True)
class Tag:
    """A parsed tag: the text the user gave and its items (``Pkg/ver`` or ``LCG_105``)."""

    text: str
    items: tuple[str, ...]

    @property
    def slug(self) -> str:
        """A file-name-safe default image name: ``AliPhysics/vAN-1`` -> ``AliPhysics_vAN-1``."""
        return "+".join(item.replace("/", "_") for item in self.items)


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
        item = _strip_vo(raw, profile)
        if not re.fullmatch(profile.tag_pattern, item):
            raise UsageError(
                f"tag item {raw!r} does not look like a '{profile.name}' tag",
                hint=f"expected something like {profile.tag_example}",
            )
        items.append(item)
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
