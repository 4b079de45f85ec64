"""Apptainer (or SingularityCE): finding it, deciding how this user may build (root or --fakeroot),
and every command line afkit runs it with (build, exec/test, pull, key import/export, sign,
verify), so that they all use the same binary: ``$AFKIT_APPTAINER``, else ``apptainer``, else
``singularity`` on PATH."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from afkit.errors import AfkitError, InvalidError, NotFoundError, PrereqError, one_line

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


def _group(pgid: int) -> list[int]:
    """The processes of group PGID that still run (zombies do not), from /proc/<pid>/stat."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(") ", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        if len(fields) > 2 and fields[0] != "Z" and fields[2] == str(pgid):
            pids.append(int(entry.name))
    return pids


def _wait_group(proc: subprocess.Popen[Any], timeout: float) -> bool:
    """Wait until PROC has ended and no process of its group runs; False after TIMEOUT seconds."""
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None and not _group(proc.pid):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def stop_group(proc: subprocess.Popen[Any], grace: float) -> list[int]:
    """Stop PROC (started with ``start_new_session=True``) and every process left in its group as
    Ctrl-C on its own terminal would: SIGINT to the whole group, then SIGKILL to what still runs
    after GRACE seconds. The group matters: ``build --fakeroot`` re-runs apptainer in a user
    namespace as a child that the parent does not signal, and mksquashfs and %setup's commands
    are children too (apptainer/apptainer internal/pkg/fakeroot/fakefake.go UnshareRootMapped,
    internal/pkg/build/build.go Full). Returns the pids still running 10 s after SIGKILL."""
    if proc.poll() is not None and not _group(proc.pid):
        return []
    for sig, wait in ((signal.SIGINT, grace), (signal.SIGKILL, 10.0)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        if _wait_group(proc, wait):
            return []
    return _group(proc.pid)


def command_name() -> str | None:
    """The runtime as a command line names it (``$AFKIT_APPTAINER`` as given, else ``apptainer``,
    else ``singularity``, whichever is on PATH); None when there is none."""
    env = os.environ.get("AFKIT_APPTAINER")
    if env:
        return env if shutil.which(env) else None
    return next((name for name in NAMES if shutil.which(name)), None)


def _binary(binary: str | None) -> str:
    """BINARY when given, else the runtime's command name (``apptainer`` when there is none yet)."""
    return binary or command_name() or NAMES[0]


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
        _binary(binary), *global_options, verb, *options,
        *[arg for bind in binds for arg in ("--bind", bind)], str(image), *command,
    ]  # fmt: skip


def pull_command(ref: str, dest: Path, *, insecure: bool = False, binary: str | None = None,
                 authfile: Path | None = None) -> list[str]:  # fmt: skip
    """``apptainer pull [--no-https] [--authfile FILE] DEST REF`` (``--no-https``: a plain-HTTP test
    registry; ``--authfile``: the registry login ``apptainer registry login --authfile FILE`` wrote)."""
    flags = ["--no-https"] if insecure else []
    if authfile is not None:
        flags += ["--authfile", str(authfile)]
    return [_binary(binary), "pull", *flags, str(dest), ref]


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


# --- signing and verification (PGP keys, ``apptainer sign`` / ``apptainer verify``) -------------
#
# Upstream behaviour this relies on (apptainer/apptainer, cmd/internal/cli/sign.go, verify.go and
# pgp.go): ``sign --keyidx N`` picks the N-th private key of the keyring ($APPTAINER_KEYSDIR) and
# reads the key's passphrase from stdin when stdin is not a terminal; ``key import`` reads an
# encrypted private key's password the same way; ``verify --json`` always prints
# ``{"Signatures": N, "SignerKeys": [{"Signer": {"Partition", "Name", "Fingerprint", "KeyLocal",
# "KeyCheck", "DataCheck"}}]}`` (Fingerprint in lower-case hex, empty when the signing key is not
# known) and exits non-zero when verification fails; ``--local`` never asks a key server;
# ``key export`` asks for the key's index on stdin (internal/pkg/sypgp/sypgp.go, selectPubKey).

KEYSDIR_ENV = "APPTAINER_KEYSDIR"
# SingularityCE's keyring directory (sylabs/singularity internal/pkg/sypgp/sypgp.go, dirPath)
SINGULARITY_KEYSDIR_ENV = "SINGULARITY_SYPGPDIR"


def normalise_fingerprint(text: str) -> str:
    """Upper-case hex without blanks or colons (as ``apptainer key list`` prints it)."""
    return "".join(ch for ch in str(text) if ch not in " :").upper()


def key_import_command(key_file: str | os.PathLike[str], *, binary: str | None = None) -> list[str]:
    """``apptainer key import KEY_FILE``."""
    return [_binary(binary), "key", "import", str(key_file)]


def key_export_command(output: str | os.PathLike[str], *, binary: str | None = None) -> list[str]:
    """Export a public key; apptainer asks for its index in the keyring on stdin (key/sypgp.go)."""
    return [_binary(binary), "key", "export", "--armor", str(output)]


def sign_command(image: str | os.PathLike[str], keyidx: int = 0, *, binary: str | None = None) -> list[str]:
    """``apptainer sign --keyidx N IMAGE``."""
    return [_binary(binary), "sign", "--keyidx", str(keyidx), str(image)]


def verify_command(image: str | os.PathLike[str], *, binary: str | None = None) -> list[str]:
    """``apptainer verify --local --json IMAGE`` (never a key server)."""
    return [_binary(binary), "verify", "--local", "--json", str(image)]


def keysdir_env(binary: str, keysdir: str) -> dict[str, str]:
    """The variables that point BINARY at the keyring KEYSDIR: ``$APPTAINER_KEYSDIR``, and for a
    binary named singularity also SingularityCE's ``$SINGULARITY_SYPGPDIR`` (it may be either
    SingularityCE or Apptainer's compatibility link)."""
    env = {KEYSDIR_ENV: keysdir}
    if os.path.basename(binary).startswith("singularity"):
        env[SINGULARITY_KEYSDIR_ENV] = keysdir
    return env


@dataclass(frozen=True)
class Verification:
    """What ``apptainer verify --json`` said: the fingerprints whose key and data checks passed,
    and the partitions whose data check failed."""

    signatures: int
    good: frozenset[str]
    unknown_keys: int
    bad_data: tuple[str, ...]

    @classmethod
    def parse(cls, stdout: str) -> Verification:
        try:
            data: Any = json.loads(stdout) if stdout.strip() else {}
        except json.JSONDecodeError:
            data = {}
        if not isinstance(data, dict):
            data = {}
        good: set[str] = set()
        unknown = 0
        bad: list[str] = []
        for entry in data.get("SignerKeys") or []:
            s = entry.get("Signer", {}) if isinstance(entry, dict) else {}
            if not s.get("DataCheck"):
                bad.append(str(s.get("Partition", "?")))
            elif not s.get("KeyCheck") or not s.get("Fingerprint"):
                unknown += 1
            else:
                good.add(normalise_fingerprint(str(s["Fingerprint"])))
        return cls(int(data.get("Signatures") or 0), frozenset(good), unknown, tuple(bad))


def _run(cmd: list[str], keysdir: str | None, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """CMD with its keyring in KEYSDIR (unless None); STDIN (a passphrase) or nothing on stdin."""
    env = dict(os.environ)
    if keysdir is not None:
        env.update(keysdir_env(cmd[0], keysdir))
    if stdin is None:
        return subprocess.run(
            cmd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False
        )
    return subprocess.run(cmd, env=env, input=stdin, capture_output=True, text=True, check=False)


def verify(
    image: str | os.PathLike[str],
    fingerprint: str,
    *,
    binary: str | None = None,
    public_key: str | os.PathLike[str] | None = None,
) -> str:
    """Check that IMAGE carries a valid signature by FINGERPRINT; return the fingerprint.

    PUBLIC_KEY (an armored public key file) is imported into a private temporary keyring first;
    without it the user's keyring ($APPTAINER_KEYSDIR, else ~/.apptainer/keys) is used. Unsigned,
    modified or signed by another key: InvalidError (exit 6)."""
    want = normalise_fingerprint(fingerprint)
    if len(want) != 40 or any(ch not in "0123456789ABCDEF" for ch in want):
        raise InvalidError(
            f"bad fingerprint {fingerprint!r}", hint="give the 40 hex digits 'apptainer key list' shows"
        )
    binary = binary or find_binary()
    with tempfile.TemporaryDirectory(prefix="afkit-keys.") as tmp:
        keysdir: str | None = None
        if public_key is not None:
            if not Path(public_key).is_file():
                raise NotFoundError(f"no such public key file: {public_key}", hint=_PUBLIC_HINT)
            keysdir = tmp
            imp = _run(key_import_command(public_key, binary=binary), keysdir)
            if imp.returncode != 0:
                raise InvalidError(f"cannot import the public key {public_key}: {_said(imp.stderr)}")
        proc = _run(verify_command(image, binary=binary), keysdir)
    result = Verification.parse(proc.stdout)
    if proc.returncode == 0 and want in result.good:
        return want
    raise InvalidError(_refusal(str(image), want, result, proc.stderr), hint=_REFUSAL_HINT)


# `key export` takes the output file only and asks which key on stdin (selectPubKey, above)
_PUBLIC_HINT = (
    "export the signer's public key with 'apptainer key export --armor FILE' (it asks which key), "
    "or sign with 'afkit image sign --export-public FILE'"
)
_SECRET_HINT = "export the signing key with 'apptainer key export --secret --armor FILE' (it asks which key)"
_REFUSAL_HINT = (
    "run only images signed by the expected key: check the fingerprint, import the signer's "
    "public key (apptainer key import, or image.key in a campaign), or sign the image again "
    "with 'afkit image sign'"
)


# apptainer's lines that say what went wrong start with these (lower case)
ERROR_MARKS = ("fatal", "error")


def _said(stderr: str) -> str:
    """What apptainer said went wrong: its last FATAL or ERROR line (afkit.errors.one_line)."""
    return one_line(stderr, marks=ERROR_MARKS) or "no message"


def _refusal(image: str, want: str, result: Verification, stderr: str) -> str:
    if result.signatures == 0:
        return f"{image} is not signed (expected a signature by {want})"
    if result.bad_data:
        parts = ", ".join(result.bad_data)
        return f"{image}: the signature does not match the content ({parts} modified after signing)"
    if result.good:
        return f"{image} is signed by {', '.join(sorted(result.good))}, not by the expected {want}"
    if result.unknown_keys or "unknown entity" in stderr:
        return f"{image} is signed by a key that is not in the keyring (expected {want})"
    return f"{image}: signature verification failed: {_said(stderr)}"


_IMPORTED = re.compile(r"fingerprint ([0-9A-Fa-f]{40}) successfully added to the private keyring")


def sign(
    image: str | os.PathLike[str],
    key_file: str | os.PathLike[str],
    *,
    passphrase: str = "",
    binary: str | None = None,
    export_public: str | os.PathLike[str] | None = None,
) -> str:
    """Sign IMAGE in place with the (armored, possibly passphrase-protected) private key in
    KEY_FILE, imported into a private temporary keyring; verify it; return the fingerprint.
    EXPORT_PUBLIC: also write the signer's armored public key there (to verify with elsewhere).

    The passphrase goes to apptainer on stdin, never on a command line."""
    binary = binary or find_binary()
    if not Path(key_file).is_file():
        raise NotFoundError(f"no such signing key file: {key_file}", hint=_SECRET_HINT)
    with tempfile.TemporaryDirectory(prefix="afkit-keys.") as keysdir:
        imp = _run(key_import_command(key_file, binary=binary), keysdir, passphrase + "\n")
        fps = [normalise_fingerprint(m) for m in _IMPORTED.findall(imp.stdout)]
        if imp.returncode != 0 or not fps:
            raise InvalidError(
                f"cannot import the signing key {key_file}: {_said(imp.stderr)}",
                hint="check that the file holds an armored private key and its passphrase",
            )
        proc = _run(sign_command(image, binary=binary), keysdir, passphrase + "\n")
        if proc.returncode != 0:
            raise AfkitError(
                f"{os.path.basename(binary)} sign {image} failed: {_said(proc.stderr)}",
                hint="check the key's passphrase and that the image is writable",
            )
        check = _run(verify_command(image, binary=binary), keysdir)
        if export_public is not None:
            Path(export_public).unlink(missing_ok=True)  # apptainer refuses to overwrite
            exp = _run(key_export_command(export_public, binary=binary), keysdir, "0\n")  # the only key
            if exp.returncode != 0:
                raise AfkitError(f"cannot export the public key {fps[0]}: {_said(exp.stderr)}")
    result = Verification.parse(check.stdout)
    if check.returncode != 0 or fps[0] not in result.good:
        raise InvalidError(_refusal(str(image), fps[0], result, check.stderr))
    return fps[0]
