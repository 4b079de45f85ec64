"""Draw the federation of a link file: the WAN namespace, the submit host and every site with its
address, storage, caches and link figures (matplotlib; the picture in docs/federation.md)."""

from __future__ import annotations

import math
from pathlib import Path

from afkit.atomic import atomic_path
from afkit.federation import net
from afkit.federation.links import Federation


def draw(fed: Federation, output: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sites = list(fed.sites.values())
    fig, ax = plt.subplots(figsize=(8, 6))
    ax.set_xlim(-1.6, 1.6)
    ax.set_ylim(-1.5, 1.5)
    ax.axis("off")
    box = {"boxstyle": "round,pad=0.4", "fc": "#e8eef7", "ec": "#345"}
    ax.text(
        0,
        0,
        "WAN namespace\ntoxiproxy :8474\n(one proxy per site's storage)",
        ha="center",
        va="center",
        bbox={**box, "fc": "#f7efe0"},
        fontsize=9,
    )
    ax.plot([0, 0], [-0.22, -1.1], color="#777", lw=1)
    ax.text(
        0,
        -1.2,
        f"submit host (testbed)\n{net.submit_address()} ({net.SUBMIT_IF}, unshaped)",
        ha="center",
        va="center",
        bbox={**box, "fc": "#eee"},
        fontsize=8,
    )
    for i, site in enumerate(sites):
        # spread over the upper half, left to right
        angle = math.radians(160 - 140 * i / max(len(sites) - 1, 1))
        x, y = 1.2 * math.cos(angle), 0.1 + 1.1 * math.sin(angle)
        caches = f"\ncaches of {site.cache_origin}: {', '.join(site.caches)}" if site.caches else ""
        ax.text(
            x,
            y,
            f"{site.name}\n{site.address}\norigin :1094{caches}",
            ha="center",
            va="center",
            bbox=box,
            fontsize=8,
        )
        ax.plot([0, x * 0.85], [0, y * 0.85], color="#345", lw=2, zorder=0)
        ax.text(
            x * 0.55,
            y * 0.55,
            f"{site.link.rate_mbit:g} Mbit/s tbf\n{site.link.latency_ms:g} ms (toxiproxy)",
            ha="center",
            va="center",
            fontsize=7,
            color="#a33",
            bbox={"fc": "white", "ec": "none"},
        )
    ax.set_title(f"afkit testbed federation ({fed.source.name})", fontsize=10)
    try:
        with atomic_path(output) as tmp:
            fig.savefig(tmp, bbox_inches="tight")
    finally:
        plt.close(fig)
    return output
