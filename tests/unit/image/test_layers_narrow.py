"""The CVMFS user.hash shortcut of the store, --layers' choice and identity, --narrow's trace
reading and symlink following."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from afkit.image import layers, narrow, stage
from afkit.image.model import Unit
from afkit.image.store import XATTR, Store, cvmfs_hash

IMAGE_ROOT = "/cvmfs/repo.example.org"


def test_store_names_a_blob_by_the_cvmfs_hash_and_links_it_without_reading(tmp_path: Path) -> None:
    src = tmp_path / "a.h"
    src.write_text("header\n")
    value = hashlib.sha1(b"header\n").hexdigest()
    os.setxattr(src, XATTR, value.encode())
    # Another file CVMFS says has the same content: the store must trust the hash, not read it.
    twin = tmp_path / "b.h"
    twin.write_text("HEADER\n")
    os.setxattr(twin, XATTR, value.encode())
    store = Store(tmp_path / ".data")
    one = store.add(src, "a.h", src.stat())
    two = store.add(twin, "b.h", twin.stat())
    assert one["sha256"] == two["sha256"] == f"cvmfs-{value}"
    assert store.blob_path(one["sha256"], False).read_text() == "header\n"


def test_a_malformed_user_hash_is_ignored(tmp_path: Path) -> None:
    src = tmp_path / "a.h"
    src.write_text("x")
    os.setxattr(src, XATTR, b"../../etc/passwd")
    assert cvmfs_hash(src) is None
    assert Store(tmp_path / ".data").add(src, "a.h", src.stat())["sha256"] == hashlib.sha256(b"x").hexdigest()


def _plan(tmp_path: Path, big: int) -> stage.Plan:
    src = tmp_path / "src"
    for pkg, size in (("A", big), ("B", 10)):
        (src / "Packages" / pkg / "lib").mkdir(parents=True)
        (src / "Packages" / pkg / "lib" / f"lib{pkg}.so").write_bytes(b"x" * size)
    units = [Unit("Packages/A", "A/1"), Unit("Packages/B", "B/1")]
    return stage.walk(src, units, IMAGE_ROOT)


def test_layers_are_the_big_directory_units_and_their_identity_follows_the_content(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AFKIT_LAYER_MIN_MB", "1")
    plan = _plan(tmp_path, 2 << 20)
    chosen = layers.choose(plan, ["Packages/A", "Packages/B"], None)
    assert [layer.unit for layer in chosen] == ["Packages/A"]
    assert layers.choose(plan, ["Packages/A", "Packages/B"], "zstd")[0].digest != chosen[0].digest
    (tmp_path / "src/Packages/A/lib/libA.so").write_bytes(b"y" * (3 << 20))
    again = layers.choose(
        stage.walk(tmp_path / "src", [Unit("Packages/A", "A/1")], IMAGE_ROOT), ["Packages/A"], None
    )
    assert again[0].digest != chosen[0].digest


def test_trace_reading_keeps_successful_paths_under_the_repository(tmp_path: Path) -> None:
    trace = tmp_path / "trace"
    trace.write_text(
        f'123 openat(AT_FDCWD, "{IMAGE_ROOT}/Packages/A/lib/libA.so", O_RDONLY|O_CLOEXEC) = 3\n'
        f'[pid 124] execve("{IMAGE_ROOT}/Packages/A/bin/../bin/tool", ["tool"], 0x7ffd /* 3 vars */) = 0\n'
        '125 openat(AT_FDCWD, "/etc/ld.so.cache", O_RDONLY|O_CLOEXEC) = 3\n'
        f'126 newfstatat(AT_FDCWD, "{IMAGE_ROOT}/../etc", {{st_mode=S_IFDIR|0755}}, 0) = 0\n'
    )
    assert narrow.traced_paths(trace, IMAGE_ROOT) == {"Packages/A/lib/libA.so", "Packages/A/bin/tool"}


def test_keep_set_follows_symlinks_on_the_way(tmp_path: Path) -> None:
    plan = stage.Plan(
        files=[],
        links=[("lib", "Packages/A/lib"), ("Packages/A/lib/current", f"{IMAGE_ROOT}/Packages/B/lib")],
    )
    keep = narrow.keep_set({"lib/current/libB.so"}, plan, IMAGE_ROOT)
    assert keep == {"lib", "Packages/A/lib/current", "Packages/B/lib/libB.so"}


def test_narrowed_spec_is_shrinkwrap_exact_entries(tmp_path: Path) -> None:
    plan = _plan(tmp_path, 10)
    sub = narrow.narrowed(plan, {"Packages/B/lib/libB.so"})
    assert [t.rel for t in sub.files] == ["Packages/B/lib/libB.so"]
    assert "Packages/B/lib" in sub.dirs and "Packages/A/lib" not in sub.dirs
    assert narrow.spec_lines(sub, "T", "repo")[1:] == ["^/Packages/B/lib/libB.so"]


def test_outcomes_name_what_differs() -> None:
    full = narrow.Outcome("c", 0, "a\nb\n", "")
    assert full.differs(narrow.Outcome("c", 0, "a\nb\n", "")) == ""
    assert "exit 0 in the full image, 1" in full.differs(narrow.Outcome("c", 1, "a\nb\n", ""))
    assert "stdout differs at line 2: 'b' vs 'B'" in full.differs(narrow.Outcome("c", 0, "a\nB\n", ""))
