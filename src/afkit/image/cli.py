"""``afkit image``: build, validate and list tags of images made from CVMFS software tags."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from afkit.cli import usage_handler

# Registering needs only the option choices; the engine is imported when a command runs, so
# that afkit starts fast for every other command.
COMPRESSIONS = ("gzip", "zstd", "lz4", "xz")

EPILOG = """exit codes: 0 ok, 1 build failed, 2 usage, 3 prerequisite missing (CVMFS mount, apptainer,
privilege, free space), 4 refused (unsafe or foreign working directory), 5 unknown tag/profile,
6 validation failed, 130 interrupted. Docs: docs/image-builder.md"""


def register(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "image", help="build and validate Apptainer images from CVMFS software tags", epilog=EPILOG
    )
    parser.set_defaults(func=usage_handler(parser))
    isub = parser.add_subparsers(dest="image_command", metavar="SUBCOMMAND")

    b = isub.add_parser(
        "build",
        help="build DIR/NAME.sif (+ NAME.json) from a tag",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    b.add_argument("--profile", required=True, help="profile name (images/<profile>/profile.yaml)")
    b.add_argument("-t", "--tag", required=True, help="e.g. AliPhysics/vAN-20201018_ROOT6-1")
    b.add_argument("-o", "--output", required=True, type=Path, help="working/output directory")
    b.add_argument("-y", "--yes", action="store_true", help="clean an earlier build in DIR without asking")
    b.add_argument(
        "--base",
        help="docker://IMG, localimage:PATH or debootstrap:SUITE (default: "
        "$AFKIT_BASE_IMAGE, else the profile's for the architecture)",
    )
    b.add_argument("--compression", choices=COMPRESSIONS, help="squashfs compression")
    b.add_argument("--plan", action="store_true", help="print the closure and write NAME.spec; no build")
    b.add_argument("--no-validate", action="store_true", help="skip the validation after the build")
    b.add_argument("--name", help="image name (default: from the tag)")
    b.add_argument(
        "--layers",
        action="store_true",
        help="put each big package in its own squashfs overlay partition of the SIF, kept in DIR's "
        "store: the next build (e.g. the adjacent daily) recompresses only the packages that changed",
    )
    b.add_argument(
        "--narrow",
        action="store_true",
        help="also build NAME.narrow.sif with only the files that the profile's proof commands and "
        "the --narrow-command commands open (traced with strace in the full image), and check that "
        "they give the same output and exit code in it",
    )
    b.add_argument(
        "--narrow-command",
        action="append",
        default=[],
        metavar="CMD",
        help="a command line (run with bash -c in the image, in the current directory) whose files "
        "the narrowed image must hold, e.g. 'root -b -q ana.C'; repeatable; implies --narrow",
    )
    b.set_defaults(func=_build)

    v = isub.add_parser("validate", help="check an image (exit 6 on any failure)", epilog=EPILOG)
    v.add_argument("image", type=Path)
    v.add_argument("--profile", help="default: the profile recorded in the image")
    v.add_argument("--junit", type=Path, help="write a JUnit XML report here")
    v.add_argument(
        "--read",
        action="append",
        default=[],
        metavar="URL",
        help="also run every proof that reads a file ({file} in its command: the ROOT macro and the "
        "compiled reader) on URL, e.g. root://host//path/HZZ.root (repeatable; the file must be "
        "like the image's /.afkit/proof/HZZ.root)",
    )
    v.set_defaults(func=_validate)

    n = isub.add_parser(
        "name",
        help="print a tag's image name, or its registry reference or publish resource group",
        description="Print the name of TAG's image (the builder's default NAME.sif, the CI artifacts' "
        "name), or with --ref its OCI reference, or with --resource-group the GitLab resource_group "
        "of its publish job. No CVMFS needed: only the tag's syntax is checked.",
        epilog="exit codes: 0 ok, 2 bad tag (or a reference for a multi-item tag), 5 unknown profile. "
        "Docs: docs/image-builder.md",
    )
    n.add_argument("tag", metavar="TAG", help="e.g. AliPhysics/vAN-20201018_ROOT6-1 or LCG_105")
    n.add_argument(
        "--profile",
        default=os.environ.get("AFKIT_PROFILE") or "alice",
        help="profile name (default: $AFKIT_PROFILE, else alice)",
    )
    what = n.add_mutually_exclusive_group()
    what.add_argument(
        "--ref",
        metavar="REGISTRY_IMAGE",
        help="print oras://REGISTRY_IMAGE/PROFILE/package:version instead (e.g. registry.example.org/g/p)",
    )
    what.add_argument("--resource-group", action="store_true", help="print the publish job's resource_group")
    n.set_defaults(func=_name)

    s = isub.add_parser(
        "sign",
        help="sign IMAGE.sif in place with a PGP private key (apptainer sign); print the fingerprint",
        epilog=EPILOG,
    )
    s.add_argument("image", type=Path)
    s.add_argument(
        "--key",
        default=os.environ.get("AFKIT_SIGNING_KEY"),
        help="armored private key file (default $AFKIT_SIGNING_KEY); its passphrase is read from "
        "$AFKIT_SIGNING_PASSPHRASE (never an option), empty when unset",
    )
    s.add_argument("--export-public", type=Path, help="also write the signer's armored public key here")
    s.set_defaults(func=_sign)

    vf = isub.add_parser(
        "verify",
        help="check IMAGE.sif is signed by FINGERPRINT (exit 6: unsigned, modified, other signer)",
        epilog=EPILOG,
    )
    vf.add_argument("image", type=Path)
    vf.add_argument(
        "--fingerprint",
        default=os.environ.get("AFKIT_SIGNING_FINGERPRINT"),
        help="the expected signer's fingerprint, 40 hex digits (default $AFKIT_SIGNING_FINGERPRINT)",
    )
    vf.add_argument(
        "--key",
        help="armored public key file to verify with (default: the keyring, $APPTAINER_KEYSDIR or "
        "~/.apptainer/keys)",
    )
    vf.set_defaults(func=_verify)

    t = isub.add_parser("tags", help="list the tags of a profile's repository", epilog=EPILOG)
    t.add_argument("--profile", required=True)
    t.add_argument("pattern", nargs="?", help="only tags containing this text")
    t.set_defaults(func=_tags)


def _build(args: argparse.Namespace) -> int:
    from afkit.image.build import build

    path = build(
        profile_name=args.profile,
        tag_text=args.tag,
        output=args.output,
        yes=args.yes,
        base_spec=args.base,
        compression=args.compression,
        plan_only=args.plan,
        no_validate=args.no_validate,
        name=args.name,
        layered=args.layers,
        narrow_commands=args.narrow_command if args.narrow or args.narrow_command else None,
    )
    if not args.plan:
        print(path)
    return 0


def _validate(args: argparse.Namespace) -> int:
    from afkit.image import validate

    checks = validate.validate(args.image, args.profile, args.junit, reads=args.read)
    print(f"{args.image}: {len(checks)} checks passed", file=sys.stderr)
    return 0


def _name(args: argparse.Namespace) -> int:
    from afkit.image import profile as profiles
    from afkit.image import tags

    tag = tags.parse(args.tag, profiles.load(args.profile))
    if args.ref:
        print(tag.oci_ref(args.ref, args.profile))
    elif args.resource_group:
        print(tag.resource_group(args.profile))
    else:
        print(tag.slug)
    return 0


def _sign(args: argparse.Namespace) -> int:
    from afkit.errors import NotFoundError, UsageError
    from afkit.image import apptainer

    if not args.key:
        raise UsageError("no signing key", hint="pass --key FILE or set AFKIT_SIGNING_KEY")
    if not args.image.is_file():
        raise NotFoundError(f"no such image: {args.image}")
    fingerprint = apptainer.sign(
        args.image,
        args.key,
        passphrase=os.environ.get("AFKIT_SIGNING_PASSPHRASE", ""),
        export_public=args.export_public,
    )
    print(f"{args.image}: signed by {fingerprint}", file=sys.stderr)
    print(fingerprint)
    return 0


def _verify(args: argparse.Namespace) -> int:
    from afkit.errors import NotFoundError, UsageError
    from afkit.image import apptainer

    if not args.fingerprint:
        raise UsageError("no fingerprint", hint="pass --fingerprint FP or set AFKIT_SIGNING_FINGERPRINT")
    if not args.image.is_file():
        raise NotFoundError(f"no such image: {args.image}")
    fingerprint = apptainer.verify(args.image, args.fingerprint, public_key=args.key)
    print(f"{args.image}: signature by {fingerprint} verified", file=sys.stderr)
    print(fingerprint)
    return 0


def _tags(args: argparse.Namespace) -> int:
    from afkit.errors import NotFoundError
    from afkit.image import profile as profiles
    from afkit.image import resolve

    profile = profiles.load(args.profile)
    src = profiles.repo_root(profile)
    rows = [
        f"{tag}\t{arch}"
        for arch, found in resolve.list_tags(profile, src).items()
        for tag in found
        if not args.pattern or args.pattern in tag
    ]
    if not rows:  # docs/gitlab-ci.md checks that a tag exists with this command
        what = f"no tag containing '{args.pattern}'" if args.pattern else "no tags"
        raise NotFoundError(
            f"{what} in {profile.repository} ({src})",
            hint=f"list them all with: afkit image tags --profile {profile.name}",
        )
    print("\n".join(rows))
    return 0
