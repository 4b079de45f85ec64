"""Fixtures every unit test may use."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import xdistsupport
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text

# Modules whose tests share an expensive module- or session-scoped fixture, by group: pytest-xdist
# makes such a fixture once in every worker that runs a test using it, so a group's tests go to one
# worker, where it is made once (a campaign run, ROOT's files, the CVMFS fixture's trees).
SHARED_GROUPS = {
    "campaign/test_finished_campaign": "finished-campaign",  # finished: a campaign run by snakemake
    "campaign/test_campaign_cli": "campaign-cli",  # steps_finished: afkit campaign run
    "bench/test_bench_rootgen": "rootgen",  # ao2d, esd: files the real ROOT writes
    **dict.fromkeys(  # cvmfs_root, the CVMFS fixture's trees (image/conftest.py)
        ["image/test_build", "image/test_resolve", "image/test_resolve_lcg", "image/test_stage"], "cvmfs"
    ),
}


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist (run-tests runs the unit tests with -n)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Each test on its own, handed to the next free worker (as xdist's default, load), except the
    tests of a group of SHARED_GROUPS: one worker runs all of them, the largest groups first."""

    def scope_of(nodeid: str) -> str:
        module = nodeid.split("::", 1)[0].removeprefix("tests/unit/").removesuffix(".py")
        return SHARED_GROUPS.get(module, nodeid)

    return xdistsupport.scheduler(config, log, scope_of)


def drawn_texts(fig: Figure) -> list[Text]:
    """The texts a saved FIG shows: titles, axis labels, legend entries, and the labels of the
    ticks inside their axis' view (matplotlib keeps, and does not draw, the others)."""
    tick_texts: dict[int, bool] = {}
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            lo, hi = sorted(axis.get_view_interval())
            for tick in (*axis.get_major_ticks(), *axis.get_minor_ticks()):
                shown = lo - 1e-9 * abs(hi - lo) <= tick.get_loc() <= hi + 1e-9 * abs(hi - lo)
                for label in (tick.label1, tick.label2):
                    tick_texts[id(label)] = shown and label.get_visible()
    return [
        t for t in fig.findobj(Text)
        if t.get_visible() and t.get_text().strip() and tick_texts.get(id(t), True)
    ]  # fmt: skip


def _texts_outside(fig: Figure) -> list[str]:
    """The drawn texts whose extent leaves the figure (what a saved PNG would cut)."""
    FigureCanvasAgg(fig)
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    fig.draw(renderer)
    box = fig.bbox
    out = []
    for t in drawn_texts(fig):
        e = t.get_window_extent(renderer)
        if e.x0 < box.x0 - 0.5 or e.y0 < box.y0 - 0.5 or e.x1 > box.x1 + 0.5 or e.y1 > box.y1 + 0.5:
            out.append(t.get_text())
    return out


@pytest.fixture
def texts_outside() -> Callable[[Figure], list[str]]:
    """The figure check: ``texts_outside(fig)`` lists the drawn texts a saved FIG would cut."""
    return _texts_outside


@pytest.fixture(scope="session")
def root_dir() -> Path:
    """The real ROOT (PyPI `root`, unpacked in the shared upstream cache by the CVMFS fixture)."""
    import sys

    fixtures = str(Path(__file__).resolve().parents[1] / "fixtures")
    if fixtures not in sys.path:
        sys.path.insert(0, fixtures)
    from cvmfsfix import upstream  # type: ignore[import-not-found]

    root = Path(upstream.root_tree()) / "ROOT"
    assert (root / "bin" / "root.exe").is_file(), f"real ROOT missing under {root}"
    return root
