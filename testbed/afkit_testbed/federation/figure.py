"""Draw the federation of a link file: the WAN namespace, the submit host and every site with its
address, storage, caches and link figures (matplotlib; the picture in docs/federation.md); and
what ``afkit federation measure`` measured: Gbit/s over time per site and cache scenario."""

from __future__ import annotations

import math
from pathlib import Path

from matplotlib.figure import Figure

from afkit.atomic import atomic_path
from afkit_testbed.federation import net
from afkit_testbed.federation.links import Federation
from afkit_testbed.federation.measure import MeasuredRead, Measurement


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
        if site.nodes:
            first, last = site.nodes[0], site.nodes[-1]
            caches += (f"\nclient nodes {first.namespace}..n{last.number}\n"
                       f"{first.address}-.{last.address.rsplit('.', 1)[1]}, "
                       f"{first.link.rate_mbit:g} Mbit/s each")  # fmt: skip
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


MARKER_MEANINGS = ((True, "cold read (not in the cache yet)"), (False, "warm read (cached) or no cache"))


def rates_figure(result: Measurement) -> Figure:
    """Gbit/s over time of ``afkit federation measure``'s reads (its ``timeline``s), one colour per
    site and cache scenario (same-site, remote no-cache, then each cache cold and warm: hollow
    markers for the cold read, filled for the warm one; each read its own line), the WAN link rate
    dashed; a log axis when the rates lie
    an order of magnitude apart, as they do between a WAN-capped and a local read."""
    from afkit.campaign.figures import legend, new_figure, rate_axis

    fig = new_figure(8, 6)
    ax = fig.subplots()
    lines: dict[tuple[str, str], list[MeasuredRead]] = {}
    for row in result["rows"]:
        lines.setdefault((row["site"], row["scenario"]), []).append(row)
    for i, ((site, scenario), reads) in enumerate(lines.items()):
        phases = [r["phase"] for r in reads]
        what = " then ".join(phases) if phases != ["(no cache)"] else "no cache"
        colour = f"C{i % 10}"  # the default colour cycle
        for k, r in enumerate(reads):  # each read its own line: nothing was read between them
            cold = r["phase"] == "cold"
            ax.plot([p[0] for p in r["timeline"]], [p[1] for p in r["timeline"]], lw=1.5, marker="o",
                    color=colour, mfc="white" if cold else colour,
                    label=f"{site}: {scenario} ({what})" if k == 0 else "_")  # fmt: skip
    for cold, meaning in MARKER_MEANINGS:
        ax.plot([], [], ls="none", marker="o", color="gray", mfc="white" if cold else "gray", label=meaning)
    wan = float(result["wan_gbps"])
    ax.axhline(wan, color="black", ls="--", lw=0.8, label=f"WAN link rate ({wan * 1000:g} Mbit/s)")
    rate_axis(ax, ([p[1] for r in reads for p in r["timeline"]] for reads in lines.values()),
              "throughput [Gbit/s]")  # fmt: skip
    ax.set_xlabel("time since the measurement started [s]")
    ax.set_title(f"Reads of {result['storage']}'s storage per site and cache scenario "
                 f"({result['size'] >> 20} MiB files, one per read)", fontsize=10)  # fmt: skip
    ax.grid(alpha=0.3, which="both")
    legend(ax)
    return fig


def draw_rates(result: Measurement, output: Path) -> Path:
    from afkit.campaign.figures import save

    save(rates_figure(result), output)
    return output
