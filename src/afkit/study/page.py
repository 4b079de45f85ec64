"""The study page: the original beside afkit's rerun, every claim with its verdict.

``RESULTS/study/index.html`` (figures beside it as PNG) and ``RESULTS/study/verdicts.json`` (the
claims' verdicts, the numbers and the provenance, for tools). Written from the campaign's tables,
so that a page can be made again from whatever jobs have records (``afkit study page``).
"""

from __future__ import annotations

import html
import json
import platform
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from afkit.atomic import write_atomic
from afkit.study.criteria import Verdict
from afkit.study.machine import shown as shown_machine
from afkit.study.model import Study
from afkit.study.recipe import Facility


@dataclass(frozen=True)
class NumberRow:
    what: str
    original: str
    afkit: str
    scale: str


def _esc(text: object) -> str:
    return html.escape(str(text))


def verdicts_json(
    study: Study,
    fac: Facility,
    verdicts: dict[str, Verdict],
    numbers: Sequence[NumberRow],
    provenance: dict[str, object],
    machine: dict[str, object] | None = None,
) -> str:
    return (
        json.dumps(
            {
                "study": study.name,
                "title": study.title,
                "where": fac.where,
                "scaled": fac.scaled,
                "claims": [
                    {"id": c.id, "text": c.text, "original": c.original, **asdict(verdicts[c.id])}
                    for c in study.claims
                    if c.id in verdicts
                ],
                "numbers": [asdict(n) for n in numbers],
                "provenance": provenance,
                "machine": machine or {},
            },
            indent=2,
        )
        + "\n"
    )


def scale_rows(study: Study, fac: Facility) -> list[dict[str, str]]:
    """The box's scale factors with their values filled in (empty at a user's facility)."""
    if not fac.scaled:
        return []
    values = {**{k: str(v) for k, v in fac.params.items()}, **{k: str(v) for k, v in fac.facts.items()}}
    jobs = [int(j) for k, v in fac.params.items() if k.endswith("_jobs") and isinstance(v, list) for j in v]
    values["max_jobs"] = str(max(jobs, default=0))
    rows = []
    scale = study.box.get("scale", [])
    for s in scale if isinstance(scale, list) else []:
        rows.append({k: str(v).format(**values) for k, v in dict(s).items()})
    return rows


def render(
    study: Study,
    fac: Facility,
    verdicts: dict[str, Verdict],
    numbers: Sequence[NumberRow],
    figures: Sequence[tuple[str, Path]],
    provenance: dict[str, object],
    out: Path,
    machine: dict[str, object] | None = None,
) -> Path:
    """Write OUT/index.html and OUT/verdicts.json; return the page's path. MACHINE: what
    afkit.study.machine recorded of the machine the run was on."""
    out.mkdir(parents=True, exist_ok=True)
    counts = {s: sum(v.status == s for v in verdicts.values()) for s in ("pass", "fail", "not judgeable")}
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>afkit study {_esc(study.name)}</title>",
        "<style>body{font-family:sans-serif;max-width:72em;margin:1em auto}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:.25em .5em;vertical-align:top}.pass{background:#d8f0d8}"
        ".fail{background:#f6d5d5}.nj{background:#eee}</style></head><body>",
        f"<h1>{_esc(study.title)}</h1>",
        f"<p>Study <code>{_esc(study.name)}</code> rerun by afkit on {_esc(fac.where)}. Original: "
        f"{_esc(study.source.get('authors', ''))}. {_esc(study.source.get('what', ''))}</p>",
        f"<p><b>Verdicts:</b> {counts['pass']} pass, {counts['fail']} fail, {counts['not judgeable']} not "
        "judgeable.</p>",
        "<h2>Claims</h2><table><tr><th>claim</th><th>the original</th>"
        "<th>criterion (fixed before the run)</th><th>measured</th><th>verdict</th></tr>",
    ]
    for c in study.claims:
        v = verdicts.get(c.id)
        if v is None:
            continue
        cls = {"pass": "pass", "fail": "fail"}.get(v.status, "nj")
        parts.append(
            f"<tr><td>{_esc(c.text)}</td><td>{_esc(c.original)}</td><td>{_esc(v.criterion)}</td>"
            f"<td>{_esc(v.measured)}</td><td class='{cls}'>{_esc(v.status)}</td></tr>"
        )
    parts.append("</table>")
    parts.append(
        "<h2>The original's numbers beside afkit's</h2><table><tr><th>what</th><th>original</th>"
        "<th>afkit</th><th>scale</th></tr>"
    )
    parts += [
        f"<tr><td>{_esc(n.what)}</td><td>{_esc(n.original)}</td><td>{_esc(n.afkit)}</td>"
        f"<td>{_esc(n.scale)}</td></tr>"
        for n in numbers
    ]
    parts.append("</table>")
    scale = scale_rows(study, fac)
    if scale:
        parts.append(
            f"<h2>How the box is scaled</h2><p>{_esc(study.box.get('how', ''))}</p>"
            "<table><tr><th>what</th><th>original</th><th>box</th><th>note</th></tr>"
        )
        parts += [
            f"<tr><td>{_esc(r.get('what'))}</td><td>{_esc(r.get('original'))}</td><td>{_esc(r.get('box'))}"
            f"</td><td>{_esc(r.get('note'))}</td></tr>"
            for r in scale
        ]
        parts.append("</table><p>Rates are compared as shapes and ratios, never as absolute numbers.</p>")
    parts.append("<h2>The recipe's parameters in this run</h2><table>")
    parts += [f"<tr><th>{_esc(k)}</th><td>{_esc(v)}</td></tr>" for k, v in fac.params.items()]
    parts += [f"<tr><th>{_esc(k)}</th><td>{_esc(v)}</td></tr>" for k, v in fac.facts.items()]
    parts.append("</table>")
    parts.append("<h2>Figures</h2>")
    for caption, path in figures:
        parts.append(
            f"<figure><img src='{_esc(path.name)}' alt='{_esc(caption)}'>"
            f"<figcaption>{_esc(caption)}</figcaption></figure>"
        )
    parts.append(f"<h2>The machine</h2><p>{_esc(shown_machine(machine or {}))}</p>")
    parts.append("<h2>Provenance</h2><table>")
    parts += [f"<tr><th>{_esc(k)}</th><td>{_esc(v)}</td></tr>" for k, v in provenance.items()]
    parts.append("</table></body></html>\n")
    text = verdicts_json(study, fac, verdicts, numbers, provenance, machine)
    write_atomic(out / "verdicts.json", text, mode=0o644)
    page = out / "index.html"
    write_atomic(page, "\n".join(parts), mode=0o644)
    return page


def provenance(campaign_name: str, campaign_hash: str, rows_image: str, rows_tag: str) -> dict[str, object]:
    return {
        "campaign": campaign_name,
        "campaign hash": campaign_hash,
        "image sha256": rows_image or "(none)",
        "image tag": rows_tag or "(none)",
        "host": platform.node(),
        "made": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
