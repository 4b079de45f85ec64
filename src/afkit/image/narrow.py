"""``--narrow``: a second image holding only the closure files that the proof commands and the
user's commands open, checked by running the same commands in it.

1. Every command (the profile's proofs, then each ``--narrow-command``) runs in the full image
   under ``strace -f`` (file system calls that succeeded), with the validation's options
   (``--contain --cleanenv --no-mount bind-paths``) plus the current directory bound as the
   working directory. Paths under ``/cvmfs/<repo>/`` are kept; every symlink on the way to them
   is kept with its target.
2. The narrowed plan (those files, links and directories) is staged from the same store and
   built into ``NAME.narrow.sif`` with the same environment. ``NAME.narrow.spec`` lists it in
   cvmfs_shrinkwrap's specification format (cvmfs/cvmfs ``cvmfs/shrinkwrap/spec_tree.cc``:
   ``^/path`` includes exactly that entry; ``cvmfs/shrinkwrap/scripts/spec_builder.py`` writes
   traced files the same way).
3. The commands run again in the narrowed image: a different exit code, standard output or
   standard error is a failure (exit 6) naming the command, and the files it then failed to
   open that the full image has.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from afkit.errors import PrereqError
from afkit.image.stage import Plan

# File system calls whose successful path arguments count as "used" (strace -e trace=...).
TRACED = "trace=%file,%process"
_CALL = re.compile(r'^(?:\[pid\s+\d+\]\s+|\d+\s+)?(\w+)\((?:[A-Z_]+,\s*)?"((?:[^"\\]|\\.)*)"')
_FAILED = re.compile(r"=\s+-1\s+(ENOENT|ENOTDIR)")


@dataclass(frozen=True)
class Outcome:
    command: str
    returncode: int
    stdout: str
    stderr: str

    def differs(self, other: Outcome) -> str:
        """'' when equal, else what differs."""
        if self.returncode != other.returncode:
            return f"exit {self.returncode} in the full image, {other.returncode} in the narrowed one"
        for name in ("stdout", "stderr"):
            a, b = getattr(self, name).splitlines(), getattr(other, name).splitlines()
            if a != b:
                pairs = enumerate(zip(a, b, strict=False))
                line = next((i for i, (x, y) in pairs if x != y), min(len(a), len(b)))
                seen = (a[line] if line < len(a) else "(end)", b[line] if line < len(b) else "(end)")
                return f"{name} differs at line {line + 1}: {seen[0]!r} vs {seen[1]!r}"
        return ""


def strace() -> str:
    found = shutil.which("strace")
    if not found:
        raise PrereqError(
            "--narrow needs strace to trace the files commands open", hint="apt-get install strace"
        )
    return found


def run(base_cmd: list[str], command: str, trace: Path | None = None, failed: bool = False) -> Outcome:
    """Run COMMAND (a bash command line) through BASE_CMD (apptainer exec ... IMAGE), under
    strace writing to TRACE when given (successful calls, or failed ones with FAILED)."""
    cmd = [*base_cmd, "bash", "-c", command]
    if trace is not None:
        status = "failed" if failed else "successful"
        cmd = [strace(), "-f", "-qq", "-e", TRACED, "-e", f"status={status}", "-o", str(trace), *cmd]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    return Outcome(command, proc.returncode, proc.stdout, proc.stderr)


def traced_paths(trace: Path, image_root: str) -> set[str]:
    """Paths (relative to the repository) that the traced calls named under IMAGE_ROOT."""
    prefix = image_root.rstrip("/") + "/"
    found: set[str] = set()
    for line in trace.read_text(errors="replace").splitlines():
        match = _CALL.match(line)
        if match and match.group(2).startswith(prefix):
            rel = os.path.normpath(match.group(2)[len(prefix) :])
            if not rel.startswith(".."):
                found.add(rel)
    return found


def keep_set(used: set[str], plan: Plan, image_root: str) -> set[str]:
    """USED plus every symlink on the way and its target, within the plan."""
    links = dict(plan.links)
    keep: set[str] = set()
    todo = sorted(used)
    seen: set[str] = set()
    while todo:
        rel = todo.pop()
        if rel in seen:
            continue
        seen.add(rel)
        parts = rel.split("/")
        for i in range(1, len(parts) + 1):
            head = "/".join(parts[:i])
            if head in links:
                keep.add(head)
                target = links[head]
                base = image_root.rstrip("/") + "/"
                if target.startswith(base):
                    resolved = target[len(base) :]
                elif os.path.isabs(target):
                    break  # out of the repository: kept as it is
                else:
                    resolved = os.path.normpath(os.path.join(os.path.dirname(head), target))
                todo.append("/".join([resolved, *parts[i:]]).rstrip("/"))
                break
        else:
            keep.add(rel)
    return keep


def narrowed(plan: Plan, keep: set[str]) -> Plan:
    """The part of PLAN in KEEP (files and links), with the directories above them."""
    files = [t for t in plan.files if t.rel in keep]
    link_list = [(rel, target) for rel, target in plan.links if rel in keep]
    dirs: set[str] = {d for d in plan.dirs if d in keep}
    for rel in [t.rel for t in files] + [rel for rel, _ in link_list] + sorted(dirs):
        parts = rel.split("/")
        dirs.update("/".join(parts[:i]) for i in range(1, len(parts)))
    return Plan(dirs=sorted(dirs), files=files, links=link_list)


def spec_lines(sub: Plan, tag: str, repository: str) -> list[str]:
    """cvmfs_shrinkwrap spec of the narrowed closure: ``^/path`` for each entry."""
    entries = {t.rel for t in sub.files} | {rel for rel, _ in sub.links}
    return [f"# afkit narrowed closure of {tag} in {repository}"] + [f"^/{rel}" for rel in sorted(entries)]


def missing_files(base_cmd: list[str], command: str, image_root: str, full: Plan) -> list[str]:
    """Files of the full closure that COMMAND failed to open in the narrowed image."""
    have = {t.rel for t in full.files} | {rel for rel, _ in full.links}
    with tempfile.TemporaryDirectory(prefix="afkit-narrow.") as tmp:
        trace = Path(tmp) / "trace"
        run(base_cmd, command, trace, failed=True)
        failed_lines = [ln for ln in trace.read_text(errors="replace").splitlines() if _FAILED.search(ln)]
        Path(trace).write_text("\n".join(failed_lines) + "\n")
        return sorted(traced_paths(trace, image_root) & have)
