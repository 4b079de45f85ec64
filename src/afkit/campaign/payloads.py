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
from typing import Any

ANCHOR = "rootreadspeed"
KEYS = ("site", "dataset", "scenario", "access")


def _num(value: str | None) -> float:
    try:
        return float(value or 0)
    except ValueError:
        return 0.0


def _verdict(rows: list[dict[str, str]], payload: str) -> str:
    key = "readspeed_verdict" if payload == ANCHOR else "bottleneck"
    counts = Counter(r.get(key) or "unknown" for r in rows)
    return ", ".join(f"{v} ({n})" if len(counts) > 1 else v for v, n in counts.most_common())


def section(rows: list[dict[str, str]]) -> list[dict[str, Any]]:
    """The section's lines (none when no place had two payloads), anchor first in each place."""
    groups: dict[tuple[str, ...], dict[str, list[dict[str, str]]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        if r.get("type") == "analysis" and r.get("status") == "ok" and str(r.get("clients")) == "1":
            groups[tuple(str(r[k]) for k in KEYS)][r.get("payload") or "builtin"].append(r)
    out: list[dict[str, Any]] = []
    for key, by_payload in sorted(groups.items()):
        if len(by_payload) < 2:
            continue
        anchor = statistics.median(_num(r.get("events_per_s")) for r in by_payload.get(ANCHOR, [{}]))
        lines = []
        for payload, rs in by_payload.items():
            eps = statistics.median(_num(r.get("events_per_s")) for r in rs)
            lines.append({**dict(zip(KEYS, key, strict=True)), "payload": payload, "jobs": len(rs),
                          "eps": eps, "ratio": f"{eps / anchor:.3f}" if anchor else "",
                          "mbps": statistics.median(_num(r.get("throughput_MBps")) * 8 for r in rs),
                          "verdict": _verdict(rs, payload)})  # fmt: skip
        lines.sort(key=lambda ln: (ln["payload"] != ANCHOR, ln["payload"]))
        out += lines
    return out
