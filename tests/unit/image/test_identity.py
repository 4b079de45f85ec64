"""One image identity: the name, OCI reference and publish resource group of a tag, and the
``afkit image name`` command that prints them (docs/image-builder.md's examples, as written)."""

from __future__ import annotations

import pytest

from afkit.cli import main
from afkit.errors import UsageError
from afkit.image import profile, tags

TAG = "AliPhysics/vAN-20201018_ROOT6-1"


@pytest.fixture(scope="module")
def alice() -> profile.Profile:
    return profile.load("alice")


def test_the_name_is_the_builders_default_file_name(alice: profile.Profile) -> None:
    assert tags.parse(TAG, alice).slug == "AliPhysics_vAN-20201018_ROOT6-1"


def test_alienv_form_names_the_same_image(alice: profile.Profile) -> None:
    assert tags.parse("VO_ALICE@AliPhysics::vAN-20201018_ROOT6-1", alice).slug == tags.item(TAG).slug


def test_reference_lowercases_the_repository_and_keeps_the_version() -> None:
    ref = tags.item(TAG).oci_ref("oras://Reg.example:5050/G/P/", "alice")
    assert ref == "oras://reg.example:5050/g/p/alice/aliphysics:vAN-20201018_ROOT6-1"


def test_plus_is_written_as_underscore_in_reference_and_resource_group() -> None:
    tag = tags.item("O2+Physics/v1+b")
    assert tag.oci_ref("reg/x", "alice") == "oras://reg/x/alice/o2_physics:v1_b"
    assert tag.resource_group("alice") == "publish/alice/o2_physics/v1_b"


def test_a_one_word_tag_is_a_version_of_the_profiles_package() -> None:
    assert tags.item("LCG_105").oci_ref("reg/x", "lcg") == "oras://reg/x/lcg/lcg:LCG_105"


def test_a_version_longer_than_an_oci_tag_is_refused() -> None:
    with pytest.raises(UsageError, match="128"):
        tags.item("A/" + "v" * 129).oci_ref("reg/x", "alice")


def test_a_multi_item_tag_has_no_reference(alice: profile.Profile) -> None:
    with pytest.raises(UsageError, match="names 2 items"):
        tags.parse("AliPhysics/v1,O2Physics/v2", alice).oci_ref("reg/x", "alice")


@pytest.mark.parametrize("text", ["A/b/c", "x;y", "", "/A/b", "A/"])
def test_item_refuses_anything_but_package_version_or_a_word(text: str) -> None:
    with pytest.raises(UsageError, match="bad tag"):
        tags.item(text)


@pytest.mark.parametrize(
    ("argv", "printed"),
    [
        ([TAG], "AliPhysics_vAN-20201018_ROOT6-1"),
        (
            ["--ref", "gitlab.example.org:5050/hep/afkit", TAG],
            "oras://gitlab.example.org:5050/hep/afkit/alice/aliphysics:vAN-20201018_ROOT6-1",
        ),
        (["--resource-group", TAG], "publish/alice/aliphysics/vAN-20201018_ROOT6-1"),
        (["--profile", "lcg", "LCG_105"], "LCG_105"),
    ],
)
def test_cli_prints_the_documented_identity(
    argv: list[str], printed: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AFKIT_PROFILE", raising=False)
    assert main(["image", "name", *argv]) == 0
    assert capsys.readouterr().out == printed + "\n"


def test_cli_bad_tag_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["image", "name", "--profile", "alice", "x;y"]) == 2
    assert "not allowed: ';'" in capsys.readouterr().err


def test_cli_unknown_profile_is_not_found(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["image", "name", "--profile", "nope", TAG]) == 5
    assert "no such profile 'nope'" in capsys.readouterr().err
