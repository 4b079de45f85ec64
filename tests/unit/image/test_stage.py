"""Staging: same absolute paths, symlinks kept or resolved, the content-addressed store reused."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from afkit.errors import ExitCode, PrereqError
from afkit.image import profile, resolve, stage, tags
from afkit.image import store as store_mod
from afkit.image.model import Unit
from afkit.image.store import Store

IMAGE_ROOT = "/cvmfs/repo.example.org"


def _tree(src: Path) -> list[Unit]:
    """pkgA (in the closure) links into pkgB (in), out to pkgC (not in) and out of the repository."""
    for pkg in ("A", "B", "C"):
        (src / "Packages" / pkg / "lib").mkdir(parents=True)
        (src / "Packages" / pkg / "lib" / f"lib{pkg}.so").write_text(f"lib {pkg}\n")
    (src / "Packages" / "C" / "share").mkdir()
    (src / "Packages" / "C" / "share" / "data.txt").write_text("C data\n")
    bin_a = src / "Packages" / "A" / "bin"
    bin_a.mkdir()
    (bin_a / "tool").write_text("#!/bin/sh\necho tool\n")
    (bin_a / "tool").chmod(0o755)
    lib_a = src / "Packages" / "A" / "lib"
    (lib_a / "libB.so").symlink_to("../../B/lib/libB.so")  # inside the closure: kept
    (lib_a / "libC.so").symlink_to("../../C/lib/libC.so")  # leaves the closure: resolved
    (lib_a / "share").symlink_to(src / "Packages" / "C" / "share")  # absolute, a directory: resolved
    (lib_a / "abs-in").symlink_to(src / "Packages" / "B" / "lib" / "libB.so")  # absolute, inside: kept
    (lib_a / "os").symlink_to("/etc/hostname")  # out of the repository: kept as is
    return [Unit("Packages/A", "A/1"), Unit("Packages/B", "B/1")]


def test_symlinks_kept_or_resolved(tmp_path: Path) -> None:
    src = tmp_path / "src"
    units = _tree(src)
    plan = stage.walk(src, units, IMAGE_ROOT)
    dest = tmp_path / "rootfs" / "cvmfs" / "repo.example.org"
    stats = stage.execute(plan, dest, Store(tmp_path / ".data"), quiet=True)
    lib_a = dest / "Packages" / "A" / "lib"
    assert os.readlink(lib_a / "libB.so") == "../../B/lib/libB.so"
    assert (lib_a / "libB.so").read_text() == "lib B\n"
    assert not (lib_a / "libC.so").is_symlink() and (lib_a / "libC.so").read_text() == "lib C\n"
    assert (lib_a / "share").is_dir() and not (lib_a / "share").is_symlink()
    assert (lib_a / "share" / "data.txt").read_text() == "C data\n"
    assert os.readlink(lib_a / "abs-in") == f"{IMAGE_ROOT}/Packages/B/lib/libB.so"  # image path
    assert os.readlink(lib_a / "os") == "/etc/hostname"
    assert not (dest / "Packages" / "C").exists()
    assert os.access(dest / "Packages" / "A" / "bin" / "tool", os.X_OK)
    assert stats.resolved_symlinks == 2 and plan.kept_outside == ["Packages/A/lib/os -> /etc/hostname"]


def test_files_are_hard_links_into_the_store(tmp_path: Path) -> None:
    src = tmp_path / "src"
    units = _tree(src)
    dest = tmp_path / "rootfs"
    stage.execute(stage.walk(src, units, IMAGE_ROOT), dest, Store(tmp_path / ".data"), quiet=True)
    staged = dest / "Packages" / "B" / "lib" / "libB.so"
    assert staged.stat().st_nlink >= 2
    blobs = [p for p in (tmp_path / ".data").rglob("*") if p.is_file() and p.parent.name != "tmp"]
    assert any(b.samefile(staged) for b in blobs)


def _stage_tag(text: str, work: Path, name: str, jobs: int | None = None) -> stage.Stats:
    prof = profile.load("alice")
    src = profile.repo_root(prof)
    res = resolve.resolve(prof, tags.parse(text, prof), src)
    plan = stage.walk(src, res.units, resolve.image_root(prof))
    dest = work / name / "cvmfs" / "alice.cern.ch"
    return stage.execute(plan, dest, Store(work / ".data"), jobs=jobs, quiet=True)


def test_adjacent_tag_reuses_the_store(on_fixture: Path, tmp_path: Path) -> None:
    first = _stage_tag("AliPhysics/vAN-20250401_ROOT6-1", tmp_path, "one")
    assert first.reused_files == 0 and first.copied_files == first.files > 0
    second = _stage_tag("AliPhysics/vAN-20250402_ROOT6-1", tmp_path, "two")
    assert second.reused_files > 0
    assert second.copied_bytes < second.bytes / 2  # only AliPhysics differs
    again = _stage_tag("AliPhysics/vAN-20250402_ROOT6-1", tmp_path, "three")
    assert again.copied_files == 0
    elf_paths = {e["path"] for e in again.elf}
    assert "el9-x86_64/Packages/AliPhysics/vAN-20250402_ROOT6-1/bin/aliphysics-check" in elf_paths
    check = next(e for e in again.elf if e["path"].endswith("bin/aliphysics-check"))
    assert {"libCore.so", "libgcctoolchain.so"} <= set(check["needed"])


def test_failure_mid_copy_leaves_the_store_consistent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = tmp_path / "src"
    units = _tree(src)
    store_dir = tmp_path / ".data"
    store = Store(store_dir)
    real_add = Store.add_placing
    calls = {"n": 0}

    def flaky(self: Store, *args: object, **kwargs: object) -> object:
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        return real_add(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Store, "add_placing", flaky)
    with pytest.raises(KeyboardInterrupt):
        stage.execute(stage.walk(src, units, IMAGE_ROOT), tmp_path / "r1", store, jobs=1, quiet=True)
    assert list((store_dir / "tmp").iterdir()) == []  # no half-written blob
    monkeypatch.setattr(Store, "add_placing", real_add)
    fresh = Store(store_dir)  # the saved index only names complete blobs
    stats = stage.execute(stage.walk(src, units, IMAGE_ROOT), tmp_path / "r2", fresh, quiet=True)
    assert stats.reused_files >= 1
    assert (tmp_path / "r2" / "Packages" / "A" / "lib" / "libA.so").read_text() == "lib A\n"


def test_damaged_blob_is_not_reused(tmp_path: Path) -> None:
    src = tmp_path / "src"
    units = _tree(src)
    store = Store(tmp_path / ".data")
    stage.execute(stage.walk(src, units, IMAGE_ROOT), tmp_path / "r1", store, quiet=True)
    shutil.rmtree(tmp_path / "r1")
    for blob in (tmp_path / ".data").glob("??/*"):
        blob.unlink()
    stats = stage.execute(
        stage.walk(src, units, IMAGE_ROOT), tmp_path / "r2", Store(tmp_path / ".data"), quiet=True
    )
    assert stats.reused_files == 0 and stats.copied_files == stats.files


def test_not_enough_space_names_the_numbers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "disk_usage", lambda _p: shutil._ntuple_diskusage(100, 99, 1 << 20))  # type: ignore[attr-defined]
    with pytest.raises(PrereqError) as exc:
        stage.check_space(tmp_path, 5 << 20, "staging")
    assert exc.value.code == ExitCode.PREREQ
    assert "need 5.0 MiB, have 1.0 MiB" in str(exc.value)


@pytest.mark.parametrize("size", [0, 5, (4 << 20) + 17])
def test_both_copy_paths_agree(tmp_path: Path, size: int) -> None:
    import hashlib

    from afkit.image import store as store_mod

    data = os.urandom(size)
    src = tmp_path / "src"
    src.write_bytes(data)
    for name, func in (("kernel", store_mod._copy), ("loop", store_mod._copy_loop)):
        out = tmp_path / name
        with src.open("rb") as inp, out.open("wb") as dst:
            digest, head = func(inp.fileno(), dst.fileno())
        assert out.read_bytes() == data
        assert digest == hashlib.sha256(data).hexdigest() and head == data[:4]


def test_a_copy_failing_halfway_leaves_neither_the_staged_file_nor_its_blob(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """New content is copied straight to its place in the tree and linked into the store only
    when complete: a copy that fails leaves no partial file in either."""
    src = tmp_path / "src"
    units = _tree(src)
    store = Store(tmp_path / ".data")

    def half(inp: int, out: int, size: int | None = None) -> None:
        os.write(out, b"half")
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(store_mod, "_kernel_copy", half)
    monkeypatch.setattr(store_mod, "cvmfs_hash", lambda path: "a" * 40)
    with pytest.raises(OSError, match="Input/output error"):
        stage.execute(stage.walk(src, units, IMAGE_ROOT), tmp_path / "r1", store, jobs=1, quiet=True)
    assert [p for p in (tmp_path / "r1").rglob("*") if p.is_file()] == []
    assert [p for p in (tmp_path / ".data").rglob("cvmfs-*")] == []


def _stage_with(jobs: int, work: Path, name: str) -> stage.Stats:
    return _stage_tag("AliPhysics/vAN-20250402_ROOT6-1", work, name, jobs)


def _tree_of(root: Path) -> dict[str, bytes | str]:
    out: dict[str, bytes | str] = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        out[rel] = os.readlink(path) if path.is_symlink() else path.read_bytes() if path.is_file() else "dir"
    return out


def test_worker_processes_stage_the_same_tree_as_one_process(on_fixture: Path, tmp_path: Path) -> None:
    serial = _stage_with(1, tmp_path / "serial", "t")
    pooled = _stage_with(2, tmp_path / "pooled", "t")
    assert _tree_of(tmp_path / "pooled" / "t") == _tree_of(tmp_path / "serial" / "t")
    assert pooled.elf == serial.elf and pooled.copied_files == serial.copied_files == pooled.files


def test_worker_processes_content_is_remembered_in_the_saved_index(on_fixture: Path, tmp_path: Path) -> None:
    _stage_with(2, tmp_path, "one")
    again = _stage_with(2, tmp_path, "two")  # a new Store: reads the index the first run saved
    assert again.copied_files == 0 and again.reused_files == again.files > 0


def test_a_failing_worker_process_fails_staging_with_its_error(tmp_path: Path) -> None:
    src = tmp_path / "src"
    units = _tree(src)
    plan = stage.walk(src, units, IMAGE_ROOT)
    (src / "Packages" / "A" / "lib" / "libA.so").unlink()  # gone between walking and staging
    with pytest.raises(FileNotFoundError, match=r"libA\.so"):
        stage.execute(plan, tmp_path / "r1", Store(tmp_path / ".data"), jobs=2, quiet=True)
    assert not (tmp_path / "r1" / "Packages" / "A" / "lib" / "libA.so").exists()
