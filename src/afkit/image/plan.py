"""``--plan``: the closure with sizes, and a cvmfs_shrinkwrap-compatible specification file."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from afkit.atomic import write_atomic
from afkit.bench.units import human_bytes
from afkit.image import workdir
from afkit.image.model import Resolution
from afkit.image.profile import Profile


def unit_bytes(path: Path) -> int:
    """Bytes of the regular files under PATH (symlinks not followed)."""
    if path.is_symlink() or path.is_file():
        return path.lstat().st_size if path.is_file() and not path.is_symlink() else 0
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            p = os.path.join(dirpath, name)
            if not os.path.islink(p):
                total += os.lstat(p).st_size
    return total


def spec_lines(res: Resolution, src: Path) -> list[str]:
    """Shrinkwrap spec: ``/dir/*`` for a tree, ``/file`` for a file (paths from the repository root)."""
    lines = [f"# afkit closure of {res.tag} ({res.arch}) in {res.repository}"]
    for unit in res.units:
        path = src / unit.rel
        is_tree = path.is_dir() and not path.is_symlink()
        lines.append(f"/{unit.rel}/*" if is_tree else f"/{unit.rel}")
    return lines


def write_plan(profile: Profile, res: Resolution, src: Path, outdir: Path, name: str) -> Path:
    """Print the closure with sizes; write NAME.spec and NAME.plan.json into OUTDIR; return the spec."""
    sizes = {u.rel: unit_bytes(src / u.rel) for u in res.units}
    total = sum(sizes.values())
    print(f"# {res.tag} on {res.arch}: {len(res.units)} units, {human_bytes(total)}")
    for unit in sorted(res.units, key=lambda u: -sizes[u.rel]):
        print(f"{human_bytes(sizes[unit.rel]):>12}  {unit.label:<40} /cvmfs/{res.repository}/{unit.rel}")
    outdir.mkdir(parents=True, exist_ok=True)
    if not workdir.is_ours(outdir) and not any(outdir.iterdir()):
        (outdir / workdir.MARKER).write_text('{"created_by": "afkit"}\n')
    spec = outdir / f"{name}.spec"
    write_atomic(spec, "\n".join(spec_lines(res, src)) + "\n")
    data = {**res.to_json(), "bytes": total, "unit_bytes": sizes}
    write_atomic(outdir / f"{name}.plan.json", json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(f"afkit: wrote {spec} (cvmfs_shrinkwrap spec) and {name}.plan.json", file=sys.stderr)
    return spec
