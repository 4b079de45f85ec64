"""``afkit study clean``: remove what one study run wrote, and nothing else.

A campaign study's run: the files its campaign generates on the storages visible from this host
(and their folders once empty), its results folder and its campaign folder (campaign file and
facility). A host study's run: its results folder and its folder of the facility (its device,
sources and servers are taken away by the run itself). A folder is removed only when it is one afkit
made for the run: a results folder named ``study-...-vN``, a campaign folder holding
``facility.json``. Storages not visible from here are named, not touched.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import sys
from pathlib import Path

from afkit.campaign import config
from afkit.errors import ExitCode

RESULTS_NAME = re.compile(r"study-[A-Za-z0-9_.-]+-v\d+")


def _say(text: str) -> None:
    print(f"afkit study clean: {text}", file=sys.stderr)


def generated(made: dict[str, object]) -> tuple[list[Path], list[str]]:
    """(the files the campaign MADE generates on storages visible here, the places on storages
    not visible from here)."""
    from afkit.campaign.dataset import generated_files

    files: list[Path] = []
    elsewhere: list[str] = []
    storages = made.get("storage")
    datasets = made.get("datasets")
    for spec in (datasets if isinstance(datasets, dict) else {}).values():
        if not isinstance(spec, dict) or not isinstance(storages, dict):
            continue
        gen, store = spec.get("generate"), storages.get(spec.get("storage"))
        if not isinstance(gen, dict) or not isinstance(store, dict):
            continue
        root = Path(str(store.get("path") or ""))
        if not store.get("path") or not root.is_dir():
            elsewhere.append(f"{store.get('url')}{store.get('path')}/{gen.get('prefix')}*")
            continue
        files += [root / f for f in generated_files(gen)]  # type: ignore[arg-type]
    return files, elsewhere


def remove_files(files: list[Path]) -> int:
    """Remove FILES, then each of their folders that is left empty (never one that holds anything
    else); how many files were there."""
    gone = 0
    for f in files:
        if f.is_file() or f.is_symlink():
            f.unlink()
            gone += 1
    for folder in sorted({f.parent for f in files}, key=lambda p: len(p.parts), reverse=True):
        with contextlib.suppress(OSError):  # not empty, or gone: left as it is
            folder.rmdir()
    return gone


def remove_folders(folders: list[Path]) -> None:
    """Each of FOLDERS that afkit made for a run (module docstring), removed whole."""
    for folder in folders:
        ours = RESULTS_NAME.fullmatch(folder.name) or (folder / "facility.json").is_file()
        if folder.is_dir() and not folder.is_symlink() and ours:
            shutil.rmtree(folder)
            _say(f"removed {folder}")


def host_run(results: Path, work: Path) -> int:
    remove_folders([results, work])
    return int(ExitCode.OK)


def campaign_run(path: Path) -> int:
    """The run whose campaign file is PATH."""
    c = config.load(path)
    files, elsewhere = generated(dict(c.config))
    gone = remove_files(files)
    remove_folders([c.results_dir, path.parent])
    _say(f"removed {gone} generated file(s) of campaign {c.name} from its storages")
    for place in elsewhere:
        _say(f"not visible from here, not removed: {place}")
    return int(ExitCode.OK)
