"""The fr-alpes study's figures: Tables 1 and 2 in the original's layout, and afkit's per-pair detail.

- ``table1.png``, ``table2.png``: per input location (columns) the range over every worker-node
  site (the column header names them) of input copy and processing (copy and processing) and of
  direct access (rows), seconds; afkit's table (with its extra row: the copy with other copies on
  the links) above the original's;
- ``pairs-sim.png``, ``pairs-reco.png``: every job's duration per (WN site → dataset site) pair,
  one panel per action, the pair's median marked: what the ranges are made of;
- ``copy-variation.png``: the input copies of both inputs, alone and with other copies on the
  links, on a log axis (the claim that the large input's copy varies much more).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from afkit.campaign.figures import log_scale, new_figure, save
from afkit.study.criteria import Range
from afkit.study.fralpes import ACTIONS, LABEL, TABLES, Steps, original_ranges
from afkit.study.model import Study

ROW_LABEL = {
    "input_copy": "Copy and processing: input copy",
    "processing": "Copy and processing: processing",
    "direct": "Direct access",
    "busy_copy": "Copy with other copies on the links: input copy",
}
BLUE, GREY, RED = "#1f4e9c", "#888888", "#c0392b"


def _cell(r: Range | None) -> str:
    return f"{r[0]:.4g}-{r[1]:.4g}" if r else "-"


def _draw_table(
    ax: Axes, title: str, rows: Sequence[str], locations: Sequence[str], wns: str, cells: list[list[str]]
) -> None:
    ax.axis("off")
    ax.set_title(title, fontsize=10)
    t = ax.table(
        cellText=cells,
        rowLabels=[ROW_LABEL[r] for r in rows],
        colLabels=[f"input at {loc}\nWN: {wns}" for loc in locations],
        loc="center",
        cellLoc="center",
    )
    t.auto_set_font_size(False)
    t.set_fontsize(8)
    t.scale(1.0, 2.2)


def table_figure(
    study: Study, steps: Steps, table: str, wns: Sequence[str], datas: Sequence[str], where: str
) -> Figure | None:
    """Table 1 (sim) or 2 (reco): afkit's above, the original's below, seconds; afkit's columns are
    the dataset sites DATAS (in their order) that have jobs, the header names the WN sites WNS."""
    mine = {a: steps.ranges(table, a) for a in (*ACTIONS, "busy_copy")}
    if not any(mine.values()):
        return None
    locations = [d for d in datas if any(d in r for r in mine.values())]
    rows = [a for a in (*ACTIONS, "busy_copy") if mine[a]]
    n = TABLES[table]
    fig = new_figure(3.2 + 2.0 * len(locations), 1.4 + 0.55 * (len(rows) + len(ACTIONS) + 2))
    top, bottom = fig.subplots(2, 1, height_ratios=[len(rows) + 1, len(ACTIONS) + 1])
    busy = f" ({steps.busy_jobs} copies at once)" if steps.busy_jobs else ""
    _draw_table(
        top,
        f"Table {n} from afkit's jobs ({where}): duration (s), range over WN sites{busy}",
        rows,
        locations,
        "-".join(wns),
        [[_cell(mine[a].get(loc)) for loc in locations] for a in rows],
    )
    orig = {a: original_ranges(study, table, a) for a in ACTIONS}
    olocs = list(next(iter(orig.values())))
    _draw_table(
        bottom,
        f"Table {n} of the original: duration (s)",
        ACTIONS,
        olocs,
        "-".join(str(w) for w in study.original["wn_locations"]["value"]),  # type: ignore[attr-defined]
        [[_cell(orig[a][loc]) for loc in olocs] for a in ACTIONS],
    )
    return fig


def pairs_figure(steps: Steps, table: str, wns: Sequence[str], datas: Sequence[str]) -> Figure | None:
    """Every job's duration per (WN site → dataset site) pair, one panel per action, the pairs in
    the order of WNS, then DATAS."""
    actions = [a for a in ACTIONS if steps.of(table, a)]
    if not actions:
        return None
    have = {p for a in (*ACTIONS, "busy_copy") for p in steps.of(table, a)}
    pairs = [(w, d) for w in wns for d in datas if (w, d) in have]
    fig = new_figure(2.0 + 0.55 * len(pairs) * len(actions), 4.0)
    axes = fig.subplots(1, len(actions), squeeze=False)[0]
    for ax, action in zip(axes, actions, strict=True):
        series = [(action, BLUE, "alone")]
        if action == "input_copy" and steps.of(table, "busy_copy"):
            series.append(("busy_copy", RED, f"{steps.busy_jobs} at once"))
        for key, colour, label in series:
            data = steps.of(table, key)
            offset = 0.15 if key == "busy_copy" else 0.0
            for i, pair in enumerate(pairs):
                vals = data.get(pair, [])
                if not vals:
                    continue
                ax.plot([i + offset] * len(vals), vals, "o", color=colour, alpha=0.6, markersize=4,
                        label=label if i == 0 else None)  # fmt: skip
                mid = statistics.median(vals)
                ax.plot([i + offset - 0.2, i + offset + 0.2], [mid, mid], "-", color=colour)
        ax.set_xticks(range(len(pairs)))
        ax.set_xticklabels([f"{wn}→{ds}" for wn, ds in pairs], rotation=60, ha="right", fontsize=8)
        ax.set_ylim(bottom=0)
        ax.set_title(LABEL[action], fontsize=10)
        ax.set_ylabel("seconds")
        if len(series) > 1:
            ax.legend(fontsize=8)
    fig.suptitle(f"Table {TABLES[table]}'s jobs per (WN site → dataset site) pair (bar: median)", fontsize=10)
    return fig


def copy_variation_figure(steps: Steps) -> Figure | None:
    """Input copy durations of both inputs, alone and with other copies on the links (log axis)."""
    groups = [
        (f"{table}: {'alone' if key == 'input_copy' else 'busy'}", steps.all_of(table, key))
        for table in TABLES
        for key in ("input_copy", "busy_copy")
    ]
    groups = [(name, vals) for name, vals in groups if vals]
    if not groups:
        return None
    fig = new_figure(6.4, 4.0)
    ax = fig.add_subplot()
    for i, (_, vals) in enumerate(groups):
        ax.plot([i] * len(vals), vals, "o", color=RED if "busy" in groups[i][0] else BLUE, alpha=0.6)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([name for name, _ in groups])
    if all(v > 0 for _, vals in groups for v in vals):
        log_scale(ax, "y")
    ax.set_ylabel("input copy (s)")
    ax.set_title("input copy: small (sim) and large (reco) input, alone and busy", fontsize=10)
    return fig


def write_all(
    study: Study, steps: Steps, wns: Sequence[str], datas: Sequence[str], out: Path, where: str
) -> list[tuple[str, Path]]:
    """(caption, path) of every figure written into OUT (WNS, DATAS: the WN and dataset sites)."""
    made: list[tuple[str, Path]] = []
    for table, n in TABLES.items():
        path = save(table_figure(study, steps, table, wns, datas, where), out / f"table{n}.png")
        if path:
            made.append((f"Table {n} redrawn from afkit's jobs, the original's below (seconds)", path))
    for table, n in TABLES.items():
        path = save(pairs_figure(steps, table, wns, datas), out / f"pairs-{table}.png")
        if path:
            made.append((f"Table {n}: afkit's jobs per (WN site → dataset site) pair", path))
    path = save(copy_variation_figure(steps), out / "copy-variation.png")
    if path:
        made.append(("input copy of the small and the large input, alone and with other copies", path))
    return made
