"""Input locations: for each (worker-node site, dataset) pair the URL or path a job reads.

The location comes from a Jinja2 template in ``templates/input-locations/`` (the campaign's
``locations.default``) or a per-pair override (``locations.pairs['SITE/DATASET']``).
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import jinja2

from afkit.campaign.config import Campaign, listed_files
from afkit.campaign.dataset import generated_files
from afkit.errors import InvalidError, NotFoundError
from afkit.paths import templates_dir


def builtin_dir() -> Path:
    return templates_dir() / "input-locations"


def builtin_templates() -> list[str]:
    return sorted(p.stem for p in builtin_dir().glob("*.j2"))


@dataclass(frozen=True)
class Location:
    site: str
    dataset: str
    scenario: str
    access: str
    template: str
    urls: tuple[str, ...]


def template_for(campaign: Campaign, site: str, dataset: str) -> str:
    """The template reference for a pair; InvalidError when the pair has none."""
    loc = campaign.config["locations"]
    ref = loc["pairs"].get(f"{site}/{dataset}") or loc.get("default")
    if not ref:
        raise InvalidError(
            f"no input-location template for the pair (site {site!r}, dataset {dataset!r})",
            hint=f"add locations.pairs['{site}/{dataset}'] or a locations.default "
            f"(built-in templates: {', '.join(builtin_templates())})",
        )
    return str(ref)


def _template_path(campaign: Campaign, ref: str) -> Path:
    if ref.endswith(".j2") or "/" in ref:
        return campaign.resolve(ref)
    return builtin_dir() / f"{ref}.j2"


@cache
def _compile(path: Path) -> jinja2.Template:
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=False)
    return env.from_string(path.read_text(encoding="utf-8"))


def dataset_files(campaign: Campaign, dataset: str) -> list[str]:
    ds = campaign.config["datasets"][dataset]
    if "files" in ds:
        return listed_files(ds, campaign.config["storage"][ds["storage"]])
    return generated_files(ds["generate"])


def render(
    campaign: Campaign, site: str, dataset: str, scenario: str, access: str, file: str
) -> tuple[str, str]:
    """(template reference, location) for one file."""
    cfg = campaign.config
    ref = template_for(campaign, site, dataset)
    path = _template_path(campaign, ref)
    if not path.is_file():
        raise NotFoundError(
            f"input-location template {ref!r} for the pair ({site}, {dataset}) not found: {path}",
            hint=f"built-in templates: {', '.join(builtin_templates())}; or give a path to a .j2 file",
        )
    ds = cfg["datasets"][dataset]
    store_name = ds["storage"]
    st = cfg["storage"][store_name]
    store = {**st, "name": store_name, "path": st.get("path", "").rstrip("/")}
    cache_url = "" if scenario == "origin" else st["caches"].get(scenario, "")
    wn_cfg = cfg["sites"][site]
    ctx: Mapping[str, object] = {
        "wn": {**wn_cfg, "name": site},
        # the worker-node site's own storage (sites.SITE.storage), e.g. {{ wn_storage.url }}
        "wn_storage": {**cfg["storage"][wn_cfg["storage"]], "name": wn_cfg["storage"]},
        "dataset": {**ds, "name": dataset},
        "storage": store,
        "scenario": scenario,
        "access": access,
        "cache": cache_url,
        "file": file,
        "export_path": posixpath.normpath(posixpath.join("/", st["export"], file)),
    }
    try:
        out = _compile(path).render(ctx).strip()
    except jinja2.TemplateError as err:
        raise InvalidError(f"input-location template {path} failed for ({site}, {dataset}): {err}") from err
    if not out:
        raise InvalidError(
            f"input-location template {ref!r} gave an empty location for ({site}, {dataset}, {scenario})",
            hint="the template must print a URL or a path for every pair it is used for",
        )
    return ref, out


def resolve(campaign: Campaign, site: str, dataset: str, scenario: str, access: str) -> Location:
    files = dataset_files(campaign, dataset)
    urls = []
    ref = ""
    for f in files:
        ref, url = render(campaign, site, dataset, scenario, access, f)
        urls.append(url)
    return Location(site, dataset, scenario, access, ref, tuple(urls))


def used_scenarios(campaign: Campaign) -> list[str]:
    seen: list[str] = []
    for bench in campaign.config["benchmarks"]:
        for s in bench["sweep"]["scenario"]:
            if s not in seen:
                seen.append(s)
    return seen or ["origin"]


def matrix(campaign: Campaign, scenarios: list[str] | None = None) -> list[Location]:
    """Every (site, dataset) pair and scenario, in campaign order (access mode: direct)."""
    cfg = campaign.config
    out = []
    for scenario in scenarios or used_scenarios(campaign):
        for site in cfg["sites"]:
            for ds in cfg["datasets"]:
                store = cfg["storage"][cfg["datasets"][ds]["storage"]]
                if scenario != "origin" and scenario not in store["caches"]:
                    continue
                out.append(resolve(campaign, site, ds, scenario, "direct"))
    return out


def format_matrix(locations: list[Location]) -> str:
    rows = [("SITE", "DATASET", "SCENARIO", "TEMPLATE", "LOCATION (first file)", "FILES")]
    for loc in locations:
        rows.append((loc.site, loc.dataset, loc.scenario, loc.template, loc.urls[0], str(len(loc.urls))))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    lines = []
    for r in rows:
        lines.append("  ".join(c.ljust(w) for c, w in zip(r[:-1], widths, strict=True)) + "  " + r[-1])
    return "\n".join(lines)
