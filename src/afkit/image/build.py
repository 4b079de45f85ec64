"""``afkit image build``: resolve, stage, render, build, validate; nothing half-written."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from types import FrameType
from typing import Any, TypedDict

from afkit import __version__
from afkit.atomic import write_atomic
from afkit.errors import AfkitError, ExitCode, InvalidError, PrereqError, UsageError
from afkit.image import apptainer, layers, narrow, render, stage, tags, validate, workdir
from afkit.image import plan as planning
from afkit.image import profile as profiles
from afkit.image.model import PROOF_PATH, PROOF_SOURCE, ImageInfo, Resolution
from afkit.image.resolve import image_root, resolve
from afkit.image.store import Store, sha256_file

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,200}")
MARGIN = 64 << 20


def check_name(name: str) -> str:
    if not _NAME.fullmatch(name) or ".." in name:
        raise UsageError(f"image name {name!r} is not a plain file name", hint="use letters, digits, . _ + -")
    return name


def closure_digest(res: Resolution, plan: stage.Plan) -> str:
    """Identity of the closure: its paths, sizes and mtimes (content changes on CVMFS change these)."""
    digest = hashlib.sha256()
    for task in sorted(plan.files, key=lambda t: t.rel):
        digest.update(f"f {task.rel} {task.st.st_size} {task.st.st_mtime_ns}\n".encode())
    for rel, target in sorted(plan.links):
        digest.update(f"l {rel} {target}\n".encode())
    digest.update(json.dumps([asdict(e) for e in res.env], sort_keys=True).encode())
    return digest.hexdigest()


def image_info(profile: profiles.Profile, res: Resolution, stats: stage.Stats) -> ImageInfo:
    return {
        "afkit": __version__,
        **res.to_json(),
        "required": list(profile.env_required),
        "proof": [
            {
                "name": p.name,
                "command": list(p.command),
                "optional": p.optional,
                "expect": p.expect,
                "applies_if": p.applies_if,
            }
            for p in profile.proof
        ],
        "elf": stats.elf,
    }


def build(
    *,
    profile_name: str,
    tag_text: str,
    output: Path,
    yes: bool = False,
    base_spec: str | None = None,
    compression: str | None = None,
    plan_only: bool = False,
    no_validate: bool = False,
    name: str | None = None,
    layered: bool = False,
    narrow_commands: list[str] | None = None,
) -> Path:
    """Build the image; returns the SIF path (or the spec path with plan_only). NARROW_COMMANDS
    (not None: --narrow) also builds and checks NAME.narrow.sif from what they open."""
    profile = profiles.load(profile_name)
    tag = tags.parse(tag_text, profile)
    name = check_name(name or tag.slug)
    if compression and compression not in apptainer.COMPRESSIONS:
        raise UsageError(
            f"unknown compression {compression!r}", hint=f"one of {', '.join(apptainer.COMPRESSIONS)}"
        )
    outdir = workdir.check_safe(output)
    if (given := render.given_base(base_spec)) is not None:
        render.parse_base(given)  # a wrong base is said before the tag is resolved
    src = profiles.repo_root(profile)
    res = resolve(profile, tag, src)
    for warning in res.warnings:
        print(f"afkit: warning: {warning}", file=sys.stderr)
    print(f"afkit: {tag.text} resolves on {res.arch} to {len(res.units)} units", file=sys.stderr)
    if plan_only:
        return planning.write_plan(profile, res, src, outdir, name)
    # Ask (or refuse) about an earlier build now, before anything slow; clean only later.
    earlier = workdir.leftovers(outdir) if workdir.is_ours(outdir) else []
    workdir.confirm_clean(outdir, earlier, yes)
    runtime = apptainer.detect()
    base = render.choose_base(profile, res.arch, base_spec)
    check_fakeroot_base(runtime, base)
    outdir = workdir.prepare(outdir, yes=True if earlier else yes)
    store = Store(outdir / workdir.STORE)
    st_plan = stage.walk(src, res.units, image_root(profile))
    new_bytes = stage.bytes_to_copy(st_plan, store)
    local_base = base.bootstrap == "localimage" and base.from_
    base_bytes = planning.unit_bytes(Path(base.from_)) if local_base and base.from_ else 0
    stage.check_space(
        outdir, new_bytes + 2 * st_plan.total_bytes + 2 * base_bytes + MARGIN, "staging and building"
    )
    print(
        f"afkit: staging {len(st_plan.files)} files, {st_plan.total_bytes / stage.MIB:.1f} MiB "
        f"({new_bytes / stage.MIB:.1f} MiB not yet in the store)",
        file=sys.stderr,
    )
    partial = outdir / "rootfs.partial"
    layer_trees = outdir / "layers.partial"
    for old in (partial, layer_trees):
        if old.exists():
            workdir.remove(old)
    dest = partial / "cvmfs" / profile.repository
    chosen: list[layers.Layer] = []
    router = None
    if layered:
        unit_dirs = [u.rel for u in res.units if (src / u.rel).is_dir() and not (src / u.rel).is_symlink()]
        chosen = layers.choose(st_plan, unit_dirs, compression)
        trees = {layer.unit: layer_trees / str(i) for i, layer in enumerate(chosen)}
        reuse = {layer.unit for layer in chosen if layer.path(store.root).is_file()}
        repo_in = Path("cvmfs") / profile.repository
        router = stage.Router(dest, {u: tree / repo_in for u, tree in trees.items()}, reuse)
        print(
            f"afkit: {len(chosen)} packages as squashfs layers, {len(reuse)} of them already built",
            file=sys.stderr,
        )
    stats = stage.execute(st_plan, dest, store, router=router)
    if chosen:
        layers.build_missing(chosen, trees, store.root, compression)
        workdir.remove(layer_trees)
    print(
        f"afkit: staged in {stats.seconds:.1f} s: copied {stats.copied_files} files "
        f"({stats.copied_bytes / stage.MIB:.1f} MiB), reused {stats.reused_files} "
        f"({stats.reused_bytes / stage.MIB:.1f} MiB) from the store",
        file=sys.stderr,
    )
    write_info(partial, image_info(profile, res, stats))
    rootfs = outdir / "rootfs"
    partial.rename(rootfs)
    closure_sha = closure_digest(res, st_plan)
    build_time = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    definition = outdir / f"{name}.def"
    write_atomic(definition, render.render(profile, res, base, rootfs, closure_sha, build_time))
    sif = outdir / f"{name}.sif"
    tmp_sif = outdir / f".{name}.sif.partial"
    run_build(runtime, definition, tmp_sif, outdir, compression)
    if chosen:
        layers.add_to_sif(runtime.binary, tmp_sif, chosen, store.root)
    valid: bool | None = None
    if not no_validate:
        try:
            validate.validate(tmp_sif, profile.name, outdir / f"{name}.validate.xml", runtime)
            valid = True
        except InvalidError as err:
            bad = outdir / f"{name}.invalid.sif"
            tmp_sif.replace(bad)
            raise InvalidError(
                str(err).replace(str(tmp_sif), str(bad)),
                hint=f"the image is kept for inspection at {bad}; {err.hint or ''}".rstrip("; "),
            ) from err
    manifest = {
        "name": name,
        "sif": sif.name,
        "sif_sha256": sha256_file(tmp_sif),
        "sif_bytes": tmp_sif.stat().st_size,
        "profile": profile.name,
        "tag": tag.text,
        "arch": res.arch,
        "base": base.describe(),
        "compression": compression or "default",
        "closure_sha256": closure_sha,
        "closure_bytes": st_plan.total_bytes,
        "closure_files": len(st_plan.files),
        "units": [{**asdict(u), "bytes": planning.unit_bytes(src / u.rel)} for u in res.units],
        "modules": res.modules,
        "env": [asdict(e) for e in res.env],
        "stage": {k: v for k, v in asdict(stats).items() if k != "elf"},
        "elf_files": len(stats.elf),
        "layers": [asdict(layer) for layer in chosen],
        "validated": valid,
        "build_time": build_time,
        "afkit": __version__,
    }
    tmp_sif.replace(sif)
    if narrow_commands is not None:
        manifest["narrow"] = build_narrowed(
            Narrowing(profile, res, base, runtime, store, st_plan, outdir, name, compression),
            sif,
            narrow_commands,
            closure_sha,
        )
    write_atomic(outdir / f"{name}.json", json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return sif


@dataclass(frozen=True)
class Narrowing:
    """What building the narrowed image needs from the full build."""

    profile: profiles.Profile
    res: Resolution
    base: render.Base
    runtime: apptainer.Runtime
    store: Store
    plan: stage.Plan
    outdir: Path
    name: str
    compression: str | None


class NarrowedInfo(TypedDict):
    """``narrow`` in the build manifest NAME.json: the narrowed image beside the full one."""

    sif: str
    sif_bytes: int
    full_sif_bytes: int
    files: int
    bytes: int
    commands: list[str]
    spec: str


def build_narrowed(n: Narrowing, full_sif: Path, user_commands: list[str], closure_sha: str) -> NarrowedInfo:
    """Trace the proofs and USER_COMMANDS in FULL_SIF, build NAME.narrow.sif from the files they
    opened, rerun them there; InvalidError (exit 6) when any result differs."""
    image_root = f"/cvmfs/{n.profile.repository}"
    cwd = str(Path.cwd())
    options = ("--bind", f"{cwd}:{cwd}", "--pwd", cwd)
    commands = [_proof_line(p) for p in n.profile.proof] + list(user_commands)
    full_base = validate.Runner(full_sif, n.runtime).base(*options)
    used: set[str] = set()
    outcomes = []
    with tempfile.TemporaryDirectory(prefix="afkit-narrow.") as tmp:
        for i, command in enumerate(commands):
            trace = Path(tmp) / f"trace.{i}"
            outcomes.append(narrow.run(full_base, command, trace))
            used |= narrow.traced_paths(trace, image_root)
    sub = narrow.narrowed(n.plan, narrow.keep_set(used, n.plan, image_root))
    print(
        f"afkit: narrowing to {len(sub.files)} of {len(n.plan.files)} files "
        f"({sub.total_bytes / stage.MIB:.1f} of {n.plan.total_bytes / stage.MIB:.1f} MiB) opened by "
        f"{len(commands)} commands",
        file=sys.stderr,
    )
    name = f"{n.name}.narrow"
    write_atomic(
        n.outdir / f"{name}.spec", "\n".join(narrow.spec_lines(sub, n.res.tag, n.profile.repository)) + "\n"
    )
    rootfs = n.outdir / "rootfs-narrow"
    partial = n.outdir / "rootfs-narrow.partial"
    for old in (rootfs, partial):
        if old.exists():
            workdir.remove(old)
    stats = stage.execute(sub, partial / "cvmfs" / n.profile.repository, n.store)
    write_info(partial, image_info(n.profile, n.res, stats))
    partial.rename(rootfs)
    definition = n.outdir / f"{name}.def"
    build_time = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    write_atomic(definition, render.render(n.profile, n.res, n.base, rootfs, closure_sha, build_time))
    tmp_sif = n.outdir / f".{name}.sif.partial"
    run_build(n.runtime, definition, tmp_sif, n.outdir, n.compression)
    narrow_base = validate.Runner(tmp_sif, n.runtime).base(*options)
    for full in outcomes:
        again = narrow.run(narrow_base, full.command)
        why = full.differs(again)
        if why:
            missing = narrow.missing_files(narrow_base, full.command, image_root, n.plan)
            bad = n.outdir / f"{name}.invalid.sif"
            tmp_sif.replace(bad)
            lacks = f"; it lacks {', '.join(missing[:5])}" if missing else ""
            raise InvalidError(
                f"the narrowed image gives another result for {full.command!r}: {why}{lacks}",
                hint=f"the command opens other files on another run; add a command that opens them "
                f"(--narrow-command) or use the full image {full_sif}; kept {bad} for inspection",
            )
    sif = n.outdir / f"{name}.sif"
    tmp_sif.replace(sif)
    full_bytes, sub_bytes = full_sif.stat().st_size, sif.stat().st_size
    print(
        f"afkit: narrowed image {sif}: {sub_bytes / stage.MIB:.1f} MiB, full image "
        f"{full_bytes / stage.MIB:.1f} MiB; {len(commands)} commands give the same results",
        file=sys.stderr,
    )
    return {
        "sif": sif.name,
        "sif_bytes": sub_bytes,
        "full_sif_bytes": full_bytes,
        "files": len(sub.files),
        "bytes": sub.total_bytes,
        "commands": commands,
        "spec": f"{name}.spec",
    }


def check_fakeroot_base(runtime: apptainer.Runtime, base: render.Base) -> int:
    """A --fakeroot build copies a sandbox base inside a user namespace that maps only the building
    user and group: a file of another owner cannot be copied (apptainer: 'failed to Lchown ... for
    UID 65534'). PrereqError naming the first such file, before anything is staged. The number of
    the base directory's entries checked (itself included; 0: no fakeroot build from a directory)."""
    if runtime.mode != "fakeroot" or base.bootstrap != "localimage" or not base.from_:
        return 0
    top = Path(base.from_)
    if not top.is_dir():
        return 0
    uid, gid = os.getuid(), os.getgid()
    entries = (Path(d) / n for d, dirnames, filenames in os.walk(top) for n in (*dirnames, *filenames))
    checked = 0
    for path in (top, *entries):
        st = path.lstat()
        if (st.st_uid, st.st_gid) != (uid, gid):
            raise PrereqError(
                f"{path} (in the base directory {top}) belongs to uid {st.st_uid}, gid {st.st_gid}: "
                f"a --fakeroot build maps only your user (uid {uid}, gid {gid}) and cannot copy it",
                hint="build as root (sudo), or from a base directory whose files are all yours "
                "(docs/image-builder.md, 'Restricted hosts')",
            )
        checked += 1
    return checked


def write_info(tree: Path, info: ImageInfo) -> None:
    """TREE/.afkit: image.json (INFO_PATH) and the validation proofs' files (PROOF_PATH)."""
    (tree / ".afkit").mkdir()
    (tree / ".afkit" / "image.json").write_text(json.dumps(info, indent=1, sort_keys=True) + "\n")
    shutil.copytree(PROOF_SOURCE, tree / PROOF_PATH.lstrip("/"))


def _proof_line(proof: profiles.Proof) -> str:
    line = shlex.join(proof.on())
    if proof.applies_if:
        line = f'if [ -e "{proof.applies_if}" ]; then {line}; fi'
    if proof.optional:
        line = f"if command -v {shlex.quote(proof.command[0])} >/dev/null; then {line}; fi"
    return line


def run_build(
    runtime: apptainer.Runtime, definition: Path, target: Path, outdir: Path, comp: str | None
) -> None:
    """apptainer build into TARGET; on failure or Ctrl-C no TARGET is left, and never a temporary
    of Apptainer's: its APPTAINER_TMPDIR is OUTDIR/.tmp, removed once no process of the build
    runs (on SIGINT Apptainer removes its build-temp-* bundle while its own copy into it may
    still run, internal/pkg/build/build.go Full, so what it leaves is removed here)."""
    tmpdir = outdir / ".tmp"
    tmpdir.mkdir(exist_ok=True)
    target.unlink(missing_ok=True)
    cmd = runtime.build_command(target, definition, comp)
    env = {**os.environ, "APPTAINER_TMPDIR": str(tmpdir), "SINGULARITY_TMPDIR": str(tmpdir)}
    print(f"afkit: {' '.join(cmd)}", file=sys.stderr)
    # The build runs in its own session (its processes are stopped as a group, apptainer.stop_group),
    # so no terminal's Ctrl-C reaches it: afkit stops it. An interrupt that comes while it is being
    # started is held until afkit has it to stop, then acted on.
    held: list[int] = []

    def hold(signum: int, _frame: FrameType | None) -> None:
        held.append(signum)

    def interrupt(signum: int, _frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    old = {sig: signal.signal(sig, hold) for sig in (signal.SIGINT, signal.SIGTERM)}
    proc: subprocess.Popen[bytes] | None = None
    try:
        proc = subprocess.Popen(cmd, env=env, stdout=sys.stderr, stderr=sys.stderr, start_new_session=True)
        for sig in old:
            signal.signal(sig, interrupt)
        if held:
            raise KeyboardInterrupt
        rc = proc.wait()
    except KeyboardInterrupt:
        print("afkit: interrupted: stopping apptainer build, removing its temporary files", file=sys.stderr)
        if proc is not None:
            with _no_interrupts():
                _end_build(proc, target, tmpdir, grace=60)
        raise
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
    _end_build(proc, None if rc == 0 else target, tmpdir, grace=10)
    if rc != 0:
        raise AfkitError(
            f"apptainer build failed (exit {rc}) for {definition}",
            hint="read its output above; the definition and the staged tree are kept for a retry",
            code=ExitCode.FAILURE,
        )


def _end_build(proc: subprocess.Popen[Any], target: Path | None, tmpdir: Path, grace: float) -> None:
    """Once no process of the build runs: TARGET (if any) and Apptainer's temporaries removed."""
    running = apptainer.stop_group(proc, grace)
    if running:
        print(f"afkit: warning: apptainer processes {running} run on; {tmpdir} is left", file=sys.stderr)
        return
    if target is not None:
        target.unlink(missing_ok=True)
    try:
        workdir.remove(tmpdir)
    except OSError as err:
        print(f"afkit: warning: cannot remove Apptainer's temporary files ({err})", file=sys.stderr)


@contextmanager
def _no_interrupts() -> Iterator[None]:
    """SIGINT and SIGTERM ignored while a build is being cleaned up (a second Ctrl-C would leave
    the cleanup half done)."""
    old = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
