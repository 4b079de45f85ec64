"""Generators: random copies and AOD-like ROOT files with the seed's event sizes."""

from __future__ import annotations

from pathlib import Path

import pytest

from afkit import cli
from afkit.bench import gen, rootgen
from afkit.errors import ExitCode, UsageError


def test_random_copies_have_the_same_content_and_size(tmp_path: Path) -> None:
    assert (
        cli.main(["bench", "gen", "random", "--size", "100k", "--copies", "3", "--outdir", str(tmp_path)])
        == 0
    )
    files = sorted(tmp_path.glob("random-*.bin"))
    assert len(files) == 3
    contents = {f.read_bytes() for f in files}
    assert len(contents) == 1 and len(next(iter(contents))) == 100 * 1024
    assert len({f.stat().st_ino for f in files}) == 3, "copies must be separate files"
    assert not list(tmp_path.glob(".*part"))


def test_random_refuses_to_overwrite_without_force(tmp_path: Path) -> None:
    (tmp_path / "random-001.bin").write_bytes(b"mine")
    argv = ["bench", "gen", "random", "--size", "1k", "--copies", "2", "--outdir", str(tmp_path)]
    assert cli.main(argv) == ExitCode.UNSAFE
    assert (tmp_path / "random-001.bin").read_bytes() == b"mine"
    assert not (tmp_path / "random-000.bin").exists(), "nothing is written when a name is refused"
    assert cli.main([*argv, "--force"]) == 0
    assert (tmp_path / "random-001.bin").stat().st_size == 1024


def test_random_with_different_seeds_differs(tmp_path: Path) -> None:
    gen.write_random(tmp_path / "a", 4096, 1, False)
    gen.write_random(tmp_path / "b", 4096, 2, False)
    assert (tmp_path / "a").read_bytes() != (tmp_path / "b").read_bytes()


@pytest.mark.parametrize(("kind", "size", "events"), [("aod", "4MB", 9)])
def test_root_files_hit_the_event_size(tmp_path: Path, kind: str, size: str, events: int) -> None:
    import uproot

    assert cli.main(["bench", "gen", kind, "--size", size, "--outdir", str(tmp_path)]) == 0
    (path,) = tmp_path.glob(f"{kind}-*.root")
    model = gen.MODELS[kind]
    with uproot.open(path) as f:
        tree = f["Events"]
        assert tree.classname == "TTree"
        assert tree.num_entries == events
        ratio = tree.uncompressed_bytes / tree.compressed_bytes
        assert 1.3 < ratio < 4.0, f"unrealistic compression ratio {ratio:.2f}"
        assert len(tree["event"].array(library="np")) == events
    per_event = path.stat().st_size / events
    assert 0.85 * model.event_bytes < per_event < 1.2 * model.event_bytes


def test_event_sizes_are_the_seeds() -> None:
    assert gen.AOD.event_bytes == pytest.approx(10530e6 / 25990, rel=1e-3)
    assert rootgen.SHAPES["ao2d"].event_bytes == gen.AOD.event_bytes
    assert rootgen.SHAPES["esd"].event_bytes == pytest.approx(31457e6 / 17290, rel=1e-3)


def test_too_small_a_size_is_a_usage_error() -> None:
    with pytest.raises(UsageError):
        gen.events_for(1000, 1, gen.AOD)


def test_unknown_codec() -> None:
    with pytest.raises(UsageError):
        gen._codec("snappy:1")
