"""A study's campaign: the recipe (datasets and benchmarks by role) filled from a facility.

The facility is either the user's (``--sites FILE``: the campaign's ``image``, ``sites`` and
``storage`` keys, plus ``roles``, which names fill the study's parts, and optionally ``params``,
the recipe's parameters) or the federation in the box, read from what ``afkit federation urls``
prints (the box's parameters, scaled, from the study file). The result is an ordinary campaign
file that ``afkit campaign run`` runs.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import cast

from afkit import yamlio
from afkit.atomic import write_atomic
from afkit.campaign.config import junk, shown
from afkit.errors import InvalidError, NotFoundError, PrereqError, UsageError
from afkit.study.model import Study

SUBMIT = "submit"  # the box's role value: a local site on the federation's submit host
FACILITY_KEYS = ("image", "sites", "storage", "roles")


@dataclass
class Facility:
    """Where a study runs: the campaign keys, the roles filled, the parameters, and how it was scaled."""

    image: dict[str, object]
    sites: dict[str, object]
    storage: dict[str, object]
    roles: dict[str, object]
    params: dict[str, object]
    where: str  # "the federation in the box" or the sites file's path
    scaled: bool = False
    facts: dict[str, object] = field(default_factory=dict)  # box: server capacity, servers, ...


def merged_params(study: Study, given: object, where: str) -> dict[str, object]:
    """STUDY's parameters with a sites file's ``params`` (GIVEN, read from WHERE) over them
    (InvalidError for a mapping that is none, or a parameter the study lacks)."""
    given = given or {}
    if not isinstance(given, dict):
        raise InvalidError(f"{where}: params: expected a mapping, not {shown(given)}",
                           hint="docs/studies.md, 'Running a study at your sites'")  # fmt: skip
    unknown = sorted(str(k) for k in set(given) - set(study.params))
    if unknown:
        raise InvalidError(
            f"{where}: params.{unknown[0]}: study {study.name} has no such parameter",
            hint=f"parameters: {', '.join(study.params)}",
        )
    return {**study.params, **given}


def save(fac: Facility, path: Path) -> None:
    """PATH: what ``afkit study page`` needs to make a study's page again (where it ran, with which
    parameters)."""
    write_atomic(path, json.dumps(asdict(fac), indent=2) + "\n", mode=0o644)


def saved(study: Study, path: Path) -> Facility:
    """The facility :func:`save` wrote to PATH (NotFoundError when the study has not run here)."""
    if not path.is_file():
        raise NotFoundError(f"study {study.name} has not been run here ({path} does not exist)",
                            hint=f"afkit study run {study.name}")  # fmt: skip
    return Facility(**json.loads(path.read_text(encoding="utf-8")))


def from_sites_file(study: Study, path: Path) -> Facility:
    """The facility of the user's sites file PATH (InvalidError naming the key that is wrong)."""
    yamlio.require_file(path, "sites", "give a sites YAML file (docs/studies.md, 'At your sites')")
    data = yamlio.read(path, "sites")
    if not isinstance(data, dict):
        raise InvalidError(f"{path}: expected a mapping with keys {', '.join(FACILITY_KEYS)}")
    wrong = junk(data)  # what no campaign holds (keys that are not text, NaN, control characters)
    if wrong:
        raise InvalidError(f"{path}: {wrong}", hint="docs/studies.md, 'Running a study at your sites'")
    missing = [k for k in FACILITY_KEYS if k not in data]
    if missing:
        raise InvalidError(
            f"{path}: missing keys {', '.join(missing)}",
            hint=f"study {study.name} needs roles: {', '.join(study.roles)} (afkit study show {study.name})",
        )
    extra = sorted(set(data) - {*FACILITY_KEYS, "params"})
    if extra:
        raise InvalidError(
            f"{path}: unknown keys {', '.join(extra)}",
            hint=f"a sites file holds {', '.join(FACILITY_KEYS)} and params",
        )
    mappings = [k for k in FACILITY_KEYS if k != "roles"]  # roles: checked below, with its own hint
    mappings += ["params"] if data.get("params") is not None else []  # params may be left empty
    for key in mappings:
        if not isinstance(data[key], dict):
            raise InvalidError(f"{path}: {key}: expected a mapping, not {shown(data[key])}",
                               hint="docs/studies.md, 'Running a study at your sites'")  # fmt: skip
    if not isinstance(data["roles"], dict):
        raise InvalidError(
            f"{path}: roles: expected a mapping of role to names, not {shown(data['roles'])}",
            hint=f"roles: {', '.join(study.roles)} (afkit study show {study.name})",
        )
    params = merged_params(study, data.get("params"), str(path))
    fac = Facility(
        image=dict(data["image"]),
        sites=dict(data["sites"]),
        storage=dict(data["storage"]),
        roles=dict(data["roles"]),
        params=params,
        where=str(path),
    )
    check_roles(study, fac)
    return fac


ERROR, HINT = "afkit: error: ", "afkit: hint: "  # how afkit.cli.print_error starts its lines


def federation_urls() -> dict[str, object]:
    """What ``afkit federation urls`` prints (the running federation), as JSON."""
    afkit = [sys.executable, "-m", "afkit"]
    proc = subprocess.run([*afkit, "federation", "urls"], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines()
        said = {p: ln.removeprefix(p) for ln in lines for p in (ERROR, HINT) if ln.startswith(p)}
        # the command's own error and hint: the federation is not up, or (exit 3) the testbed's
        # package that provides the command is not installed (afkit.cli.PLUGINS)
        error = said.get(ERROR) or (lines[-1] if lines else str(proc.returncode))
        todo = said.get(HINT) or "start it (scripts/testbed federation up)"
        raise PrereqError(
            f"the federation in the box is not available (afkit federation urls: {error})",
            hint=f"{todo}; or run the study at your sites with --sites FILE",
        )
    try:
        return cast("dict[str, object]", json.loads(proc.stdout))
    except ValueError as err:
        raise InvalidError(f"afkit federation urls printed no JSON: {err}") from err


def from_federation(
    study: Study, urls: dict[str, object], image: Path, token: Path | None = None
) -> Facility:
    """The facility of the federation in the box (URLS: ``afkit federation urls``), scaled; a
    guarded federation's storages with the credential TOKEN (a token file of its issuer) and its
    CA bundle."""
    if not image.is_file():
        raise NotFoundError(
            f"no image at {image}",
            hint="make demo links the afkit bench image as build/bench.sif; or give --image SIF",
        )
    fsites = cast("dict[str, dict[str, object]]", urls.get("sites", {}))
    storage: dict[str, dict[str, object]] = {
        name: {"url": s["storage_url"], "path": s["data"]} for name, s in fsites.items()
    }
    guard = cast("dict[str, str] | None", urls.get("guard"))
    if guard is not None and token is None:
        hint = ("give --token FILE, a token of its issuer (as root in the testbed: afkit federation "
                "token --scope storage.read:/ --scope storage.create:/ -o FILE)")  # fmt: skip
        raise UsageError("the federation in the box is guarded: its storage wants a WLCG token", hint=hint)
    if guard is not None and token is not None:
        for store in storage.values():
            store["credential"] = {"token": str(token.absolute()), "ca": guard["ca_bundle"]}
    for s in fsites.values():  # a site's caches stand in front of the storage of its cache_origin
        origin = s.get("cache_origin")
        if origin in storage and s.get("caches"):
            storage[str(origin)]["caches"] = dict(cast("dict[str, str]", s["caches"]))
    roles = dict(study.box_roles)
    for rname, value in roles.items():
        for v in value if isinstance(value, list) else [value]:
            if v != SUBMIT and v not in fsites:
                raise InvalidError(
                    f"study {study.name}: box role {rname} names {v!r}, not a site of the "
                    f"federation ({', '.join(fsites)})"
                )
    first = next(iter(fsites))
    sites: dict[str, object] = {}
    for rname, value in roles.items():
        if value == SUBMIT:  # the submit host: unshaped to the WAN, every site's storage across its link
            sites[SUBMIT] = {"executor": "local", "storage": first, "apptainer_args": ["--userns"]}
        elif study.roles[rname].kind in ("site", "site-list"):
            for v in value if isinstance(value, list) else [value]:
                sites[str(v)] = _box_site(str(v), fsites[str(v)], bool(study.box.get("nodes")))
    rates = {n: float(cast(float, s.get("rate_mbit", 0))) for n, s in fsites.items()}
    server = roles.get("server")
    servers = roles.get("servers") if isinstance(roles.get("servers"), list) else []
    wan = min(rates.values(), default=0.0)
    node_rates = [float(cast(float, n["rate_mbit"])) for s in fsites.values()
                  for n in cast("list[dict[str, object]]", s.get("nodes") or [])]  # fmt: skip
    facts: dict[str, object] = {
        "wan": f"{wan:g} Mbit/s",
        "wan_rate_MBps": wan / 8,
        "node_link": f"{min(node_rates):g} Mbit/s" if node_rates else "n/a",
        "server_capacity": f"{rates.get(str(server), 0) / 8:g} MB/s" if server else "n/a",
        "servers": len(cast(list[object], servers)),
        "links": {n: f"{r:g} Mbit/s" for n, r in rates.items()},
    }
    return Facility(
        image={"sif": str(image.absolute())},
        sites=sites,
        storage=dict(storage),
        roles=roles,
        params=dict(study.box_params),
        where="the federation in the box",
        scaled=True,
        facts=facts,
    )


def _box_site(name: str, fsite: dict[str, object], on_nodes: bool) -> dict[str, object]:
    """A federation site as a campaign site: its jobs in its namespace (or spread over its client
    nodes, ON_NODES); a site with caches binds their directory, as the site mounts its cache file
    system on its worker nodes (DCA and DCOTF hand a client the cached file itself). The cache
    directory is the federation's layout: SITE/storage beside SITE/data (docs/federation.md)."""
    args = ["--userns"]
    if fsite.get("caches"):
        cache_dir = str(Path(str(fsite["data"])).parent / "storage")
        args += ["--bind", f"{cache_dir}:{cache_dir}:ro"]
    site: dict[str, object] = {"executor": "local", "storage": name, "apptainer_args": args}
    nodes = cast("list[dict[str, object]]", fsite.get("nodes") or [])
    if on_nodes and nodes:
        site["node_netns"] = [str(n["namespace"]) for n in nodes]
    else:
        site["netns"] = name
    return site


def check_roles(study: Study, fac: Facility) -> None:
    """Every required role filled, with names the facility has (InvalidError naming the role)."""
    for role in study.roles.values():
        value = fac.roles.get(role.name)
        if value is None:
            if role.optional:
                continue
            raise InvalidError(
                f"{fac.where}: roles.{role.name} is missing: {role.doc}",
                hint=f"name a {role.kind.replace('-list', ' list')} of the file",
            )
        names = value if isinstance(value, list) else [value]
        for n in names:
            if not isinstance(n, str):
                kind = role.kind.replace("-list", " list")
                raise InvalidError(f"{fac.where}: roles.{role.name}: {shown(n)} is not a name",
                                   hint=f"name a {kind} of the file")  # fmt: skip
        if role.kind.endswith("-list") and not isinstance(value, list):
            what = "site" if role.kind == "site-list" else "storage"
            raise InvalidError(f"{fac.where}: roles.{role.name} must be a list of {what} names")
        is_site = role.kind in ("site", "site-list")
        pool = fac.sites if is_site else fac.storage
        for n in names:
            if n not in pool:
                kind = "sites" if is_site else "storage"
                raise InvalidError(
                    f"{fac.where}: roles.{role.name}: {n!r} is not in {kind} "
                    f"({', '.join(map(str, pool)) or 'none'})"
                )


def fill(value: object, params: dict[str, object]) -> object:
    """VALUE with every whole-string "{param}" (in mappings and lists too) replaced by the parameter's
    value (UsageError naming a parameter the study does not have)."""
    if isinstance(value, dict):
        return {k: fill(v, params) for k, v in value.items()}
    if isinstance(value, list):
        return [fill(v, params) for v in value]
    if isinstance(value, str) and value.startswith("{") and value.endswith("}"):
        name = value[1:-1]
        if name not in params:
            raise UsageError(f"the recipe names a parameter {name!r} that is not set",
                             hint=f"parameters: {', '.join(params)}")  # fmt: skip
        return params[name]
    return value


def dataset_name(template: str, storage: str) -> str:
    return f"{template}-{storage}"


def _keyed_prefix(spec: dict[str, object], study: Study, key: str) -> dict[str, object]:
    """SPEC with a generated dataset's prefix afkit/study/NAME/... moved to afkit/study/NAME-KEY/..."""
    gen = spec.get("generate")
    if not key or not isinstance(gen, dict):
        return spec
    prefix = str(gen.get("prefix", ""))
    box = f"afkit/study/{study.name}"
    if prefix == box or prefix.startswith(box + "/"):
        prefix = f"afkit/study/{keyed(study, key)}" + prefix[len(box) :]
    else:
        prefix = f"{prefix}-{key}"
    return {**spec, "generate": {**gen, "prefix": prefix}}


def _names(filled: object) -> list[str]:
    return [str(s) for s in (filled if isinstance(filled, list) else [filled])]


def keyed(study: Study, key: str) -> str:
    """The study's name for one place it runs: NAME in the box, NAME-KEY for a sites file's run
    (KEY: afkit.study.cli.run_key), so that two runs never share a results folder, a campaign file
    or the storage paths of their generated data."""
    return f"{study.name}-{key}" if key else study.name


def campaign(study: Study, fac: Facility, key: str = "") -> dict[str, object]:
    """The campaign (a campaign file's mapping) of STUDY at FAC: the recipe's benchmarks whose role
    the facility fills, at its ``workers`` site (or sites: a site-list role), each dataset template
    made once per storage; where each site reads each dataset is the recipe's ``locations``
    (default: ``remote``, never a local mount). KEY (a sites file's run) keys its name and its
    generated data's prefixes (afkit/study/NAME-KEY/...)."""
    recipe = study.recipe
    templates = cast("dict[str, dict[str, object]]", recipe["datasets"])
    benchmarks: list[dict[str, object]] = []
    datasets: dict[str, object] = {}
    workers = _names(fac.roles["workers"])  # one site, or a list of them
    for b in cast("list[dict[str, object]]", recipe["benchmarks"]):
        filled = fac.roles.get(str(b["role"]))
        if filled is None:
            continue  # an optional role the facility does not fill: its claims are not judged
        bench = cast(
            "dict[str, object]", fill({k: v for k, v in b.items() if k not in ("role",)}, fac.params)
        )
        names = []
        for t in cast("list[str]", b["datasets"]):
            for s in _names(filled):
                name = dataset_name(t, s)
                spec = cast("dict[str, object]", fill(templates[t], fac.params))
                datasets.setdefault(name, {"storage": s, **_keyed_prefix(spec, study, key)})
                names.append(name)
        bench["sites"] = workers
        bench["datasets"] = names
        benchmarks.append(bench)
    if not benchmarks:
        raise UsageError(f"study {study.name}: no part of the recipe has its role filled",
                         hint=f"roles: {', '.join(study.roles)}")  # fmt: skip
    return {
        "name": f"study-{keyed(study, key)}",
        "version": 1,
        "image": fac.image,
        "sites": fac.sites,
        "storage": fac.storage,
        "datasets": datasets,
        "locations": recipe.get("locations", {"default": "remote"}),
        "benchmarks": benchmarks,
    }
