"""The report's payload section: an analysis benchmark's payloads side by side on the same inputs.

For every (site, dataset, scenario, access) where analysis jobs of one client ran with more than one
payload (afkit's ``root`` and ``builtin``/``afkit-bench`` uproot payloads, ``rootreadspeed``, ROOT's
own tool), one line per payload: median events/s and Mbit/s over its successful jobs, the verdict
(rootreadspeed's own, ``readspeed_verdict``, for it; afkit's bottleneck verdict for the others) and
events/s as a ratio of rootreadspeed's (the anchor, when it ran there). Rows of tables written
before ``payload`` was a column count as ``builtin``.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict

from afkit.campaign.rows import JobRow

ANCHOR = "rootreadspeed"
KEYS = ("site", "dataset", "scenario", "access")


def _verdict(rows: list[JobRow], payload: str) -> str:
    counts = Counter((r.readspeed_verdict if payload == ANCHOR else r.bottleneck) or "unknown" for r in rows)
    return ", ".join(f"{v} ({n})" if len(counts) > 1 else v for v, n in counts.most_common())


def _eps(rows: list[JobRow]) -> float:
    """Median events/s of ROWS (0 without rows: no anchor)."""
    return statistics.median(r.events_per_s or 0.0 for r in rows) if rows else 0.0


def section(rows: list[JobRow]) -> list[dict[str, object]]:
    """The section's lines (none when no place had two payloads), anchor first in each place."""
    groups: dict[tuple[str, str, str, str], dict[str, list[JobRow]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        if r.type == "analysis" and r.status == "ok" and r.clients == 1:
            groups[(r.site, r.dataset, r.scenario, r.access)][r.payload or "builtin"].append(r)
    out: list[dict[str, object]] = []
    for key, by_payload in sorted(groups.items()):
        if len(by_payload) < 2:
            continue
        anchor = _eps(by_payload.get(ANCHOR, []))
        lines: list[tuple[bool, str, dict[str, object]]] = []
        for payload, rs in by_payload.items():
            eps = _eps(rs)
            line: dict[str, object] = {
                **dict(zip(KEYS, key, strict=True)), "payload": payload, "jobs": len(rs), "eps": eps,
                "ratio": f"{eps / anchor:.3f}" if anchor else "",
                "mbps": statistics.median((r.throughput_MBps or 0.0) * 8 for r in rs),
                "verdict": _verdict(rs, payload),
            }  # fmt: skip
            lines.append((payload != ANCHOR, payload, line))
        out += [line for _, _, line in sorted(lines, key=lambda t: (t[0], t[1]))]
    return out
