"""Campaign datasets generated as AO2D by ROOT (generate.kind ao2d): the files, the manifest, kept
on a second run. The image's `apptainer exec … root.exe` is replaced by the cached real ROOT."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from afkit.bench import rootgen
from afkit.campaign import dataset
from afkit.errors import InvalidError


def test_ao2d_dataset_written_by_the_images_root(
    root_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import uproot

    seen: list[tuple[str, list[str]]] = []

    def root_in_image(
        image_json: str, storage_dir: Path, args: list[str], credential: object = None
    ) -> tuple[list[str], str]:
        seen.append((image_json, args))
        return [str(root_dir / "bin" / "root.exe")], str(rootgen.MACRO)

    monkeypatch.setattr(dataset, "image_root_command", root_in_image)
    spec: dict[str, Any] = {
        "storage": "disk",
        "generate": {"kind": "ao2d", "count": 2, "size_mb": 1, "prefix": "d/ao2d", "compression": "505"},
    }
    out, log = tmp_path / "m.json", tmp_path / "m.log"
    kwargs: dict[str, Any] = {"output": str(out), "log": str(log), "image": "image.json"}
    store = {"path": str(tmp_path / "store")}
    manifest = dataset.prepare("a", spec, store, apptainer_args=["--userns"], **kwargs)
    assert manifest["files"] == ["d/ao2d-0000.root", "d/ao2d-0001.root"]
    assert seen == [("image.json", ["--userns"])]
    first = tmp_path / "store" / "d" / "ao2d-0000.root"
    with uproot.open(first) as f:
        assert f.file.fCompress == 505
        assert f["DF_1000000/O2track"].num_entries > 0
    records = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    assert [r["kept"] for r in records] == [False, False]
    before = first.stat().st_mtime_ns
    dataset.prepare("a", spec, store, **kwargs)
    assert first.stat().st_mtime_ns == before, "a second run keeps the files"
    spec["generate"]["compression"] = "zlib:1"  # the campaign changed: its files are rewritten
    dataset.prepare("a", spec, store, **kwargs)
    with uproot.open(first) as f:
        assert f.file.fCompress == 101


def test_root_kinds_need_the_image(tmp_path: Path) -> None:
    spec = {"storage": "disk", "generate": {"kind": "esd", "count": 1, "size_mb": 2, "prefix": "e"}}
    with pytest.raises(InvalidError, match="needs the campaign's image"):
        dataset.prepare(
            "e", spec, {"path": str(tmp_path)}, output=str(tmp_path / "m"), log=str(tmp_path / "l")
        )
