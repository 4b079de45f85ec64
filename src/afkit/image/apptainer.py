"""Apptainer (or SingularityCE): finding it, deciding how this user may build (root or --fakeroot),
and every command line afkit runs it with (build, exec/test, pull), so that they all use the same
binary: ``$AFKIT_APPTAINER``, else ``apptainer``, else ``singularity`` on PATH."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from afkit.errors import PrereqError

COMPRESSIONS = ("gzip", "zstd", "lz4", "xz")
NAMES = ("apptainer", "singularity")


@dataclass(frozen=True)
class Runtime:
    binary: str
    mode: str  # "root" or "fakeroot"

    def build_args(self) -> list[str]:
        return ["--fakeroot"] if self.mode == "fakeroot" else []

    def exec_args(self) -> list[str]:
        """Extra options for exec/run/test (``$AFKIT_APPTAINER_EXEC_ARGS``, e.g. ``--userns``)."""
        extra = os.environ.get("AFKIT_APPTAINER_EXEC_ARGS", "")
        return extra.split()

    def build_command(self, target: Path, definition: Path, compression: str | None) -> list[str]:
        """``build --notest`` of DEFINITION into TARGET (%test runs in the validation, with the
        run-time options that work here)."""
        return [
            self.binary, "build", "--notest", *self.build_args(), *squashfs_args(compression),
            str(target), str(definition),
        ]  # fmt: skip


def command_name() -> str | None:
    """The runtime as a command line names it (``$AFKIT_APPTAINER`` as given, else ``apptainer``,
    else ``singularity``, whichever is on PATH); None when there is none."""
    env = os.environ.get("AFKIT_APPTAINER")
    if env:
        return env if shutil.which(env) else None
    return next((name for name in NAMES if shutil.which(name)), None)


def exec_command(
    image: str | Path,
    command: Sequence[str],
    *,
    options: Iterable[str] = (),
    binds: Iterable[str] = (),
    verb: str = "exec",
    binary: str | None = None,
    global_options: Iterable[str] = (),
) -> list[str]:
    """``apptainer GLOBAL VERB OPTIONS --bind B... IMAGE COMMAND`` (VERB exec, run or test;
    GLOBAL e.g. ``-q``, which apptainer only accepts before the verb)."""
    return [
        binary or command_name() or NAMES[0], *global_options, verb, *options,
        *[arg for bind in binds for arg in ("--bind", bind)], str(image), *command,
    ]  # fmt: skip


def pull_command(ref: str, dest: Path, *, insecure: bool = False, binary: str | None = None) -> list[str]:
    """``apptainer pull [--no-https] DEST REF`` (``--no-https``: a plain-HTTP test registry)."""
    flags = ["--no-https"] if insecure else []
    return [binary or command_name() or NAMES[0], "pull", *flags, str(dest), ref]


def find_binary() -> str:
    """apptainer, else singularity, on PATH (``$AFKIT_APPTAINER`` wins); exit 3 when neither."""
    env = os.environ.get("AFKIT_APPTAINER")
    if env:
        if shutil.which(env):
            return str(shutil.which(env))
        raise PrereqError(f"AFKIT_APPTAINER={env} is not an executable", hint="fix or unset it")
    for name in NAMES:
        found = shutil.which(name)
        if found:
            return found
    raise PrereqError(
        "neither 'apptainer' nor 'singularity' is on PATH",
        hint="install Apptainer (https://apptainer.org/docs/admin/main/installation.html) and retry",
    )


def fakeroot_possible() -> tuple[bool, str]:
    """Whether an unprivileged user can build with --fakeroot (a user namespace mapping root)."""
    unshare = shutil.which("unshare")
    if not unshare:
        return False, "'unshare' (util-linux) not found to probe user namespaces"
    proc = subprocess.run(
        [unshare, "--user", "--map-root-user", "true"], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        return False, f"user namespaces are not available: {proc.stderr.strip() or 'unshare failed'}"
    return True, "user namespaces work"


def detect(binary: str | None = None, *, say: bool = True) -> Runtime:
    """Root builds as root; others need a working --fakeroot; exit 3 otherwise. Says which."""
    binary = binary or find_binary()
    if os.geteuid() == 0:
        mode, why = "root", "running as root"
    else:
        ok, why = fakeroot_possible()
        if not ok:
            raise PrereqError(
                f"not root and --fakeroot cannot work here ({why})",
                hint="run with sudo, or ask the admin to enable unprivileged user namespaces "
                "(sysctl user.max_user_namespaces, 'apptainer config fakeroot --add USER')",
            )
        mode = "fakeroot"
    if say:
        print(f"afkit: building with {os.path.basename(binary)} as {mode} ({why})", file=sys.stderr)
    return Runtime(binary, mode)


def squashfs_args(compression: str | None) -> list[str]:
    """``--mksquashfs-args '-comp X'`` for the build (Apptainer >= 1.1)."""
    if not compression:
        return []
    return ["--mksquashfs-args", f"-comp {compression}"]
