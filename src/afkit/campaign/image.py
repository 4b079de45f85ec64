"""The campaign image: a SIF path, an ``oras://`` reference, or a tag built with ``afkit image build``.

Writes ``image.json`` with the image's absolute path, sha256, tag and signer fingerprint: the
provenance every job record carries (results from different images are never mixed silently).
With ``image.fingerprint`` the image must carry a valid signature by that key before any job runs
(``apptainer verify``, afkit.image.apptainer.verify); a refusal is also written to
``<results>/image/refused.json`` so that ``afkit campaign run`` can exit 6 with its message.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, NotRequired, Protocol, TypedDict

from afkit.atomic import atomic_path, write_atomic
from afkit.errors import AfkitError, ExitCode, InvalidError, NotFoundError, PrereqError, one_line
from afkit.image import apptainer
from afkit.image.store import sha256_file
from afkit.image.workdir import MARKER
from afkit.paths import beside

if TYPE_CHECKING:  # the job core (a batch worker's python3, standard library only) imports this module
    from afkit.campaign.config import ImageBuild, ImageConfig
    from afkit.campaign.contract import ImageInfo


def build_base(build: ImageBuild, base_dir: str) -> str | None:
    """The ``--base`` of the build: the campaign's (a relative ``localimage:`` path is relative to
    the campaign file), else ``$AFKIT_BASE_IMAGE``, else None (the profile's default)."""
    base = build.get("base") or os.environ.get("AFKIT_BASE_IMAGE") or None
    if base and base.startswith("localimage:") and build.get("base"):
        path = Path(base.removeprefix("localimage:"))
        if not path.is_absolute():
            base = f"localimage:{beside(base_dir, path).resolve()}"
    return base


def build_command(build: ImageBuild, outdir: Path, base: str | None) -> list[str]:
    """The ``afkit image build`` command line equivalent to the rule's build (the log's first line:
    what to run by hand to see the builder's message)."""
    cmd = [sys.executable, "-m", "afkit", "image", "build", "--profile", build["profile"],
           "--tag", build["tag"], "--output", str(outdir.resolve())]  # fmt: skip
    if base:
        cmd += ["--base", base]
    if build.get("compression"):
        cmd += ["--compression", build["compression"]]
    return [*cmd, "-y"]


class BuildArgs(TypedDict):
    """The builder's arguments (afkit.image.build.build)."""

    profile_name: str
    tag_text: str
    output: Path
    yes: bool
    base_spec: str | None
    compression: NotRequired[str]  # image.build.compression (the builder's default when absent)


# The builder the rule calls (afkit.image.build.build when None); a test puts a stand-in here.
Builder = Callable[..., Path]
BUILDER: Builder | None = None


def _build_in_child(builder: Builder | None, kwargs: BuildArgs, log: str, result: Connection) -> None:
    """In the child process: the builder's stdout and stderr (and its programs') go to LOG; the
    SIF path goes back through RESULT; the exit code is the one ``afkit image build`` would have."""
    from afkit.cli import guarded

    fd = os.open(log, os.O_WRONLY | os.O_APPEND)
    for std in (1, 2):
        os.dup2(fd, std)
    os.close(fd)

    def call() -> int:
        from afkit.image.build import build

        sif = (builder or build)(**kwargs)
        print(sif, flush=True)
        result.send(str(sif))
        return 0

    code = guarded(call)
    sys.stdout.flush()
    sys.stderr.flush()
    sys.exit(code)


def run_builder(kwargs: BuildArgs, log: Path) -> tuple[int, Path | None]:
    """Call the builder with KWARGS in a child process (its own main thread: the builder's signal
    handling works; Ctrl-C reaches it with snakemake's process group; its output goes only to LOG,
    which must exist); (exit code, the SIF path it returned)."""
    ctx = multiprocessing.get_context("spawn")
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_build_in_child, args=(BUILDER, kwargs, str(log), send))
    child.start()
    send.close()
    child.join()
    try:
        sif: Path | None = Path(receive.recv())
    except EOFError:  # it ended without a result
        sif = None
    receive.close()
    return (child.exitcode if child.exitcode is not None else 1), sif


def _from_build(build: ImageBuild, place: Place) -> ImageDescription:
    """The builder (``afkit image build ... --output WORKDIR -y``, as a function): WORKDIR
    (``<results>/image``) is its working directory, so its store is reused by a rebuild. The builder
    cleans WORKDIR, so its output goes to a temporary log beside WORKDIR, moved to LOG afterwards."""
    workdir, log = place.workdir, place.log
    base = build_base(build, str(place.base_dir))
    cmd = build_command(build, workdir, base)
    kwargs = BuildArgs(profile_name=build["profile"], tag_text=build["tag"], output=workdir.resolve(),
                       yes=True, base_spec=base)  # fmt: skip
    if build.get("compression"):
        kwargs["compression"] = build["compression"]
    if not (workdir / MARKER).is_file():
        # a build that failed before adopting WORKDIR left only this rule's files: the builder
        # refuses a non-empty directory it did not create
        for name in (log.name, "image.json"):
            (workdir / name).unlink(missing_ok=True)
    with atomic_path(log, mode=0o644, tmp_dir=workdir.parent) as tmp_log:
        tmp_log.write_text("$ " + " ".join(cmd) + "\n", encoding="utf-8")
        code, sif = run_builder(kwargs, tmp_log)
        workdir.mkdir(parents=True, exist_ok=True)  # the builder may have failed before making it
    if code != 0:
        raise AfkitError(
            f"afkit image build --profile {build['profile']} --tag {build['tag']} failed "
            f"(exit {code}); see {log}",
            hint="run the same command by hand (first line of the log) to see the builder's message",
        )
    sif = sif or workdir / "missing.sif"
    manifest_path = sif.with_suffix(".json")
    if not sif.is_file() or not manifest_path.is_file():
        raise NotFoundError(
            f"afkit image build left no SIF and manifest in {workdir} (it named {sif})", hint=f"see {log}"
        )
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    sha = manifest.get("sif_sha256")
    if not sha:
        raise InvalidError(f"{manifest_path}: the builder's manifest has no sif_sha256", hint=f"see {log}")
    return ImageDescription(
        path=str(sif.resolve()),
        sha256=str(sha),
        tag=str(manifest.get("tag", build["tag"])),
        source="build",
        profile=str(manifest.get("profile", build["profile"])),
        base=str(manifest.get("base", base or "")),
        manifest=str(manifest_path.resolve()),
    )


INSECURE_ENV = "AFKIT_REGISTRY_INSECURE"


def oras_pull_command(ref: str, dest: Path, env: Mapping[str, str] | None = None,
                      login: Path | None = None) -> list[str]:  # fmt: skip
    """``apptainer pull [--no-https] [--authfile LOGIN] DEST REF``. Plain HTTP only when
    ``$AFKIT_REGISTRY_INSECURE=1`` in ENV (default: this process's environment; a test registry,
    never the default; Apptainer itself already falls back to HTTP for a registry on localhost /
    127.0.0.1). LOGIN: the campaign's ``image.login``, else apptainer's own login of the user."""
    env = os.environ if env is None else env
    return apptainer.pull_command(ref, dest, insecure=env.get(INSECURE_ENV, "") == "1", authfile=login)


def _login(image: ImageConfig, place: Place) -> Path | None:
    """The campaign's registry login (``image.login``, beside the campaign file), or None."""
    return beside(place.base_dir, image["login"]) if image.get("login") else None


def _from_oras(ref: str, workdir: Path, log: Path, login: Path | None = None) -> ImageDescription:
    """Pull REF once into WORKDIR/image.sif (through a partial file, removed on failure)."""
    if apptainer.command_name() is None:
        raise PrereqError("apptainer not found on PATH (needed to pull the campaign image)")
    sif = workdir / "image.sif"
    if not sif.exists():
        tmp = workdir / ".image.sif.part"  # apptainer pull makes it (refusing an existing file)
        tmp.unlink(missing_ok=True)
        cmd = oras_pull_command(ref, tmp, login=login)
        with log.open("a", encoding="utf-8") as fh:
            fh.write("$ " + " ".join(cmd) + "\n")
            fh.flush()
            proc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, check=False)
        if proc.returncode != 0 or not tmp.is_file():
            tmp.unlink(missing_ok=True)
            said = log.read_text(encoding="utf-8", errors="replace")
            why = one_line(said, marks=apptainer.ERROR_MARKS, otherwise="") or f"exit {proc.returncode}"
            raise NotFoundError(
                f"image.sif: cannot pull {ref}: {why} (see {log})",
                hint="check the reference (oras://HOST[:PORT]/PATH:TAG), the registry and your "
                "'apptainer registry login' (or the campaign's image.login); for a plain-HTTP test "
                f"registry set {INSECURE_ENV}=1",
            )
        tmp.replace(sif)
    return ImageDescription(path=str(sif.resolve()), sha256=sha256_file(sif), tag="", source=ref)


# The SIF global header (apptainer/sif, pkg/sif/sif.go: hdrLaunchLen, hdrMagic; pkg/sif/load.go
# refuses a file whose 10 bytes after the launch script are not the magic: "invalid SIF magic").
SIF_LAUNCH_LEN = 32  # the launch script ("#!/usr/bin/env run-singularity\n"), NUL-padded
SIF_MAGIC = b"SIF_MAGIC\x00"


def check_sif(sif: Path) -> None:
    """SIF (the campaign's ``image.sif``) exists (else exit 5), is a file this user can read (a
    directory: exit 6; no read permission: exit 3, as for any file afkit cannot read) and starts
    with a SIF header (exit 6). Reads its first 42 bytes: instant whatever the image's size."""
    if not sif.exists():
        raise NotFoundError(
            f"image.sif: no such SIF file: {sif}", hint="build it (scripts/mkbase bench) or fix the path"
        )
    if not sif.is_file():
        raise InvalidError(f"image.sif: {sif} is not a file",
                           hint="give the path of a .sif built by apptainer")  # fmt: skip
    try:
        with sif.open("rb") as fh:
            head = fh.read(SIF_LAUNCH_LEN + len(SIF_MAGIC))
    except PermissionError as err:
        raise PrereqError(
            f"image.sif: cannot read {sif}: permission denied",
            hint="make it readable by the user who runs the campaign and its jobs (chmod a+r)",
        ) from err
    except OSError as err:
        raise AfkitError(f"image.sif: cannot read {sif}: {err.strerror or err}",
                         hint="check the file system the image is on") from err  # fmt: skip
    if head[SIF_LAUNCH_LEN:] != SIF_MAGIC:
        raise InvalidError(
            f"image.sif: {sif} is not a SIF image (no SIF header)", hint="give a .sif built by apptainer"
        )


def _from_sif(image: ImageConfig, base_dir: Path) -> ImageDescription:
    """A SIF file (relative to the campaign file): it must exist, be readable and be a SIF."""
    sif = beside(base_dir, image.get("sif", ""))
    check_sif(sif)
    return ImageDescription(path=str(sif.resolve()), sha256=sha256_file(sif), tag="", source="sif")


class ImageDescription(TypedDict):
    """``RESULTS/image/image.json``: the image every job runs (afkit.campaign.contract.ImageInfo
    reads it on the worker)."""

    path: str
    sha256: str
    tag: str
    source: str
    fingerprint: NotRequired[str]
    python: NotRequired[str]
    profile: NotRequired[str]  # built from a tag: the builder's manifest
    base: NotRequired[str]
    manifest: NotRequired[str]


@dataclass(frozen=True)
class Place:
    """Where the image rule works: the campaign file's directory (relative paths), the rule's
    directory ``<results>/image`` and its log."""

    base_dir: Path
    workdir: Path
    log: Path


class ImageSource(Protocol):
    """One way to get the campaign's image: check it before anything runs, make the SIF available
    and return its provenance (``path``, ``sha256``, ``tag``, ``source``, and what else the way knows)."""

    def check(self, image: ImageConfig, place: Place, *, fetch: bool) -> str:
        """Raise what is wrong with the image, before any snakemake call (``afkit campaign
        validate``; ``run`` and ``retry`` with FETCH: also what only getting the image shows, and
        the image got is kept for ``fetch``). A line for the user ('' for none): what was not checked."""
        ...

    def fetch(self, image: ImageConfig, place: Place) -> ImageDescription: ...


class SifFile:
    def check(self, image: ImageConfig, place: Place, *, fetch: bool) -> str:
        check_sif(beside(place.base_dir, image.get("sif", "")))
        return ""

    def fetch(self, image: ImageConfig, place: Place) -> ImageDescription:
        info = _from_sif(image, place.base_dir)  # checked first: a refused image leaves no log
        place.log.write_text("", encoding="utf-8")
        return info


class OrasPull:
    def check(self, image: ImageConfig, place: Place, *, fetch: bool) -> str:
        ref = image["sif"]
        if (place.workdir / "image.sif").is_file():
            return "" if fetch else f"image {ref}: pulled before, {place.workdir / 'image.sif'}"
        if not fetch:
            return (f"image {ref}: a registry reference, not checked from here (afkit campaign run "
                    "pulls it before any job: exit 5 when it cannot)")  # fmt: skip
        place.workdir.mkdir(parents=True, exist_ok=True)
        place.log.write_text("", encoding="utf-8")
        _from_oras(ref, place.workdir, place.log, _login(image, place))  # the rule finds image.sif
        return ""

    def fetch(self, image: ImageConfig, place: Place) -> ImageDescription:
        if not (place.workdir / "image.sif").is_file():  # else the log is the check's pull
            place.log.write_text("", encoding="utf-8")
        return _from_oras(image["sif"], place.workdir, place.log, _login(image, place))


class TagBuild:
    def check(self, image: ImageConfig, place: Place, *, fetch: bool) -> str:
        return ""  # the build is the image rule's (minutes; its own checks)

    def fetch(self, image: ImageConfig, place: Place) -> ImageDescription:
        return _from_build(image["build"], place)  # the log is the builder's (written whole)


SOURCES: dict[str, ImageSource] = {"sif": SifFile(), "oras": OrasPull(), "build": TagBuild()}


def source_of(image: ImageConfig) -> str:
    """The key in SOURCES of a (validated) campaign ``image``: ``build``, ``oras`` or ``sif``."""
    if "build" in image:
        return "build"
    return "oras" if str(image.get("sif", "")).startswith("oras://") else "sif"


REFUSED = "refused.json"


def check_signature(image: ImageConfig, info: ImageDescription, base_dir: str, workdir: Path) -> str:
    """The verified signer fingerprint ('' when the campaign names none). A refusal (InvalidError,
    exit 6) is written to WORKDIR/refused.json first; a pass removes an earlier one."""
    refused = workdir / REFUSED
    if not image.get("fingerprint"):
        refused.unlink(missing_ok=True)
        return ""
    key = image.get("key")
    if key:
        key = str(beside(base_dir, key))
    try:
        fingerprint = apptainer.verify(info["path"], image["fingerprint"], public_key=key)
    except AfkitError as err:
        record_refusal(workdir, err)
        raise
    refused.unlink(missing_ok=True)
    return fingerprint


def record_refusal(workdir: Path, err: AfkitError) -> None:
    """WORKDIR/refused.json: why the image was refused, for ``afkit campaign run``'s exit."""
    record = {"error": str(err), "hint": err.hint or "", "code": int(err.code)}
    write_atomic(workdir / REFUSED, json.dumps(record), mode=0o644)


ROOT_PROBE = "command -v root.exe && root-config --version"


def _manifest_tag(sif: Path) -> str:
    """The tag of a SIF built by `afkit image build`, from its manifest beside it ('' if none)."""
    try:
        return str(json.loads(sif.with_suffix(".json").read_text(encoding="utf-8")).get("tag", ""))
    except (OSError, ValueError, AttributeError):
        return ""


def check_root(info: ImageInfo, benchmarks: list[str], *, output: Path, log: Path) -> None:
    """The image INFO (image.json) must have ROOT for BENCHMARKS (payload: root): ``root.exe``
    on PATH in the image's own environment (a tag's image sets it; ``--cleanenv``, as the jobs
    run). Writes OUTPUT (where ROOT is, its version) or refuses, exit 3 naming the tag, with the
    refusal in refused.json beside OUTPUT."""
    cmd = apptainer.exec_command(info.path, ["/bin/sh", "-c", ROOT_PROBE],
                                 options=["--cleanenv", "--contain", "--no-home", "--pwd", "/"],
                                 global_options=["-q"])  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    log.write_text("$ " + " ".join(cmd) + "\n" + proc.stdout + proc.stderr, encoding="utf-8")
    lines = proc.stdout.split()
    if proc.returncode != 0 or len(lines) < 2:
        tag = info.tag or _manifest_tag(Path(info.path))
        what = f"tag {tag}" if tag else info.path
        err = PrereqError(
            f"the image of {what} has no ROOT (no root.exe on PATH in its environment), but "
            f"benchmark(s) {', '.join(benchmarks)} run the image's own ROOT (payload: root); no job ran",
            hint="build the image from a tag with ROOT (e.g. O2Physics, AliPhysics, an LCG view), "
            "or read with uproot: payload: builtin",
        )
        record_refusal(output.parent, err)
        raise err
    (output.parent / REFUSED).unlink(missing_ok=True)
    write_atomic(output, json.dumps({"root_exe": lines[0], "version": lines[1]}) + "\n", mode=0o644)


def refusal(results_dir: Path) -> AfkitError | None:
    """The image refusal the last run recorded (message, hint, exit code), if any."""
    path = results_dir / "image" / REFUSED
    if not path.is_file():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    return AfkitError(data["error"], hint=data["hint"] or None, code=ExitCode(data["code"]))


def check_image(image: ImageConfig, *, base_dir: Path, results_dir: Path, fetch: bool) -> str:
    """The campaign's image checked once, before any snakemake call (``afkit campaign validate``;
    ``run`` and ``retry`` with FETCH): AfkitError with the documented code, or the line to show
    ('' for none). Where the image rule works: RESULTS_DIR/image."""
    workdir = results_dir / "image"
    place = Place(base_dir, workdir, workdir / "image.log")
    return SOURCES[source_of(image)].check(image, place, fetch=fetch)


def resolve_image(
    image: ImageConfig, *, base_dir: str, workdir: str, output: str, log: str
) -> ImageDescription:
    """The image rule: fetch the image from its source, check its signature, write OUTPUT."""
    place = Place(Path(base_dir), Path(workdir), Path(log))
    place.workdir.mkdir(parents=True, exist_ok=True)
    info = SOURCES[source_of(image)].fetch(image, place)
    info["fingerprint"] = check_signature(image, info, base_dir, place.workdir)
    info["python"] = image.get("python", "auto")
    write_atomic(output, json.dumps(info, indent=1), mode=0o644)
    with place.log.open("a", encoding="utf-8") as fh:
        fh.write(f"image {info['path']} sha256 {info['sha256']}\n")
        if info.get("fingerprint"):
            fh.write(f"signature by {info['fingerprint']} verified\n")
    return info
