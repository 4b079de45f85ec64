"""Load a campaign file: YAML → defaults from the JSON Schema → validated, normalised dict.

Errors name the bad key (as a dotted path) and, for enumerations, the allowed values.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import math
import posixpath
import re
import sys
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import NotRequired, Protocol, TypedDict, cast

import jsonschema
from jsonschema.protocols import Validator

from afkit import yamlio
from afkit.campaign import executors
from afkit.campaign.layout import ResultsLayout
from afkit.errors import AfkitError, InvalidError
from afkit.paths import beside, workflow_files


# The validated campaign (schema defaults filled in: keys with a default are always there), as the
# schema (workflows/schemas/campaign.schema.yaml) describes it.
class Resources(TypedDict):
    cores: int
    mem_mb: int
    runtime: int


class SiteConfig(TypedDict):
    executor: str
    storage: str
    scratch: str
    nodes: int
    resources: Resources
    apptainer_args: list[str]
    env: dict[str, str]
    held_grace: int
    shared_fs: bool
    link_rate: NotRequired[str]
    netns: NotRequired[str]
    node_netns: NotRequired[list[str]]
    requirements: NotRequired[str]
    partition: NotRequired[str]


class CredentialConfig(TypedDict):
    """A guarded storage's credential: the files (token or proxy; CA bundle), never the secret."""

    token: NotRequired[str]
    proxy: NotRequired[str]
    ca: NotRequired[str]
    expiry_margin: int


class StorageConfig(TypedDict):
    url: str
    export: str
    caches: dict[str, str]
    path: NotRequired[str]
    credential: NotRequired[CredentialConfig]


class Generate(TypedDict):
    count: int
    size_mb: float
    prefix: str
    kind: NotRequired[str]  # random (default), ao2d, esd
    compression: NotRequired[str | int]  # ao2d/esd: ROOT's setting


class DatasetConfig(TypedDict):
    storage: str
    tree: str
    branches: list[str]
    files: NotRequired[list[str]]
    generate: NotRequired[Generate]


def file_below(entry: str, export: str) -> str | None:
    """ENTRY of a dataset's ``files`` relative to its storage's EXPORT: a relative entry as it is;
    an absolute one is a path in the storage's namespace (as ``xrdfs ls`` names it), the part after
    EXPORT, or None when it is not below EXPORT. With the default export ``/`` every absolute entry
    is below it: ``/a/f.root`` is ``a/f.root``, as afkit has always read it."""
    if not entry.startswith("/"):
        return entry
    root = posixpath.normpath(export).rstrip("/") + "/"
    return entry[len(root) :] if entry.startswith(root) and len(entry) > len(root) else None


def listed_files(ds: DatasetConfig, storage: StorageConfig) -> list[str]:
    """The files DS lists, each relative to its STORAGE's export (:func:`file_below`)."""
    files = []
    for entry in ds.get("files", []):
        rel = file_below(entry, storage["export"])
        if rel is None:  # validate refuses it: a dataset given without validation
            raise InvalidError(f"dataset file {entry!r} is not below its storage's export "
                               f"{storage['export']!r}")  # fmt: skip
        files.append(rel)
    return files


class LocationsConfig(TypedDict):
    default: str | None
    pairs: dict[str, str]


class Sweep(TypedDict):
    clients: list[int]
    jobs: list[int]
    nodes: list[int]
    block_size: list[str]
    stride: list[str]
    scenario: list[str]
    access: list[str]
    repetitions: int


class RootSettings(TypedDict):
    """A benchmark's ``root`` key: how payload root's ROOT reads (afkit.bench.rootread)."""

    reader: str
    work: str
    cache_mb: NotRequired[float]


class BenchmarkConfig(TypedDict):
    name: str
    type: str
    sites: list[str]
    datasets: list[str]
    payload: str
    duration: float
    interval: float
    sweep: Sweep
    root: NotRequired[RootSettings]
    demand: NotRequired[str]  # a rate, e.g. 2.5MB/s: each client's reads are paced to it
    spread: bool  # train: a wave's jobs spread over the datasets


class ImageBuild(TypedDict):
    profile: str
    tag: str
    base: NotRequired[str]
    compression: NotRequired[str]  # the SIF's squashfs compression


class ImageConfig(TypedDict):
    python: str
    sif: NotRequired[str]
    login: NotRequired[str]
    fingerprint: NotRequired[str]
    key: NotRequired[str]
    build: NotRequired[ImageBuild]


class CampaignConfig(TypedDict):
    name: str
    version: int | str
    results: str
    image: ImageConfig
    sites: dict[str, SiteConfig]
    storage: dict[str, StorageConfig]
    datasets: dict[str, DatasetConfig]
    locations: LocationsConfig
    benchmarks: list[BenchmarkConfig]


class Schema(TypedDict, total=False):
    """A JSON Schema document, or one node of it (read, never written), with the keywords afkit
    reads itself (fill_defaults, afkit.campaign.schemadoc); a node holds others too (pattern,
    oneOf, $defs, afkit's ``allowed``, ...), which jsonschema reads."""

    type: str | list[str]
    description: str
    default: object
    enum: list[object]
    properties: dict[str, Schema]
    required: list[str]
    additionalProperties: bool | Schema
    items: Schema


@functools.cache
def _schema_document(path: str) -> Schema:
    """The schema file as read (once per process; load_schema completes a copy of it)."""
    with open(path, encoding="utf-8") as fh:
        document: Schema = yamlio.load(fh)  # afkit's own schema file: a JSON Schema document
    return document


def load_schema() -> Schema:
    """The campaign schema with the registered executors (afkit.campaign.executors.REGISTRY):
    ``sites.*.executor`` allows their names, in the registry's order, and each one's own site keys
    are site keys. Made once per schema file and registry (read it, never change it)."""
    return _schema_and_validator()[0]


def _schema_and_validator() -> tuple[Schema, Validator]:
    """:func:`load_schema` and its validator, for the schema file and the registry of now."""
    return _completed(str(workflow_files().schema), tuple(executors.REGISTRY.items()))


@functools.lru_cache(maxsize=8)
def _completed(path: str, registry: tuple[tuple[str, executors.Executor], ...]) -> tuple[Schema, Validator]:
    """The schema of :func:`load_schema` and its validator (:func:`_validator`): a copy of the
    schema file completed with REGISTRY's executors; 4 ms a campaign when made every time."""
    schema = copy.deepcopy(_schema_document(path))
    sites = schema["properties"]["sites"]["additionalProperties"]
    if not isinstance(sites, dict):
        raise TypeError(f"{path}: sites.additionalProperties is not the schema of a site")
    site = sites["properties"]
    site["executor"]["enum"] = [name for name, _ in registry]
    for _, executor in registry:
        for key, rule in executor.site_keys.items():
            if rule.schema is not None:  # the key's JSON Schema (afkit.campaign.executors.base.SiteKey)
                site.setdefault(key, cast(Schema, copy.deepcopy(dict(rule.schema))))
    return schema, _validator(schema)


def fill_defaults(data: object, schema: Schema) -> object:
    """Fill in the schema's ``default`` values, recursively (objects, maps and arrays): into DATA's
    mappings themselves; DATA as filled (an array's is a new list)."""
    if isinstance(data, dict) and schema.get("type", "object") in ("object", ["object"]):
        for key, sub in schema.get("properties", {}).items():
            if key not in data and "default" in sub:
                data[key] = copy.deepcopy(sub["default"])
            if key in data:
                data[key] = fill_defaults(data[key], sub)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for key in data:
                if key not in schema.get("properties", {}):
                    data[key] = fill_defaults(data[key], extra)
    elif isinstance(data, list) and isinstance(schema.get("items"), dict):
        return [fill_defaults(item, schema["items"]) for item in data]
    return data


def _ecma(pattern: str) -> re.Pattern[str]:
    """PATTERN as JSON Schema means it (ECMA 262): a final ``$`` matches only at the end of the
    text. Python's ``$`` also matches before a final newline, so jsonschema's own ``pattern`` lets
    ``"site\\n"`` through ``^[A-Za-z0-9_-]*$`` (python-jsonschema/jsonschema#576; fastjsonschema
    made the same change, horejsek/python-fastjsonschema#34)."""
    if pattern.endswith("$") and not pattern.endswith("\\$"):
        pattern = pattern[:-1] + "\\Z"
    return _compiled(pattern)


@functools.lru_cache(maxsize=64)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _pattern(
    validator: Validator, pattern: str, instance: object, schema: Schema
) -> Iterator[jsonschema.ValidationError]:
    """The ``pattern`` keyword with :func:`_ecma`'s ``$``. It applies to strings only: JSON Schema's
    type ``string``, a str (:func:`_validator`'s type checker redefines ``integer`` only)."""
    if isinstance(instance, str) and not _ecma(pattern).search(instance):
        yield jsonschema.ValidationError(f"{shown(instance)} does not match {pattern!r}")


def _whole_number(_checker: object, instance: object) -> bool:
    return isinstance(instance, int) and not isinstance(instance, bool)


class _Keyword(Protocol):
    """A JSON Schema keyword's function, as jsonschema calls it: the validator, the keyword's value
    in the schema, the instance and the schema node holding the keyword; it yields the errors."""

    def __call__(
        self, validator: Validator, value: str, instance: object, schema: Schema, /
    ) -> Iterator[jsonschema.ValidationError]: ...


class _Extend(Protocol):
    """``jsonschema.validators.extend`` as :func:`_validator` calls it (types-jsonschema leaves
    it unannotated): VALIDATOR's class with the keyword functions VALIDATORS and TYPE_CHECKER."""

    def __call__(
        self,
        validator: type[Validator],
        validators: Mapping[str, _Keyword],
        *,
        type_checker: jsonschema.TypeChecker,
    ) -> type[Validator]: ...


def _validator(schema: Schema) -> Validator:
    """The schema's validator, with ECMA 262's ``$`` in ``pattern`` (:func:`_ecma`) and
    ``integer`` meaning a whole number written as one: JSON Schema counts 1.0 as an integer, and
    ``repetitions: 1.0`` passed to ``range()`` (a TypeError, found by the hostile-input soak)."""
    base = jsonschema.validators.validator_for(schema)
    extend: _Extend = jsonschema.validators.extend
    types = base.TYPE_CHECKER.redefine("integer", _whole_number)
    return extend(base, {"pattern": _pattern}, type_checker=types)(schema)


def shown(value: object, limit: int = 60) -> str:
    """VALUE for a message: its repr, cut to LIMIT characters (a 5,000-character key is no help)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _dotted(path: Iterable[str | int]) -> str:
    parts = []
    for p in path:
        parts.append(f"[{p}]" if isinstance(p, int) else f".{p}")
    return "".join(parts).lstrip(".") or "(top level)"


def _describe(err: jsonschema.ValidationError) -> str:
    where = _dotted(err.absolute_path)
    allowed_text = err.schema.get("allowed") if isinstance(err.schema, Mapping) else None
    if allowed_text and err.validator in ("pattern", "maxLength", "minimum"):
        # a name used in paths and commands (the schema's $defs): say what is allowed
        if err.parent is None and err.relative_schema_path and "propertyNames" in err.relative_schema_path:
            return f"{where}: the name {shown(err.instance)} is not allowed: use {allowed_text}"
        return f"{where}: {shown(err.instance)} is not allowed: use {allowed_text}"
    if err.validator == "enum" and isinstance(err.validator_value, list):
        allowed = ", ".join(json.dumps(v) for v in err.validator_value)
        return f"{where}: {json.dumps(err.instance)} is not allowed; allowed values: {allowed}"
    if (
        err.validator == "additionalProperties"
        and isinstance(err.schema, Mapping)
        and isinstance(err.instance, dict)
    ):
        keys = sorted(err.schema.get("properties", {}))
        extra = sorted(str(k) if len(str(k)) <= 60 else shown(k) for k in set(err.instance) - set(keys))
        return f"{where}: unknown key(s) {', '.join(extra)}; allowed keys: {', '.join(keys)}"
    if err.validator == "required":
        return f"{where}: {err.message}"
    if err.validator == "oneOf" and where.startswith("image"):
        return f"{where}: give exactly one of 'sif' (a SIF path or oras:// reference) or 'build'"
    if err.validator == "oneOf" and where.startswith("datasets"):
        return f"{where}: give exactly one of 'files' (a list) or 'generate'"
    if err.validator == "propertyNames":
        return f"{where}: {err.message}"
    return f"{where}: {err.message}"


def _best_errors(errors: list[jsonschema.ValidationError]) -> list[jsonschema.ValidationError]:
    out = []
    for err in errors:
        # For oneOf/anyOf, report the most specific sub-error when it points deeper.
        best = jsonschema.exceptions.best_match([err])
        out.append(
            best if best.validator != "oneOf" and len(best.absolute_path) > len(err.absolute_path) else err
        )
    return out


class SweepAxes(TypedDict):
    """The values a benchmark's jobs take, axis by axis (its type picks the axes it sweeps):
    every combination is a sweep point, and each point is WAVE jobs (afkit.campaign.plan)."""

    scenario: list[str]
    access: list[str]
    clients: list[int]
    wave: list[int]
    block_size: list[str]
    stride: list[str]
    repetition: range


def sweep_axes(bench: BenchmarkConfig) -> SweepAxes:
    sw = bench["sweep"]
    kind = bench["type"]
    return SweepAxes(
        scenario=sw["scenario"],
        access=sw["access"],
        clients=sw["clients"] if kind in ("read", "analysis") else [1],
        wave=sw["jobs"] if kind == "train" else sw["nodes"] if kind in ("analysis", "read") else [1],
        block_size=sw["block_size"] if kind == "read" else [sw["block_size"][0]],
        stride=sw["stride"] if kind == "read" else ["0"],
        repetition=range(sw["repetitions"]),
    )


def planned_jobs(bench: BenchmarkConfig) -> int:
    """How many jobs BENCH plans (counted, not made: a sweep of 10^9 jobs is refused, not expanded)."""
    axes = sweep_axes(bench)
    points = math.prod(len(axes[k]) for k in ("scenario", "access", "clients", "block_size", "stride"))
    chains = 1 if bench["spread"] else len(bench["datasets"])
    return len(bench["sites"]) * chains * points * len(axes["repetition"]) * sum(axes["wave"])


def _check_sizes(where: str, sweep: Sweep) -> list[str]:
    """Block sizes and strides in the one size grammar the job reads them with (afkit.bench.units)."""
    from afkit.bench.offsets import parse_stride
    from afkit.bench.units import parse_size

    problems = []
    for key, texts, parse in (("block_size", sweep["block_size"], parse_size),
                              ("stride", sweep["stride"], parse_stride)):  # fmt: skip
        for j, text in enumerate(texts):
            try:
                value = parse(text)
            except AfkitError as err:
                problems.append(f"{where}.{key}[{j}]: {err}; {err.hint}")
                continue
            if key == "block_size" and value == 0:
                problems.append(f"{where}.{key}[{j}]: a block size must be more than 0 bytes")
    return problems


def _check_sites(cfg: CampaignConfig) -> list[str]:
    """Site keys that fit the site's executor (each executor names the keys only it acts on,
    afkit.campaign.executors); a site without the submit host's files needs an image its jobs can
    pull (docs/federation.md, "Per-site batch workers")."""
    problems = []
    for name, site in cfg["sites"].items():
        executor = site["executor"]
        keys: Mapping[str, object] = site  # the executors' own keys, named by the registry
        for owner in executors.REGISTRY.values():
            if owner.name == executor:
                continue
            for key, rule in owner.site_keys.items():
                if key in keys and rule.used(keys[key]):
                    problems.append(rule.refusal.format(site=name, executor=executor, owner=owner.name))
        if site.get("netns") and site.get("node_netns"):
            problems.append(
                f"sites.{name}: netns and node_netns both name where its jobs run: keep netns (every "
                "job in one namespace) or node_netns (a wave's jobs spread over the client nodes)"
            )
        if not site["shared_fs"] and not str(cfg["image"].get("sif", "")).startswith("oras://"):
            problems.append(
                f"sites.{name}.shared_fs: false needs image.sif to be an oras:// reference: the "
                "site's jobs pull the image from the registry (they cannot see a SIF file here)"
            )
        if site["shared_fs"] and "image_cache" in site:
            problems.append(
                f"sites.{name}.image_cache: only for a site with shared_fs: false (its jobs pull the "
                "image on the worker node); remove it or set shared_fs: false"
            )
    return problems


def _check_references(cfg: CampaignConfig) -> list[str]:
    """Cross-references the schema cannot express: names that must exist."""
    problems: list[str] = _check_sites(cfg)
    if "login" in cfg["image"] and not str(cfg["image"].get("sif", "")).startswith("oras://"):
        problems.append(
            "image.login: a registry login is for an oras:// image (image.sif: oras://HOST/PATH:TAG)"
        )
    for name, endpoint in cfg["storage"].items():
        cred = endpoint.get("credential")
        if cred is not None and ("token" in cred) == ("proxy" in cred):
            problems.append(f"storage.{name}.credential: give one of token (a WLCG token file) or proxy "
                            "(an X.509 proxy file)")  # fmt: skip
    allowed = ", ".join(sorted(cfg["storage"]))
    for name, site in cfg["sites"].items():
        if site["storage"] not in cfg["storage"]:
            problems.append(
                f"sites.{name}.storage: unknown storage {site['storage']!r}; allowed values: {allowed}"
            )
    for name, ds in cfg["datasets"].items():
        if ds["storage"] not in cfg["storage"]:
            problems.append(
                f"datasets.{name}.storage: unknown storage {ds['storage']!r}; allowed values: {allowed}"
            )
        else:
            export = cfg["storage"][ds["storage"]]["export"]
            for i, entry in enumerate(ds.get("files", [])):
                if file_below(entry, export) is None:
                    problems.append(
                        f"datasets.{name}.files[{i}]: {shown(entry)} is not allowed: use a path below "
                        f"storage.{ds['storage']}.export {export!r}: relative to it, or absolute, "
                        "starting with it"
                    )
    seen: set[str] = set()
    for i, bench in enumerate(cfg["benchmarks"]):
        if bench["name"] in seen:
            problems.append(f"benchmarks[{i}].name: duplicate benchmark name {bench['name']!r}")
        seen.add(bench["name"])
        for j, site_name in enumerate(bench["sites"]):
            if site_name not in cfg["sites"]:
                allowed = ", ".join(sorted(cfg["sites"]))
                problems.append(
                    f"benchmarks[{i}].sites[{j}]: unknown site {site_name!r}; allowed values: {allowed}"
                )
        for j, ds_name in enumerate(bench["datasets"]):
            if ds_name not in cfg["datasets"]:
                allowed = ", ".join(sorted(cfg["datasets"]))
                problems.append(
                    f"benchmarks[{i}].datasets[{j}]: unknown dataset {ds_name!r}; allowed values: {allowed}"
                )
        for scen in bench["sweep"]["scenario"]:
            if scen == "origin":
                continue
            for ds_name in bench["datasets"]:
                store = cfg["datasets"][ds_name]["storage"] if ds_name in cfg["datasets"] else None
                if store in cfg["storage"] and scen not in cfg["storage"][store]["caches"]:
                    problems.append(
                        f"benchmarks[{i}].sweep.scenario: {scen!r} needs storage.{store}.caches.{scen} "
                        f"(the cache endpoint in front of {store})"
                    )
    planned = 0
    for i, bench in enumerate(cfg["benchmarks"]):
        planned += planned_jobs(bench)
        if planned > MAX_JOBS:
            problems.append(
                f"benchmarks[{i}].sweep: the campaign plans {planned} jobs up to this benchmark, more than "
                f"{MAX_JOBS}: fewer sweep values, repetitions, sites or datasets (or several campaigns)"
            )
            break
    for i, bench in enumerate(cfg["benchmarks"]):
        problems += _check_sizes(f"benchmarks[{i}].sweep", bench["sweep"])
        if bench["payload"] == "rootreadspeed":
            if bench["type"] != "analysis" or any(int(c) != 1 for c in bench["sweep"].get("clients", [1])):
                problems.append(
                    f"benchmarks[{i}].payload: rootreadspeed runs one client of an analysis benchmark: "
                    "use type: analysis and sweep.clients: [1]"
                )
            for ds_name in bench["datasets"]:
                if ds_name in cfg["datasets"] and not cfg["datasets"][ds_name]["branches"]:
                    problems.append(
                        f"datasets.{ds_name}.branches: benchmarks[{i}] runs rootreadspeed: list them"
                    )
        if bench["payload"] == "root" and bench["type"] != "analysis":
            problems.append(
                f"benchmarks[{i}].payload: root runs analysis benchmarks only, not {bench['type']}"
            )
        if "root" in bench and bench["payload"] != "root":
            problems.append(f"benchmarks[{i}].root: the ROOT reader's settings need payload: root")
        if "demand" in bench and (bench["payload"] != "builtin" or bench["type"] == "analysis"):
            problems.append(
                f"benchmarks[{i}].demand: paces the builtin payload's read, train and steps clients; "
                f"not payload {bench['payload']} of a {bench['type']} benchmark"
            )
        if bench["spread"] and (bench["type"] != "train" or len(bench["datasets"]) < 2):
            problems.append(
                f"benchmarks[{i}].spread: spreads a train's waves over two or more datasets "
                "(type: train, datasets: [A, B, ...])"
            )
        if bench["payload"] == "afkit-bench" and bench["type"] == "analysis":
            for ds_name in bench["datasets"]:
                if ds_name in cfg["datasets"] and not cfg["datasets"][ds_name]["branches"]:
                    problems.append(
                        f"datasets.{ds_name}.branches: benchmarks[{i}] runs afkit bench analysis, which "
                        "reads named branches: list them"
                    )
    for pair in cfg["locations"]["pairs"]:
        site_name, ds_name = pair.split("/", 1)
        if site_name not in cfg["sites"] or ds_name not in cfg["datasets"]:
            problems.append(f"locations.pairs.{pair}: no such (site/dataset) pair; use SITE/DATASET names")
    return problems


MAX_DEPTH = 16  # mappings and lists in mappings and lists: the schema's deepest key is 6 down
INT_LIMIT = 2**63  # what a number in a campaign may reach (Snakemake, HTCondor and SLURM take int64)
MAX_JOBS = 100_000  # jobs one campaign may plan (each is a record file, a Snakemake job)


def _control(text: str) -> str | None:
    """The first control character in TEXT (NUL, a terminal's ESC, ...; tab and newline pass)."""
    return next((c for c in text if c not in "\t\n" and unicodedata.category(c) == "Cc"), None)


def junk(data: object, where: tuple[str | int, ...] = (), depth: int = 0) -> str | None:
    """What the schema cannot say about DATA (a campaign as YAML gives it), at the first place it
    is wrong: keys that are not text (``1:``, ``null:``, ``yes:``), numbers that are not finite or
    not int64, text with control characters, values YAML makes of unquoted text (dates, bytes),
    nesting deeper than any key of the schema."""
    at = _dotted(where)
    if depth > MAX_DEPTH:
        return f"{at}: nested more than {MAX_DEPTH} deep; no campaign key is"
    if isinstance(data, dict):
        for key, value in data.items():
            if not isinstance(key, str):
                return (f"{at}: the key {shown(key)} is not text (YAML reads {shown(key)} as "
                        f"{type(key).__name__}): quote it")  # fmt: skip
            if (bad := _control(key)) is not None:
                return f"{at}: the key {shown(key)} holds the control character {bad!r}"
            found = junk(value, (*where, key), depth + 1)
            if found:
                return found
    elif isinstance(data, list):
        for i, item in enumerate(data):
            found = junk(item, (*where, i), depth + 1)
            if found:
                return found
    elif isinstance(data, str):
        if (bad := _control(data)) is not None:
            return f"{at}: {shown(data)} holds the control character {bad!r}"
    elif isinstance(data, float) and not math.isfinite(data):
        return f"{at}: {data} is not a finite number"
    elif isinstance(data, int) and not isinstance(data, bool) and not -INT_LIMIT < data < INT_LIMIT:
        return f"{at}: {shown(data)} is too large (at most {INT_LIMIT - 1})"
    elif data is not None and not isinstance(data, (bool, int, float)):
        return f"{at}: YAML reads {shown(data)} as {type(data).__name__}: quote it"
    return None


def validate(raw: object, *, source: str = "campaign") -> CampaignConfig:
    """Defaults + schema + cross-reference checks; raise InvalidError listing every problem. A run
    validates its campaign once (afkit.campaign.runplan); the audit event lets a test count it."""
    sys.audit("afkit.campaign.validate", source)
    if not isinstance(raw, dict):
        raise InvalidError(
            f"{source}: the campaign must be a YAML mapping", hint="see workflows/config/*.yaml"
        )
    wrong = junk(raw)
    if wrong:
        raise InvalidError(f"{source}: invalid campaign:\n  {wrong}",
                           hint="fix the key named above (docs/campaigns.md, 'Names')")  # fmt: skip
    schema, validator = _schema_and_validator()
    filled = copy.deepcopy(raw)
    fill_defaults(filled, schema)  # into the mapping itself
    errors = sorted(validator.iter_errors(filled), key=lambda e: list(map(str, e.absolute_path)))
    problems = [_describe(e) for e in _best_errors(errors)]
    cfg = cast(CampaignConfig, filled)  # the schema holds (else the problems say where not)
    if not problems:
        problems = _check_references(cfg)
    if problems:
        raise InvalidError(
            f"{source}: invalid campaign:\n  " + "\n  ".join(problems),
            hint=f"fix the key(s) named above; the schema is {workflow_files().schema}",
        )
    return cfg


@dataclass(frozen=True)
class Campaign:
    """A validated campaign and where it came from."""

    config: CampaignConfig
    base_dir: Path

    @property
    def name(self) -> str:
        return str(self.config["name"])

    @property
    def hash(self) -> str:
        return campaign_hash(self.config)

    @property
    def layout(self) -> ResultsLayout:
        """The files of the campaign's results folder (afkit.campaign.layout)."""
        return ResultsLayout.at(self.config["results"], self.name, self.config["version"])

    @property
    def results_dir(self) -> Path:
        """RESULTS/NAME-vVERSION (a relative ``results`` is relative to the working directory)."""
        return self.layout.path

    def resolve(self, path: str) -> Path:
        return beside(self.base_dir, path)


def campaign_hash(cfg: CampaignConfig) -> str:
    """12 hex digits over the whole campaign but ``results``: which version of the campaign a table
    was made for (the results folder is not keyed by it: afkit.campaign.layout)."""
    significant = {k: v for k, v in cfg.items() if k not in ("results",)}
    blob = json.dumps(significant, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def load(path: str | Path, base_dir: Path | None = None) -> Campaign:
    """The campaign in file PATH; its relative paths are taken beside BASE_DIR (default: PATH's folder)."""
    p = Path(path)
    yamlio.require_file(p, "campaign", "give the path of a campaign YAML file")
    raw = yamlio.read(p, "campaign")
    # relative paths in the campaign are relative to its folder as named, symlinks kept (a campaign
    # under the checkout's workflows/ link names ../../build/... beside the checkout, not the package)
    return Campaign(validate(raw, source=str(p)), (base_dir or p.parent).absolute())
