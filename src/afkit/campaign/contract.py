"""The campaign job's typed contract: what planning gives a job, what the job leaves behind.

One line of typed hops (docs/campaigns.md, "What a job does"):

    C.yaml → Campaign → [Job] → JobSpec → (afkit campaign job) → PayloadSpec → (payload in the image)
    → PayloadResult → JobRecord → jobs.csv → [JobRow] → report, compare

:class:`Job` (afkit.campaign.plan.expand) and :class:`JobSpec` (``RESULTS/jobspec/BENCH/ID.json``,
written once by planning) → ``afkit campaign job SPEC -o RECORD`` (afkit.campaign.job) →
:class:`PayloadSpec` → ``python -m afkit.campaign.steps`` in the image → :class:`PayloadResult` (a
file the payload writes) → :class:`JobRecord` (``ID.json``) → jobs.csv (afkit.campaign.aggregate)
→ typed rows (afkit.campaign.rows.JobRow) → the report and the comparison.

:class:`JobRecord`'s fields carry the field table as metadata (who writes the field, when it is
needed, whether it is a column of ``jobs.csv``, its unit and meaning); ``jobs.csv``'s columns are
its column fields in declaration order. Each of the payload's metrics is declared there once
(``_metric``: also the payloads that produce it and its source in the payload's summary): the
processing step measures it from that declaration, :class:`PayloadResult` is a record with only the
payload's fields set, and the record takes it whole (:meth:`JobRecord.updated`). A record is
checked when it is written (:meth:`JobRecord.write`) and when it is read (:meth:`JobRecord.read`),
nowhere else.

Standard library only: the job core on a batch worker and the payload inside the image import it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict, TypeVar, Union, cast

from afkit.errors import InvalidError

STATUSES = ("ok", "failed")
STEPS = ("setup", "stage_in", "processing", "stage_out")
INTERVAL_KEYS = ("t", "time", "bytes")  # one interval: seconds since processing start, wall clock, bytes
STR, INT, NUM, LIST, DICT = (str,), (int,), (int, float), (list,), (dict,)


def _type_ok(value: object, types: tuple[type, ...]) -> bool:
    return isinstance(value, types) and not isinstance(value, bool)


def _load(path: Path, what: str) -> dict[str, object]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        raise InvalidError(f"unreadable {what} {path}: {err}", hint="delete it and rerun that job") from err
    if not isinstance(data, dict):
        raise InvalidError(f"{what} {path}: not a JSON object but {type(data).__name__}")
    return data


def _need(data: Mapping[str, object], key: str, types: tuple[type, ...], what: str) -> object:
    value = data.get(key)
    if not _type_ok(value, types):
        want = " or ".join(t.__name__ for t in types)
        raise InvalidError(f"{what}: {key}: {value!r} is not {want}",
                           hint="make the spec again (afkit campaign run)")  # fmt: skip
    return value


def _str(data: Mapping[str, object], key: str, what: str) -> str:
    return str(_need(data, key, STR, what))


def _dict(data: Mapping[str, object], key: str, what: str) -> dict[str, object]:
    return cast("dict[str, object]", _need(data, key, DICT, what))


def _list(data: Mapping[str, object], key: str, what: str) -> list[object]:
    return cast("list[object]", _need(data, key, LIST, what))


# ---------------------------------------------------------------------------------------- the plan


@dataclass(frozen=True)
class Job:
    """One planned job (afkit.campaign.plan): its sweep point and the inputs it reads."""

    bench: str
    type: str
    site: str
    dataset: str
    scenario: str
    access: str
    clients: int
    block_size: str
    stride: str
    repetition: int
    wave_size: int = 1  # jobs released together (train: concurrent jobs; analysis: nodes)
    index: int = 0  # this job's number inside its wave
    duration: float = 10.0
    interval: float = 1.0
    payload: str = "builtin"
    branches: tuple[str, ...] = ()
    demand: str = ""  # each client's read rate cap (bytes/s with a unit, e.g. 2.5MB/s); "" none
    group: str = ""  # a spread train's datasets, joined by '+' (the wave's name for them); "" one
    urls: tuple[str, ...] = field(default=(), compare=False)
    template: str = field(default="", compare=False)

    @property
    def chain(self) -> str:
        """What a wave's jobs read: the dataset, or a spread train's datasets (``group``)."""
        return self.group or self.dataset

    @property
    def wave(self) -> str:
        # block size and stride are read parameters: an analysis job reads whole baskets (uproot)
        reads = "" if self.type == "analysis" else f".b{self.block_size}.s{self.stride}"
        paced = f".d{self.demand.replace('/', 'p').replace(' ', '')}" if self.demand else ""
        return (
            f"{self.site}.{self.chain}.{self.scenario}.{self.access}.c{self.clients}"
            f"{reads}{paced}.w{self.wave_size}.r{self.repetition}"
        )

    @property
    def id(self) -> str:
        return f"{self.wave}.i{self.index}"

    def as_dict(self) -> dict[str, object]:
        """The job as JSON (with its id and wave)."""
        d: dict[str, object] = {name: getattr(self, name) for name in _JOB_FIELDS}
        d["urls"] = list(self.urls)
        d["branches"] = list(self.branches)
        d["id"] = self.id
        d["wave"] = self.wave
        return d

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> Job:
        """The job DATA (as :meth:`as_dict` wrote it), each field checked."""
        what = f"job {data.get('id', '?')}"
        kw: dict[str, object] = {}
        for f in dataclasses.fields(cls):
            if f.name in ("urls", "branches"):
                kw[f.name] = tuple(str(u) for u in _list(data, f.name, what)) if f.name in data else ()
            elif f.name in data:
                want = {"str": STR, "int": INT, "float": NUM}[str(f.type)]
                kw[f.name] = _need(data, f.name, want, what)
        checked = cast("_JobArgs", kw)  # each value checked above for its field's type
        try:
            return cls(**checked)
        except TypeError as err:
            raise InvalidError(f"{what}: {err}", hint="make the spec again (afkit campaign run)") from err


class _JobArgs(TypedDict, total=False):
    """:class:`Job`'s fields as the keywords of ``Job(...)`` (:meth:`Job.from_dict`'s checked values;
    mypy checks each one's type against Job's). A missing key: the field's default, or Job's
    TypeError for a field without one."""

    bench: str
    type: str
    site: str
    dataset: str
    scenario: str
    access: str
    clients: int
    block_size: str
    stride: str
    repetition: int
    wave_size: int
    index: int
    duration: float
    interval: float
    payload: str
    branches: tuple[str, ...]
    demand: str
    group: str
    urls: tuple[str, ...]
    template: str


_JOB_FIELDS = tuple(f.name for f in dataclasses.fields(Job))


@dataclass(frozen=True)
class SiteSpec:
    """What a job needs of its site (the campaign's ``sites.NAME``, resolved by planning)."""

    name: str
    executor: str
    shared_fs: bool = True
    scratch: str = "/tmp"
    netns: str = ""
    link_rate: str = ""
    env: Mapping[str, str] = field(default_factory=dict)
    apptainer_args: tuple[str, ...] = ()
    image_cache: str = ""  # shared_fs: false: the worker's image cache (afkit.campaign.imagecache)
    node_netns: tuple[str, ...] = ()  # client nodes: job i of a wave runs in node_netns[i mod len]

    def job_netns(self, index: int) -> str:
        """The network namespace of the job with INDEX in its wave ("": the worker's own)."""
        return self.node_netns[index % len(self.node_netns)] if self.node_netns else self.netns

    def as_dict(self) -> dict[str, object]:
        d: dict[str, object] = {"name": self.name, "executor": self.executor, "shared_fs": self.shared_fs,
             "scratch": self.scratch, "netns": self.netns, "link_rate": self.link_rate,
             "env": dict(self.env), "apptainer_args": list(self.apptainer_args),
             "image_cache": self.image_cache}  # fmt: skip
        if self.node_netns:  # only when given: the specs of sites without it stay as they were
            d["node_netns"] = list(self.node_netns)
        return d

    @classmethod
    def from_config(cls, name: str, site: Mapping[str, object]) -> SiteSpec:
        return cls(
            name=name,
            executor=str(site["executor"]),
            shared_fs=bool(site.get("shared_fs", True)),
            scratch=str(site.get("scratch") or "/tmp"),
            netns=str(site.get("netns") or ""),
            link_rate=str(site.get("link_rate") or ""),
            env={str(k): str(v) for k, v in cast("dict[str, object]", site.get("env") or {}).items()},
            apptainer_args=tuple(str(a) for a in cast("list[object]", site.get("apptainer_args") or [])),
            image_cache=str(site.get("image_cache") or ""),
            node_netns=tuple(str(n) for n in cast("list[object]", site.get("node_netns") or [])),
        )


@dataclass(frozen=True)
class ImageInfo:
    """The campaign's image as the ``image`` rule resolved it (``RESULTS/image/image.json``)."""

    path: str
    sha256: str
    tag: str = ""
    fingerprint: str = ""
    source: str = ""
    python: str = "auto"

    @property
    def reference(self) -> str:
        """The image as the campaign gave it: its ``oras://`` reference, ``build TAG`` for an image
        built from a tag, else the SIF file's path on the submit host (never a worker's copy)."""
        if self.source == "build":
            return f"build {self.tag}"
        return self.source if "://" in self.source else self.path

    @classmethod
    def read(cls, path: Path) -> ImageInfo:
        data = _load(path, "image description")
        what = f"image description {path}"
        return cls(
            path=_str(data, "path", what),
            sha256=_str(data, "sha256", what),
            tag=str(data.get("tag") or ""),
            fingerprint=str(data.get("fingerprint") or ""),
            source=str(data.get("source") or ""),
            python=str(data.get("python") or "auto"),
        )


@dataclass(frozen=True)
class RootOptions:
    """How payload root's ROOT reads (the benchmark's ``root`` key; afkit.bench.rootread)."""

    reader: str = "ttree"  # ttree (TTree + TTreeCache) or rdataframe
    work: str = "read"  # read, or histogram: also fill a histogram of the first numeric branch
    cache_mb: float | None = None  # TTreeCache size in MiB (None: ROOT's own; 0: no cache)

    def as_dict(self) -> dict[str, object]:
        d: dict[str, object] = {"reader": self.reader, "work": self.work}
        if self.cache_mb is not None:
            d["cache_mb"] = self.cache_mb
        return d

    @classmethod
    def from_dict(cls, data: Mapping[str, object], what: str = "root options") -> RootOptions:
        cache = data.get("cache_mb")
        return cls(
            reader=str(data.get("reader") or "ttree"),
            work=str(data.get("work") or "read"),
            cache_mb=None if cache is None else float(cast("float", _need(data, "cache_mb", NUM, what))),
        )


# the variables the field's clients read a credential's file from (XRootD: BEARER_TOKEN_FILE for
# ztn, X509_USER_PROXY for gsi)
CREDENTIAL_ENV = {"token": "BEARER_TOKEN_FILE", "proxy": "X509_USER_PROXY"}
# the variables XRootD's clients read the CAs from (xrootd src/XrdCl/XrdClTls.cc; gsi the folder only)
CA_FILE_ENV, CA_DIR_ENV = "X509_CERT_FILE", "X509_CERT_DIR"


def ca_variable(ca: str | Path) -> str:
    """The variable that names CA to a client: X509_CERT_DIR for a folder of CAs by subject hash
    (what an X.509 proxy's server is checked against), X509_CERT_FILE for a bundle."""
    return CA_DIR_ENV if Path(ca).is_dir() else CA_FILE_ENV


@dataclass(frozen=True)
class CredentialSpec:
    """The credential files of a job's storage (afkit.campaign.credentials): KIND (token or proxy)
    at PATH and the CA bundle CA, host paths; never the secret. Empty: an open storage."""

    kind: str = ""
    path: str = ""
    ca: str = ""

    def as_dict(self) -> dict[str, object]:
        return {"kind": self.kind, "path": self.path, "ca": self.ca}

    @classmethod
    def from_dict(cls, data: Mapping[str, object], what: str = "credential") -> CredentialSpec:
        return cls(kind=_str(data, "kind", what), path=_str(data, "path", what), ca=_str(data, "ca", what))


def _credential(data: Mapping[str, object], source: str) -> CredentialSpec:
    """A spec's credential (none in the spec of a job of an open storage)."""
    if "credential" not in data:
        return CredentialSpec()
    return CredentialSpec.from_dict(_dict(data, "credential", source), source)


@dataclass(frozen=True)
class JobSpec:
    """Everything one job needs, made once by planning: ``afkit campaign job SPEC`` reruns it.

    Paths are as the workflow names them (relative to the submit directory when ``results`` is):
    ``image`` is the image rule's ``image.json``, ``record`` and ``log`` where the job writes;
    ``tree`` the tree an analysis job reads (empty for the others, which read bytes).

    The spec holds what the job does and nothing of the rest of the campaign (no campaign hash), so
    that an edit of the campaign leaves the specs of the jobs it does not touch as they were: their
    files keep their time and snakemake does not rerun them. The record carries :meth:`digest`
    (``spec_sha256``): a record made from another spec is stale, never a current result."""

    job: Job
    campaign: str
    site: SiteSpec
    tree: str
    binds: tuple[str, ...]
    image: str
    record: str
    log: str
    root: RootOptions = field(default_factory=RootOptions)  # payload root: how ROOT reads
    credential: CredentialSpec = field(default_factory=CredentialSpec)  # a guarded storage's files
    # a site without the submit host's files: the registry login its pull of the image uses (the
    # campaign's image.login, a host path; the job takes the file along); empty: none
    registry_login: str = ""

    def to_json(self) -> str:
        data: dict[str, object] = {
            "job": self.job.as_dict(),
            "campaign": self.campaign,
            "site": self.site.as_dict(),
            "tree": self.tree,
            "binds": list(self.binds),
            "image": self.image,
            "record": self.record,
            "log": self.log,
        }
        if self.job.payload == "root":
            data["root"] = self.root.as_dict()
        if self.credential.kind:  # only then: an open storage's specs (and digests) stay as they were
            data["credential"] = self.credential.as_dict()
        if self.registry_login:  # likewise
            data["registry_login"] = self.registry_login
        return json.dumps(data, indent=1, sort_keys=True) + "\n"

    def digest(self) -> str:
        """SHA-256 of the spec as planning writes it (its file's content): the record's ``spec_sha256``."""
        return hashlib.sha256(self.to_json().encode()).hexdigest()

    @classmethod
    def from_json(cls, text: str, *, source: str = "job spec") -> JobSpec:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise InvalidError(
                f"{source}: not JSON: {err}", hint="make the spec again (afkit campaign run)"
            ) from err
        if (
            not isinstance(data, dict)
            or not isinstance(data.get("job"), dict)
            or not isinstance(data.get("site"), dict)
        ):
            raise InvalidError(f"{source}: not a job spec (needs job and site objects)",
                               hint="a spec is RESULTS/jobspec/BENCH/ID.json, made by planning")  # fmt: skip
        site = data["site"]
        return cls(
            job=Job.from_dict(data["job"]),
            campaign=_str(data, "campaign", source),
            site=SiteSpec.from_config(_str(site, "name", source), site),
            tree=_str(data, "tree", source),
            binds=tuple(str(b) for b in _list(data, "binds", source)),
            image=_str(data, "image", source),
            record=_str(data, "record", source),
            log=_str(data, "log", source),
            root=RootOptions.from_dict(_dict(data, "root", source) if "root" in data else {}, source),
            credential=_credential(data, source),
            registry_login=_str(data, "registry_login", source) if "registry_login" in data else "",
        )

    @classmethod
    def read(cls, path: Path) -> JobSpec:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as err:
            from afkit.errors import NotFoundError

            hint = "specs are RESULTS/jobspec/BENCH/ID.json (afkit campaign run writes them)"
            raise NotFoundError(f"job spec {path}: {err.strerror}", hint=hint) from err
        return cls.from_json(text, source=f"job spec {path}")


# ------------------------------------------------------------------------- the payload in the image


@dataclass(frozen=True)
class PayloadSpec:
    """What the job wrapper hands the payload inside the image (``scratch/spec.json``)."""

    job: Job
    tree: str
    scratch: str
    stage_out: str
    result: str  # where the payload writes its PayloadResult (JSON)
    t_launch: float
    env: Mapping[str, str] = field(default_factory=dict)  # XRD_* of the job (apptainer --cleanenv)
    root: RootOptions = field(default_factory=RootOptions)  # payload root: how ROOT reads
    credential: CredentialSpec = field(default_factory=CredentialSpec)  # a guarded storage's files
    # a site without the submit host's files: the registry login its pull of the image uses (the
    # campaign's image.login, a host path; the job takes the file along); empty: none
    registry_login: str = ""

    def to_json(self) -> str:
        return json.dumps({**dataclasses.asdict(self), "job": self.job.as_dict(), "env": dict(self.env),
                           "root": self.root.as_dict()})  # fmt: skip

    @classmethod
    def read(cls, path: Path) -> PayloadSpec:
        data = _load(path, "payload spec")
        what = f"payload spec {path}"
        return cls(
            job=Job.from_dict(_dict(data, "job", what)),
            tree=_str(data, "tree", what),
            scratch=_str(data, "scratch", what),
            stage_out=_str(data, "stage_out", what),
            result=_str(data, "result", what),
            t_launch=float(cast("float", _need(data, "t_launch", NUM, what))),
            env={str(k): str(v) for k, v in _dict(data, "env", what).items()},
            root=RootOptions.from_dict(_dict(data, "root", what) if "root" in data else {}, what),
        )


# --------------------------------------------------------------------------------- the job record


def _f(
    by: str,
    doc: str,
    *,
    need: str = "always",
    column: bool = True,
    unit: str = "",
    payloads: tuple[str, ...] = (),
    source: str = "",
    missing: object = None,
) -> Mapping[str, object]:
    """A record field's metadata (``field(default=None, metadata=_f(...))``). BY: plan | payload |
    wrapper | derived (computed for jobs.csv, never in a record); NEED: always | ok (when status is
    ok) | failed | optional; COLUMN: a column of jobs.csv (else in the record only). A payload's
    metric also says which PAYLOADS produce it (empty: every one), its SOURCE (where
    afkit.campaign.processing.measured takes it from) and its value when the summary lacks it
    (MISSING; None: the field is left out)."""
    return {"by": by, "need": need, "column": column, "unit": unit, "doc": doc, "payloads": payloads,
            "source": source, "missing": missing}  # fmt: skip


def _plan(doc: str, *, column: bool = True, unit: str = "") -> Mapping[str, object]:
    return _f("plan", doc, column=column, unit=unit)


def _wrap(doc: str, *, column: bool = True, unit: str = "", need: str = "always") -> Mapping[str, object]:
    return _f("wrapper", doc, column=column, unit=unit, need=need)


def _pay(doc: str, *, need: str = "ok", column: bool = True, unit: str = "") -> Mapping[str, object]:
    return _f("payload", doc, need=need, column=column, unit=unit)


def _metric(
    doc: str,
    *,
    source: str = "",
    payloads: tuple[str, ...] = (),
    need: str = "optional",
    column: bool = True,
    unit: str = "",
    missing: object = None,
) -> Mapping[str, object]:
    """A payload metric: what the processing step measures. Its one declaration (the record's field:
    name, type, DOC, UNIT, the PAYLOADS that produce it, whether it is a COLUMN of jobs.csv, its
    SOURCE in the payload's summary) makes it a field of the payload's result, of the record and
    of jobs.csv (docs/campaigns.md, "The job record")."""
    return _f("payload", doc, need=need, column=column, unit=unit, payloads=payloads, source=source,
              missing=missing)  # fmt: skip


def _derived(doc: str, unit: str) -> Mapping[str, object]:
    return _f("derived", doc, need="optional", unit=unit)


_Rec = TypeVar("_Rec", bound="JobRecord")


def _set(record: _Rec, values: Mapping[str, object]) -> _Rec:
    """RECORD with VALUES (each one a field of the record) put into its fields, by name: as keywords
    of ``JobRecord(...)`` mypy would check them only against a second declaration of the fields (a
    TypedDict), and they are declared once. :func:`check` proves their types by the field table
    (:data:`FIELDS`) when a record is read and when it is written."""
    for name, value in values.items():
        setattr(record, name, value)
    return record


@dataclass
class JobRecord:
    """One job's record (``RESULTS/job/BENCH/ID.json``); the order of the fields is jobs.csv's.

    Three writers fill it: the plan (the job's parameters), the payload in the image (steps, bytes,
    events, intervals) and the wrapper on the worker node (provenance, start and end, the
    bottleneck verdict). ``derived`` fields are computed for jobs.csv (afkit.campaign.aggregate)."""

    campaign: str | None = field(default=None, metadata=_wrap("the campaign's name"))
    campaign_hash: str | None = field(default=None, metadata=_wrap(
        "12 hex digits over the campaign: in jobs.csv the campaign version the tables were made for "
        "(aggregation sets it; every row's record is current for it); not in new records",
        need="optional"))  # fmt: skip
    spec_sha256: str | None = field(default=None, metadata=_wrap(
        "the SHA-256 of the job's spec: a record without it, or whose job's spec has changed since, is "
        "stale (redone, never a result)", column=False, need="optional"))  # fmt: skip
    image_sha256: str | None = field(default=None, metadata=_wrap("the image's SHA-256"))
    image_tag: str | None = field(default=None, metadata=_wrap("the software tag the image was built from"))
    image_path: str | None = field(default=None, metadata=_wrap(
        "the SIF the job ran (a worker's own pull: its copy)"))  # fmt: skip
    bench: str | None = field(default=None, metadata=_plan("the benchmark's name"))
    type: str | None = field(default=None, metadata=_plan("read, train, steps or analysis"))
    id: str | None = field(default=None, metadata=_plan("the job's id (its parameters)"))
    wave: str | None = field(default=None, metadata=_plan("the wave's id (jobs released together)"))
    site: str | None = field(default=None, metadata=_plan("the campaign's site"))
    executor: str | None = field(default=None, metadata=_wrap(
        "local, htcondor or slurm: the one that really ran the job"))  # fmt: skip
    batch_job_id: str | None = field(default=None, metadata=_wrap(
        "the batch system's job id (empty for local)"))  # fmt: skip
    host: str | None = field(default=None, metadata=_pay("the worker node's host name"))
    dataset: str | None = field(default=None, metadata=_plan("the dataset's name"))
    group: str | None = field(default=None, metadata=_f(
        "plan", "a spread train's datasets, joined by '+' (empty: one dataset)",
        need="optional"))  # fmt: skip
    scenario: str | None = field(default=None, metadata=_plan("origin or a cache's name"))
    access: str | None = field(default=None, metadata=_plan("direct or copy"))
    clients: int | None = field(default=None, metadata=_plan("reading clients of the job"))
    block_size: str | None = field(default=None, metadata=_plan(
        "read block size", unit="bytes (with suffix)"))  # fmt: skip
    stride: str | None = field(default=None, metadata=_plan("read stride"))
    demand: str | None = field(default=None, metadata=_f(
        "plan", "each client's read rate cap (empty: none)", need="optional",
        unit="bytes/s (with suffix)"))  # fmt: skip
    wave_size: int | None = field(default=None, metadata=_plan("jobs of the wave"))
    index: int | None = field(default=None, metadata=_plan("the job's number inside its wave"))
    repetition: int | None = field(default=None, metadata=_plan("the repetition of the sweep point"))
    duration: float | None = field(default=None, metadata=_plan("how long a read job reads", unit="s"))
    interval: float | None = field(default=None, metadata=_plan("width of an interval sample", unit="s"))
    template: str | None = field(default=None, metadata=_plan("the input location's URL template"))
    url: str | None = field(default=None, metadata=_wrap("the first input URL"))
    files: int | None = field(default=None, metadata=_wrap("input files"))
    status: str | None = field(default=None, metadata=_pay("ok or failed", need="always"))
    error: str | None = field(default=None, metadata=_pay("one line: why the job failed", need="failed"))
    start: float | None = field(default=None, metadata=_wrap(
        "the payload's launch (wall clock)", unit="s since the epoch"))  # fmt: skip
    end: float | None = field(default=None, metadata=_wrap(
        "the payload's end (wall clock)", unit="s since the epoch"))  # fmt: skip
    processing_start: float | None = field(default=None, metadata=_pay(
        "start of the processing step (wall clock)", unit="s since the epoch"))  # fmt: skip
    setup_s: float | None = field(default=None, metadata=_derived("container start and software set-up", "s"))
    stage_in_s: float | None = field(default=None, metadata=_derived("copying the inputs (copy mode)", "s"))
    processing_s: float | None = field(default=None, metadata=_derived("the processing step", "s"))
    stage_out_s: float | None = field(default=None, metadata=_derived("writing the output back", "s"))
    wall_s: float | None = field(default=None, metadata=_derived("end - start", "s"))
    bytes: int | None = field(default=None, metadata=_metric(
        "bytes read", source="bytes", need="ok", unit="bytes"))  # fmt: skip
    bytes_staged: int | None = field(default=None, metadata=_pay("bytes copied in (copy mode)", unit="bytes"))
    events: int | None = field(default=None, metadata=_metric(
        "events read (analysis)", source="events", need="ok", missing=0))  # fmt: skip
    throughput_MBps: float | None = field(default=None, metadata=_derived("bytes / processing_s", "MB/s"))
    events_per_s: float | None = field(default=None, metadata=_derived("events / processing_s", "1/s"))
    image_fingerprint: str | None = field(default=None, metadata=_wrap("the image signer's fingerprint"))
    bottleneck: str | None = field(default=None, metadata=_wrap(
        "what bounded the job (afkit.campaign.bottleneck)"))  # fmt: skip
    bottleneck_reason: str | None = field(default=None, metadata=_wrap("one line: why"))
    wn_site: str | None = field(default=None, metadata=_wrap(
        "the batch worker's site (machine ad AFKIT_SITE, SLURM partition)"))  # fmt: skip
    wn_address: str | None = field(default=None, metadata=_wrap(
        "the worker node's IPv4 address (in the site's namespace)"))  # fmt: skip
    submit_files: str | None = field(default=None, metadata=_wrap(
        "shared (the submit host's filesystem) or transferred"))  # fmt: skip
    image_pull_s: float | None = field(default=None, metadata=_wrap(
        "the image's pull on the worker (shared_fs: false)", need="optional", unit="s"))  # fmt: skip
    payload: str | None = field(default=None, metadata=_plan(
        "who read: builtin, afkit-bench, root or rootreadspeed (the report's payload section)"))  # fmt: skip
    readspeed_verdict: str | None = field(default=None, metadata=_metric(
        "rootreadspeed's own verdict: io-bound, decompression-bound or balanced (payload rootreadspeed)",
        source="readspeed.verdict", payloads=("rootreadspeed",)))  # fmt: skip
    # payload root: ROOT's own counts, summed over the clients (afkit.bench.rootread's summary:
    # TFile::GetFileBytesRead, GetFileReadCalls; the tree caches' transactions, each one
    # TFile::ReadBuffers: an XRootD vector read over root://)
    root_bytes_read: int | None = field(default=None, metadata=_metric(
        "bytes ROOT read (payload root)", source="root.bytes_read", payloads=("root",),
        unit="bytes"))  # fmt: skip
    root_read_calls: int | None = field(default=None, metadata=_metric(
        "ROOT's read calls (payload root)", source="root.read_calls", payloads=("root",)))  # fmt: skip
    root_vector_reads: int | None = field(default=None, metadata=_metric(
        "the tree caches' vector reads (payload root)", source="root.vector_reads",
        payloads=("root",)))  # fmt: skip
    # the report's header: the image the campaign used, not a worker's copy of it
    image_ref: str | None = field(default=None, metadata=_wrap(
        "the campaign's image as given: the SIF file, the oras:// reference or build TAG (the report's "
        "header)", need="optional"))  # fmt: skip
    image_cache: str | None = field(default=None, metadata=_wrap(
        "the node's image cache at the pull (shared_fs: false): hit, miss, off or unusable "
        "(afkit.campaign.imagecache)", need="optional"))  # fmt: skip
    # in the record only
    readspeed: dict[str, object] | None = field(default=None, metadata=_metric(
        "rootreadspeed's figures (afkit.bench.readspeed)", source="readspeed", payloads=("rootreadspeed",),
        column=False))  # fmt: skip
    branches: list[str] | None = field(default=None, metadata=_plan(
        "branches an analysis job reads", column=False))  # fmt: skip
    submit_host: str | None = field(default=None, metadata=_wrap("the submit host's name", column=False))
    hold_reason: str | None = field(default=None, metadata=_wrap(
        "HTCondor's HoldReason of a job held past its grace", column=False, need="optional"))  # fmt: skip
    container_start: float | None = field(default=None, metadata=_pay(
        "the payload's start inside the container", column=False, unit="s since the epoch"))  # fmt: skip
    steps: dict[str, float] | None = field(default=None, metadata=_pay(
        "seconds of each step (setup, stage_in, processing, stage_out)", column=False, unit="s"))  # fmt: skip
    # the processing step's own (afkit.campaign.processing: from the clients' interval and gap records)
    intervals: list[dict[str, float]] | None = field(default=None, metadata=_metric(
        "{t, time, bytes} samples (also until a failure)", need="ok", column=False))  # fmt: skip
    gaps: list[dict[str, object]] | None = field(default=None, metadata=_metric(
        "failed reads: {t, seconds, url, recovered}", column=False))  # fmt: skip
    bytes_out: int | None = field(default=None, metadata=_pay(
        "bytes written back", column=False, unit="bytes"))  # fmt: skip
    engine: str | None = field(default=None, metadata=_pay(
        "afkit VERSION (where the job imported it)", need="optional", column=False))  # fmt: skip
    software_env: dict[str, object] | None = field(default=None, metadata=_pay(
        "the image's tag environment as the job saw it", need="optional", column=False))  # fmt: skip
    afkit_bench: str | None = field(default=None, metadata=_metric(
        "the afkit bench command's kind", source="kind", payloads=("afkit-bench",), column=False,
        missing=""))  # fmt: skip

    @classmethod
    def planned(cls, job: Job) -> JobRecord:
        """The fields the plan writes: JOB's parameters."""
        return cls(bench=job.bench, type=job.type, id=job.id, wave=job.wave, site=job.site,
                   dataset=job.dataset, scenario=job.scenario, access=job.access, clients=job.clients,
                   block_size=job.block_size, stride=job.stride, demand=job.demand, group=job.group,
                   wave_size=job.wave_size, index=job.index,
                   repetition=job.repetition, duration=job.duration, interval=job.interval,
                   template=job.template, payload=job.payload, branches=list(job.branches))  # fmt: skip

    def to_dict(self) -> dict[str, object]:
        """The record as JSON: the fields that are set, derived ones left out."""
        return {f.name: v for f in RECORD_FIELDS if (v := getattr(self, f.name)) is not None}

    def updated(self: _Rec, part: JobRecord | Mapping[str, object]) -> _Rec:
        """This record with the fields PART sets put in: the payload's result into the job's record,
        what the processing measured into the payload's result (by name: :func:`check` proves the
        types when the record is written)."""
        values = part.to_dict() if isinstance(part, JobRecord) else dict(part)
        unknown = sorted(set(values) - {f.name for f in RECORD_FIELDS})
        if unknown:
            raise InvalidError(f"not fields of the job record: {', '.join(unknown)}")
        return _set(dataclasses.replace(self), values)

    @classmethod
    def from_dict(cls, data: Mapping[str, object], *, job: str = "", where: str = "") -> JobRecord:
        """The record DATA, checked against the contract (InvalidError naming JOB and WHERE)."""
        check(data, job=job, where=where)
        return _set(cls(), data)  # the check above proved the types

    @classmethod
    def read(cls, path: Path) -> JobRecord:
        """A record file, checked (an error names the job and the file)."""
        return cls.from_dict(_load(path, "job record"), job=Path(path).stem, where=str(path))

    def write(self, path: Path, *, where: str = "") -> None:
        """Check the record, then write it atomically (mode 0644)."""
        from afkit.atomic import write_atomic

        data = self.to_dict()
        check(data, where=where or str(path))
        write_atomic(Path(path), json.dumps(data, indent=1, sort_keys=True) + "\n", mode=0o644)


@dataclass
class PayloadResult(JobRecord):
    """What the payload (afkit.campaign.steps) gives back: a job record of which only the payload's
    fields (``by="payload"``: its metrics, :data:`METRICS`, and the steps' own) are set, checked
    when written and read. The wrapper puts it into the job's record (:meth:`JobRecord.updated`):
    no field of it is declared, or copied, anywhere else."""

    def write(self, path: Path, *, where: str = "") -> None:
        """Check the result, then write it atomically."""
        from afkit.atomic import write_atomic

        data = self.to_dict()
        check(data, part="payload", where=where or f"the payload's result {path}")
        write_atomic(Path(path), json.dumps(data) + "\n")

    @classmethod
    def read(cls, path: Path, *, job: str = "") -> PayloadResult:
        data = _load(path, "payload result")
        check(data, part="payload", job=job, where=f"its payload's result {path}")
        return _set(cls(), data)  # the check above proved the types


@dataclass(frozen=True)
class Field:
    """One field of the table (docs/campaigns.md, "The job record")."""

    name: str
    types: tuple[type, ...]
    by: str
    need: str
    column: bool
    unit: str
    doc: str
    payloads: tuple[str, ...] = ()  # a metric: the payloads that produce it (empty: every one)
    source: str = ""  # a metric: its key in the payload's summary ("a.b": key b of a's object)
    missing: object = None  # a metric: its value when the summary lacks it (None: left out)

    def made_by(self, payload: str) -> bool:
        """Whether PAYLOAD produces this field (a metric of other payloads' only: no)."""
        return not self.payloads or payload in self.payloads


def _types(annotation: str) -> tuple[type, ...]:
    head = annotation.split("|", 1)[0].strip()
    return {"str": STR, "int": INT, "float": NUM}.get(head, LIST if head.startswith("list") else DICT)


_META = ("by", "need", "column", "unit", "doc", "payloads", "source", "missing")
FIELDS: tuple[Field, ...] = tuple(
    Field(f.name, _types(str(f.type)), **{k: f.metadata[k] for k in _META})
    for f in dataclasses.fields(JobRecord)
)
RECORD_FIELDS = tuple(f for f in FIELDS if f.by != "derived")
# the payload's metrics taken from its summary (afkit.campaign.processing.measured)
METRICS = tuple(f for f in FIELDS if f.source)
COLUMNS = [f.name for f in FIELDS if f.column]  # jobs.csv, in this order
# intervals.csv: one row per interval sample, with the job's fields that tell the series apart
INTERVAL_COLUMNS = ["campaign_hash", "bench", "id", "site", "dataset", "scenario", "access", "clients",
                    "repetition", "time", "t", "bytes"]  # fmt: skip


def _sample_ok(sample: object) -> bool:
    return isinstance(sample, dict) and all(_type_ok(sample.get(k), NUM) for k in INTERVAL_KEYS)


def _shape(rec: Mapping[str, object]) -> list[str]:
    """What the typed fields cannot say: the status values, the steps, the interval samples."""
    out = []
    if "status" in rec and rec["status"] not in STATUSES:
        out.append(f"status: {rec['status']!r} is not allowed; allowed values: {', '.join(STATUSES)}")
    steps = rec.get("steps")
    if isinstance(steps, dict):
        out += [f"steps.{k}: not a step or not a number" for k, v in steps.items()
                if k not in STEPS or not _type_ok(v, NUM)]  # fmt: skip
    intervals = rec.get("intervals")
    if isinstance(intervals, list):
        bad = [i for i, s in enumerate(intervals) if not _sample_ok(s)]
        if bad:
            out.append(f"intervals[{bad[0]}]: needs numbers {', '.join(INTERVAL_KEYS)}")
    return out


def problems(rec: object, *, part: str = "record") -> list[str]:
    """What is wrong with REC: a whole job record (``part="record"``) or the payload's result
    (``part="payload"``: only the payload's fields)."""
    if not isinstance(rec, dict):
        return [f"not a JSON object but {type(rec).__name__}"]
    mine = [f for f in RECORD_FIELDS if part == "record" or f.by == "payload"]
    names = {f.name for f in mine}
    out = [f"{k}: unknown field" for k in rec if k not in names]
    for f in mine:
        if f.name not in rec:
            if f.need == "always" or f.need == rec.get("status"):
                out.append(f"{f.name}: missing")
        elif not _type_ok(rec[f.name], f.types):
            want = " or ".join(t.__name__ for t in f.types)
            out.append(f"{f.name}: {rec[f.name]!r} is not {want}")
    return out + _shape(cast("Mapping[str, object]", rec))


def check(rec: object, *, part: str = "record", job: str = "", where: str = "") -> None:
    """Raise InvalidError naming the job (REC's id unless JOB) and WHERE REC came from when REC
    does not match the contract."""
    found = problems(rec, part=part)
    if not found:
        return
    job = job or (str(rec.get("id", "?")) if isinstance(rec, dict) else "?")
    origin = f" ({where})" if where else ""
    raise InvalidError(
        f"job {job}{origin}: the {part} does not match the job-record contract: " + "; ".join(found),
        hint="afkit.campaign.contract lists the fields; delete the record and rerun the job "
        "(afkit campaign retry --failed)",
    )


# ------------------------------------------------------------------------------ jobs.csv's cells


Cell = Union[str, int, float]  # noqa: UP007 (evaluated at run time: Python 3.9 in the image)
