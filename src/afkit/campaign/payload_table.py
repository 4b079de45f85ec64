"""The report's payload section: an analysis benchmark's payloads side by side on the same inputs.

For every place (the cell of afkit.campaign.cells but the benchmark and its payload: site, dataset,
scenario, access, nodes, ...) where analysis jobs of one client ran with more than one payload
(afkit's ``root`` and ``builtin``/``afkit-bench`` uproot payloads, ``rootreadspeed``, ROOT's own
tool), one line per benchmark and payload: median events/s and Mbit/s over its successful jobs, the verdict
(rootreadspeed's own, ``readspeed_verdict``, for it; afkit's bottleneck verdict for the others) and
events/s as a ratio of rootreadspeed's (the anchor, when it ran there). Rows of tables written
before ``payload`` was a column count as ``builtin``.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict

from afkit.campaign import cells
from afkit.campaign.rows import JobRow

ANCHOR = "rootreadspeed"
KEYS = ("site", "dataset", "scenario", "access")  # the section's own place columns
# a place: the cell (afkit.campaign.cells) but the benchmark and its payload, the two things set
# side by side; every other key (nodes, duration, ...) must agree
PLACE = cells.keys(without=("bench", "payload"))


def _verdict(rows: list[JobRow], payload: str) -> str:
    counts = Counter((r.readspeed_verdict if payload == ANCHOR else r.bottleneck) or "unknown" for r in rows)
    return ", ".join(f"{v} ({n})" if len(counts) > 1 else v for v, n in counts.most_common())


def _eps(rows: list[JobRow]) -> float:
    """Median events/s of ROWS (0 without rows: no anchor)."""
    return statistics.median(r.events_per_s or 0.0 for r in rows) if rows else 0.0


def section(rows: list[JobRow]) -> list[dict[str, object]]:
    """The section's lines (none when no place had two payloads), anchor first in each place; a
    line is one benchmark's payload there. ``extra``: {label: value} of the cell keys beyond KEYS
    and the payload whose values differ among the lines (the table's further columns)."""
    groups: dict[cells.Cell, dict[tuple[str, str], list[JobRow]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        if r.type == "analysis" and r.status == "ok" and r.clients == 1:
            payload = str(cells.BY_NAME["payload"].of(r))
            groups[cells.cell_of(r, PLACE)][(payload, r.bench)].append(r)
    places = {place: lines for place, lines in groups.items() if len({p for p, _ in lines}) > 1}
    full = [cells.cell_of(rs[0]) for lines in places.values() for rs in lines.values()]
    extra = [k for k in cells.varying(full) if k.column not in (*KEYS, "payload")]
    out: list[dict[str, object]] = []
    for place, by_payload in sorted(places.items(), key=lambda kv: cells.sort_key(kv[0], PLACE)):
        named = cells.named(place, PLACE)
        anchors = [r for (p, _), rs in by_payload.items() if p == ANCHOR for r in rs]
        anchor = _eps(anchors)
        lines: list[tuple[bool, str, str, dict[str, object]]] = []
        for (payload, bench), rs in by_payload.items():
            eps = _eps(rs)
            cell = cells.named(cells.cell_of(rs[0]))
            line: dict[str, object] = {
                **{k: named[k] for k in KEYS}, "payload": payload, "jobs": len(rs), "eps": eps,
                "ratio": f"{eps / anchor:.3f}" if anchor else "",
                "mbps": statistics.median((r.throughput_MBps or 0.0) * 8 for r in rs),
                "verdict": _verdict(rs, payload),
                "extra": {k.label: k.show(cell[k.column]) for k in extra},
            }  # fmt: skip
            lines.append((payload != ANCHOR, payload, bench, line))
        out += [line for *_, line in sorted(lines, key=lambda t: (t[0], t[1], t[2]))]
    return out
