"""Tag parsing: the forms users type, and refusal of anything path-like or shell-like."""

from __future__ import annotations

import pytest

from afkit.errors import ExitCode, UsageError
from afkit.image import profile, tags


@pytest.fixture(scope="module")
def alice() -> profile.Profile:
    return profile.load("alice")


@pytest.mark.parametrize(
    ("text", "items"),
    [
        ("AliPhysics/vAN-20201018_ROOT6-1", ("AliPhysics/vAN-20201018_ROOT6-1",)),
        ("VO_ALICE@AliPhysics::vAN-20201018_ROOT6-1", ("AliPhysics/vAN-20201018_ROOT6-1",)),
        ("O2Physics/daily-20250401-0000-1", ("O2Physics/daily-20250401-0000-1",)),
        (
            "VO_ALICE@AliPhysics::vAN-20250401_ROOT6-1,O2Physics/daily-20250401-0000-1",
            ("AliPhysics/vAN-20250401_ROOT6-1", "O2Physics/daily-20250401-0000-1"),
        ),
    ],
)
def test_accepted_forms(alice: profile.Profile, text: str, items: tuple[str, ...]) -> None:
    assert tags.parse(text, alice).items == items


@pytest.mark.parametrize(
    "text",
    [
        "",
        "../etc/passwd",
        "/AliPhysics/vAN-1",
        "AliPhysics/../x",
        "AliPhysics/vAN 1",
        "AliPhysics/vAN-1;rm -rf /",
        "AliPhysics/$(id)",
        "AliPhysics/`id`",
        "AliPhysics/v1|x",
        "AliPhysics",
        "AliPhysics/v1,AliPhysics/v1",
        "VO_ALICE@AliPhysics",
    ],
)
def test_refused(alice: profile.Profile, text: str) -> None:
    with pytest.raises(UsageError) as exc:
        tags.parse(text, alice)
    assert exc.value.code == ExitCode.USAGE
    assert exc.value.hint or "twice" in str(exc.value) or "takes one" in str(exc.value)


def test_metacharacters_are_named(alice: profile.Profile) -> None:
    with pytest.raises(UsageError, match=r"';'"):
        tags.parse("AliPhysics/v1;x", alice)


def test_slug_is_a_file_name(alice: profile.Profile) -> None:
    tag = tags.parse("VO_ALICE@AliPhysics::vAN-1,ROOT/v6-1", alice)
    assert tag.slug == "AliPhysics_vAN-1+ROOT_v6-1"
    assert "/" not in tag.slug


def test_lcg_takes_one_tag() -> None:
    lcg = profile.load("lcg")
    assert tags.parse("LCG_105", lcg).items == ("LCG_105",)
    with pytest.raises(UsageError):
        tags.parse("LCG_105,LCG_104", lcg)
    with pytest.raises(UsageError):
        tags.parse("ROOT/v6", lcg)


def test_nearest() -> None:
    cands = ["AliPhysics/vAN-20250401_ROOT6-1", "AliPhysics/vAN-20250402_ROOT6-1", "ROOT/v6-32"]
    assert tags.nearest("AliPhysics/vAN-20250403_ROOT6-1", cands)[0].startswith("AliPhysics/vAN-202504")
