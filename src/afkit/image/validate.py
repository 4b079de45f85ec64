"""``afkit image validate``: run the image contained, without host /cvmfs, and check it.

Checks: the tag's environment is set; the proof commands run; every ELF file of the staged tree
finds all its NEEDED libraries inside the image (a missing one is reported with the package of
the repository that provides it). Optionally writes a JUnit report.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from xml.etree import ElementTree as ET

from afkit.atomic import atomic_path
from afkit.errors import InvalidError, NotFoundError, last_lines
from afkit.image import apptainer
from afkit.image import profile as profiles
from afkit.image.model import INFO_PATH, EnvVar, ImageInfo

# set for the image's %test when the validator has run the proofs itself (the template's %test
# skips them then: src/afkit/data/templates/apptainer/image.def.j2)
PROOFS_CHECKED = "AFKIT_TEST_PROOFS_CHECKED"
LDSO_CANDIDATES = ("/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1", "/lib/ld-linux.so.2")
_ELF_SCRIPT = r"""
ldso=""
for l in LDSO_LIST; do if [ -x "$l" ]; then ldso=$l; break; fi; done
if [ -z "$ldso" ]; then echo "@@NOLDSO"; exit 0; fi
for f in "$@"; do
  printf '@@ %s\n' "$f"
  [ -e "$f" ] || { echo "@@GONE"; continue; }
  LD_TRACE_LOADED_OBJECTS=1 "$ldso" "$f" 2>&1 || true
done
""".replace("LDSO_LIST", " ".join(LDSO_CANDIDATES))
# What the base image holds: its OS family, and which required files/libraries are missing.
LIB_DIRS = ("/lib64", "/usr/lib64", "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
            "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/lib", "/usr/lib")  # fmt: skip
_BASE_SCRIPT = r"""
ID=; ID_LIKE=
[ -r /etc/os-release ] && . /etc/os-release
echo "@@OS ${ID:-} ${ID_LIKE:-}"
n=0
while [ "$#" -ge 2 ]; do
  cond=$1 item=$2 n=$((n + 1))
  shift 2
  if [ -n "$cond" ] && ! eval "[ -e \"$cond\" ]"; then echo "@@NA $n"; continue; fi
  case $item in
    /*) [ -e "$item" ] || echo "@@MISSING $n" ;;
    *) found=
       for d in LIB_DIRS; do if [ -e "$d/$item" ]; then found=1; break; fi; done
       [ -n "$found" ] || echo "@@MISSING $n" ;;
  esac
done
""".replace("LIB_DIRS", " ".join(LIB_DIRS))


@dataclass
class Check:
    group: str
    name: str
    ok: bool
    message: str = ""
    skipped: bool = False


class Runner:
    """Runs commands in the image: --contain --cleanenv, no configured bind paths (no host /cvmfs)."""

    def __init__(self, image: Path, runtime: apptainer.Runtime) -> None:
        self.image, self.rt = image, runtime
        self.extra = runtime.exec_args()
        probe = self.run("true")
        if probe.returncode != 0 and "capability" in probe.stderr and "--userns" not in self.extra:
            # Root without full capabilities (containers, some CI runners): a user namespace works.
            self.extra.append("--userns")

    def _command(self, verb: str, cmd: tuple[str, ...] = (), env: tuple[str, ...] = ()) -> list[str]:
        options = ["--contain", "--cleanenv", "--no-mount", "bind-paths", *self.extra]
        options += [arg for var in env for arg in ("--env", var)]
        return apptainer.exec_command(self.image, cmd, options=options, verb=verb, binary=self.rt.binary)

    def base(self, *options: str) -> list[str]:
        """``apptainer exec`` of the image with the runner's options and OPTIONS, no command yet."""
        cmd = self._command("exec")
        return [*cmd[:-1], *options, cmd[-1]]

    def run(self, *cmd: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(self._command("exec", cmd), capture_output=True, text=True, check=False)

    def test(self, *env: str) -> subprocess.CompletedProcess[str]:
        """The image's own %test (apptainer test), with ENV (``NAME=VALUE``) set inside."""
        return subprocess.run(self._command("test", env=env), capture_output=True, text=True, check=False)


def read_info(runner: Runner) -> ImageInfo:
    proc = runner.run("cat", INFO_PATH)
    if proc.returncode != 0:
        raise InvalidError(
            f"cannot read {INFO_PATH} from {runner.image}: {proc.stderr.strip()[-400:]}",
            hint="is it an image built by afkit, and does apptainer run here?",
        )
    info: ImageInfo = json.loads(proc.stdout)
    return info


def check_env(runner: Runner, env: list[EnvVar], required: list[str]) -> list[Check]:
    proc = runner.run("env", "-0")
    if proc.returncode != 0:
        return [Check("env", "read", False, f"env failed in the image: {proc.stderr.strip()}")]
    actual = dict(item.split("=", 1) for item in proc.stdout.split("\0") if "=" in item)
    checks = []
    for var in env:
        got = actual.get(var.name)
        ok = var.holds(got)
        checks.append(Check("env", var.name, ok, "" if ok else f"expected {var.value!r}, got {got!r}"))
    for name in required:
        if name not in {v.name for v in env}:
            ok = name in actual
            checks.append(Check("env", name, ok, "" if ok else "required variable not set"))
    return checks


def check_base(
    runner: Runner, requires: list[profiles.BaseRequirement]
) -> tuple[list[Check], dict[str, str]]:
    """One check per requirement of the base image; also {item: how to get it} for the missing."""
    if not requires:
        return [], {}
    args = [word for r in requires for word in (r.applies_if or "", r.item)]
    proc = runner.run("sh", "-c", _BASE_SCRIPT, "sh", *args)
    words = next((ln.split()[1:] for ln in proc.stdout.splitlines() if ln.startswith("@@OS")), [])
    missing = {int(ln.split()[1]) for ln in proc.stdout.splitlines() if ln.startswith("@@MISSING ")}
    moot = {int(ln.split()[1]) for ln in proc.stdout.splitlines() if ln.startswith("@@NA ")}
    if proc.returncode != 0 or not proc.stdout.startswith("@@OS"):
        return [Check("base", "read", False, f"cannot inspect the base: {proc.stderr.strip()[-300:]}")], {}
    checks, hints = [], {}
    for n, req in enumerate(requires, start=1):
        if n in moot:
            checks.append(
                Check("base", req.item, True, f"{req.applies_if} is not in this image", skipped=True)
            )
            continue
        family = next((w for w in words if w in req.packages), None)
        if family:
            how = f"install {req.packages[family]} ({family})"
        else:
            how = "provided by " + ", ".join(f"{pkg} ({fam})" for fam, pkg in req.packages.items())
        ok = n not in missing
        if not ok:
            hints[req.item] = how
        msg = "" if ok else f"the base image lacks {req.item} ({req.what}): {how}"
        checks.append(Check("base", req.item, ok, msg))
    return checks, hints


def interpreter_error(output: str) -> str | None:
    """The first line of ROOT's interpreter (cling) complaining, if it did."""
    lines = output.splitlines()
    if not any("cling" in ln.lower() for ln in lines):
        return None
    return next(ln.strip() for ln in lines if "cling" in ln.lower())


# Cling learns the C++ standard library's include paths by running the `c++` on PATH
# (`LC_ALL=C c++ -xc++ -E -v /dev/null`, its "Invoking:" line); without a compiler, or with one
# that has no C++ headers, it prints this (docs/image-builder.md, "What the base must carry").
CLING_NO_STDLIB = "cannot extract standard library include paths"
NEEDS_COMPILER = "the tag's toolchain or the base must provide a compiler and C++ headers"


def compiler_hint(runner: Runner) -> str:
    """Why cling found no C++ standard library in the image: no ``c++`` on its PATH, or one
    without headers (the proofs' environment: the image's own)."""
    proc = runner.run("sh", "-c", "command -v c++")
    where = proc.stdout.strip()
    if proc.returncode != 0 or not where:
        return f"no `c++` on PATH: {NEEDS_COMPILER}"
    return f"`c++` on PATH ({where}) gave cling no C++ standard library include paths: {NEEDS_COMPILER}"


def check_proofs(runner: Runner, proofs: list[profiles.Proof], reads: list[str] | None = None) -> list[Check]:
    """Each proof on the image's own file; the reading proofs also on every URL of READS."""
    checks = []
    for proof in proofs:
        cmd = list(proof.command)
        found = runner.run("sh", "-c", 'command -v "$1"', "sh", cmd[0]).returncode == 0
        if not found and proof.optional:
            checks.append(Check("proof", proof.name, True, f"{cmd[0]} not in this image", skipped=True))
            continue
        if proof.applies_if and runner.run("sh", "-c", f'test -e "{proof.applies_if}"').returncode != 0:
            why = f"{proof.applies_if} is not in this image"
            checks.append(Check("proof", proof.name, True, why, skipped=True))
            continue
        checks.append(_run_proof(runner, proof, proof.name, list(proof.on())))
        for url in (reads or []) if proof.reads else []:
            checks.append(_run_proof(runner, proof, f"{proof.name} {url}", list(proof.on(url))))
    return checks


def _run_proof(runner: Runner, proof: profiles.Proof, name: str, cmd: list[str]) -> Check:
    proc = runner.run(*cmd)
    out = proc.stdout + proc.stderr
    ok = proc.returncode == 0 and (not proof.expect or re.search(proof.expect, out) is not None)
    msg = ""
    if not ok:
        msg = f"'{' '.join(cmd)}' exited {proc.returncode}: {last_lines(out)}"
        cling = interpreter_error(out)
        if cling:
            cause = f"{compiler_hint(runner)}\n" if CLING_NO_STDLIB in out else ""
            msg = f"ROOT's interpreter failed: {cling}\n{cause}{msg}"
    return Check("proof", name, ok, msg)


def check_elf(
    runner: Runner,
    info: ImageInfo,
    src: Path | None,
    globs: list[str],
    base: dict[str, str] | None = None,
) -> list[Check]:
    root = f"/cvmfs/{info['repository']}"
    files = [f"{root}/{e['path']}" for e in info.get("elf", [])]
    missing: dict[str, list[str]] = {}
    gone: set[str] = set()
    for i in range(0, len(files), 1000):
        proc = runner.run("sh", "-c", _ELF_SCRIPT, "sh", *files[i : i + 1000])
        if "@@NOLDSO" in proc.stdout:
            return [Check("elf", "loader", False, "no dynamic loader found in the image")]
        current = ""
        for line in proc.stdout.splitlines():
            if line.startswith("@@ "):
                current = line[3:]
            elif line == "@@GONE" and current:
                gone.add(current)
            elif "=> not found" in line and current:
                missing.setdefault(current, []).append(line.split("=>")[0].strip())
            elif "error while loading shared libraries:" in line and current:
                lib = line.split("error while loading shared libraries:", 1)[1].split(":")[0].strip()
                missing.setdefault(current, []).append(lib)
    units = sorted(info.get("units", []), key=lambda u: -len(u["rel"]))
    by_label: dict[str, list[str]] = {}
    for path in files:
        rel = path[len(root) + 1 :]
        label = next((u["label"] for u in units if rel == u["rel"] or rel.startswith(u["rel"] + "/")), rel)
        by_label.setdefault(label, [])
        if path in gone:
            by_label[label].append(f"{rel} was staged but is missing from the image")
        for lib in missing.get(path, []):
            by_label[label].append(f"{rel} needs {lib}: {provider(lib, src, globs, base)}")
    return [
        Check("elf", label, not problems, "\n".join(problems)) for label, problems in sorted(by_label.items())
    ]


def check_testscript(runner: Runner) -> Check:
    """The image's %test: its environment checks; not its proofs, which check_proofs ran already
    (the same commands: AFKIT_TEST_PROOFS_CHECKED tells %test so; `apptainer test` runs them)."""
    proc = runner.test(f"{PROOFS_CHECKED}=1")
    out = (proc.stdout + proc.stderr).strip()
    return Check("test", "%test", proc.returncode == 0, "" if proc.returncode == 0 else out[-500:])


def provider(lib: str, src: Path | None, globs: list[str], base: dict[str, str] | None = None) -> str:
    """Which package of the repository has LIB (it should have been in the closure), or, for a
    library the profile requires of the base image, the OS package that provides it."""
    if base and lib in base:
        return f"the base image lacks it: {base[lib]}"
    if src is None:
        return "the repository is not mounted here, so its provider cannot be named"
    for glob in globs:
        for hit in sorted(src.glob(f"{glob}/lib*/{lib}")):
            return f"provided by {hit.relative_to(src).parent.parent} (not in the image)"
    return "provided by no package of the repository (the base OS must have it)"


def write_junit(path: Path, image: Path, checks: list[Check]) -> None:
    suite = ET.Element(
        "testsuite",
        name=f"afkit-image-validate {image.name}",
        tests=str(len(checks)),
        failures=str(sum(not c.ok for c in checks)),
        skipped=str(sum(c.skipped for c in checks)),
    )
    for c in checks:
        case = ET.SubElement(suite, "testcase", classname=f"image.{c.group}", name=c.name)
        if c.skipped:
            ET.SubElement(case, "skipped", message=c.message)
        elif not c.ok:
            failure = ET.SubElement(case, "failure", message=c.message.splitlines()[0] if c.message else "")
            failure.text = c.message
    with atomic_path(path) as tmp:
        ET.ElementTree(suite).write(tmp, encoding="utf-8", xml_declaration=True)


def validate(
    image: Path,
    profile_name: str | None,
    junit: Path | None,
    runtime: apptainer.Runtime | None = None,
    reads: list[str] | None = None,
) -> list[Check]:
    """Run every check; raise InvalidError (exit 6) when one fails. JUnit written either way."""
    if not image.is_file():
        raise NotFoundError(f"no image at {image}", hint="give the path of a .sif built by afkit")
    runner = Runner(image, runtime or apptainer.Runtime(apptainer.find_binary(), "root"))
    info = read_info(runner)
    prof = profiles.load(profile_name or info["profile"])
    src_root = profiles.cvmfs_root() / prof.repository
    src = src_root if src_root.is_dir() else None
    globs = [g.format(arch=info["arch"]) for g in prof.modules.get("unit_globs", [])] if prof.modules else []
    if prof.lcg:
        globs.append(prof.lcg["release_dir"].format(name="*", version="*", hash="*", arch=info["arch"]))
    env = [EnvVar(**e) for e in info["env"]]
    checks = check_env(runner, env, list(prof.env_required))
    base_checks, base_hints = check_base(runner, list(prof.base_requires))
    checks += base_checks
    checks += check_proofs(runner, list(prof.proof), reads)
    checks += check_elf(runner, info, src, globs, base_hints)
    checks.append(check_testscript(runner))
    if junit:
        write_junit(junit, image, checks)
    failed = [c for c in checks if not c.ok]
    for c in checks:
        state = "skip" if c.skipped else ("ok" if c.ok else "FAIL")
        print(f"afkit: validate {state:4} {c.group}:{c.name} {c.message}".rstrip(), file=sys.stderr)
    if failed:
        causes = [ln for c in failed for ln in c.message.splitlines() if ln.endswith(NEEDS_COMPILER)]
        raise InvalidError(
            f"{image} failed {len(failed)} of {len(checks)} checks: "
            + ", ".join(f"{c.group}:{c.name}" for c in failed[:10]),
            hint="".join(f"{c}; " for c in causes[:1])
            + "see the lines above"
            + (f" and {junit}" if junit else ""),
        )
    return checks
