"""Hostile input refused: campaign files, sites files and command lines that hypothesis makes out of
the shipped example campaigns end with exit 0 or their documented code (afkit.errors.ExitCode) and
one ``afkit: error:`` line naming the key, never a traceback; a name used in paths and commands
that holds a separator, ``..``, a leading ``-``, a control or shell character is refused.

The inputs go in-process through what ``afkit campaign validate`` runs (``cmd_validate`` under
``afkit.cli.guarded``, as ``afkit.cli.main`` calls it after parsing) and ``afkit study run
--sites`` (``afkit.cli.main``, its ``afkit campaign run`` call replaced). How many per property:
the hypothesis profile ``AFKIT_HYPOTHESIS_PROFILE`` names (docs/CONVENTIONS.md): ``default``
(``make test``), ``soak`` (by hand, 25 times as many).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import io
import itertools
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from afkit import cli
from afkit.campaign import cli as campaign_cli
from afkit.errors import ExitCode, PrereqError
from afkit.paths import workflow_files
from afkit.study import cli as study_cli

# How many inputs each property draws: make test's, and a soak's (AFKIT_HYPOTHESIS_PROFILE=soak)
EXAMPLES = {"default": 1, "soak": 25}
SCALE = EXAMPLES[os.environ.get("AFKIT_HYPOTHESIS_PROFILE", "default")]
pytestmark = pytest.mark.timeout(600 * SCALE)  # a soak's property takes SCALE times as long


def examples(n: int) -> settings:
    """N inputs in make test's run (SCALE times as many in a soak's), no time limit per input."""
    return settings(max_examples=n * SCALE, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                           HealthCheck.data_too_large])  # fmt: skip


CODES = {int(c) for c in ExitCode} - {int(ExitCode.INTERRUPTED)}
SIF = b"#!/usr/bin/env run-singularity\n\0SIF_MAGIC\0fake"  # a SIF header (afkit.campaign.image.check_sif)


def _examples() -> list[dict[str, Any]]:
    """The shipped example campaigns, their SIF files replaced by fake.sif (beside the test's file)."""
    out = []
    for path in sorted(workflow_files().schema.parents[1].glob("config/*.yaml")):
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        sif = raw["image"].get("sif", "")
        if sif and not sif.startswith("oras://"):
            raw["image"]["sif"] = "fake.sif"
        out.append(raw)
    return out


EXAMPLE_CAMPAIGNS = _examples()

# Names and paths an attacker, a typo or a bad template gives afkit
HOSTILE_NAMES = ["../..", "..", ".", "a/b", "/etc", "-rf", "--help", "$(id)", "`id`", "a;b", "a b", "a|b",
                 "a&b", "a>b", "a\nb", "a\n", "a\x00b", "\x1b[31m", "a\tb", "é", "a\u202eb", "~", "*",
                 "a'b", 'a"b', "", " ", "x" * 300, "a\\b", "{a}", "a$b"]  # fmt: skip
PATHS = ["../../etc", "/etc", "a/../../b", "a//b", "./a", "a/.", "-a", "a/-b", "a\nb", "a b", "$(id)/x",
         "~/x", "a\\..\\b", ""]  # fmt: skip

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from([2**63, -(2**63), 10**30, -1, 0]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.sampled_from(HOSTILE_NAMES + PATHS),
)
junk = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(
            st.one_of(st.text(max_size=8), st.integers(), st.none(), st.booleans()), inner, max_size=4
        ),
    ),
    max_leaves=8,
)
deep = st.integers(min_value=15, max_value=60).map(lambda n: _nested(n))


def _nested(n: int) -> Any:
    value: Any = "x"
    for i in range(n):
        value = [value] if i % 2 else {"k": value}
    return value


def _paths(data: Any, where: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key path in DATA (the root too)."""
    out = [where]
    if isinstance(data, dict):
        for k, v in data.items():
            out += _paths(v, (*where, k))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            out += _paths(v, (*where, i))
    return out


def _parent(data: Any, path: tuple[Any, ...]) -> Any:
    for k in path[:-1]:
        data = data[k]
    return data


@st.composite
def mutated(draw: st.DrawFn, bases: list[dict[str, Any]], values: st.SearchStrategy[Any]) -> Any:
    """A campaign (or sites file) of BASES with 1-3 mutations: a value replaced by VALUES' junk,
    a key removed, a key renamed (a hostile name), an item duplicated."""
    data = copy.deepcopy(draw(st.sampled_from(bases)))
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(_paths(data)))
        op = draw(st.sampled_from(["set", "set", "set", "delete", "rename", "duplicate"]))
        if not path:
            if op == "set":
                data = draw(values)
            continue
        parent, key = _parent(data, path), path[-1]
        if op == "set":
            parent[key] = draw(values)
        elif op == "delete":
            del parent[key]
        elif op == "rename" and isinstance(parent, dict):
            parent[draw(st.sampled_from(HOSTILE_NAMES))] = parent.pop(key)
        elif op == "duplicate" and isinstance(parent, list):
            parent.append(copy.deepcopy(parent[key]))
    return data


_numbers = itertools.count()


@contextlib.contextmanager
def written(folder: Path, data: str | bytes, suffix: str = ".yaml") -> Iterator[Path]:
    """DATA in a new file in FOLDER, removed afterwards. A new name each time: rewriting one file
    costs 3 ms here (ext4 flushes a truncated file's data when it is closed), a new one 0.2 ms."""
    path = folder / f"{next(_numbers)}{suffix}"
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data, encoding="utf-8")
    try:
        yield path
    finally:
        path.unlink()


def _dump(data: Any) -> str:
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    return yaml.dump(data, Dumper=dumper, allow_unicode=True)


def _ended(call: Callable[[], int]) -> tuple[int, str]:
    """CALL's exit code and stderr; a traceback (any exception but SystemExit) fails the test."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = call()
        except SystemExit as end:  # argparse's usage error
            code = int(end.code or 0)
    return code, err.getvalue()


def _check_ending(code: int, stderr: str) -> None:
    assert code in CODES, f"exit {code}, not a documented code: {stderr}"
    errors = [line for line in stderr.splitlines() if line.startswith("afkit: error:")]
    if code == ExitCode.OK:
        assert errors == [], stderr
    else:
        assert len(errors) == 1, f"exit {code} with {len(errors)} error lines: {stderr}"
        assert "Traceback" not in stderr


@pytest.fixture(scope="module")
def here(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of the generated files, with the fake SIF the examples name."""
    d = tmp_path_factory.mktemp("hostile")
    (d / "fake.sif").write_bytes(SIF)
    return d


def validate_file(path: Path) -> tuple[int, str]:
    """``afkit campaign validate PATH`` in-process, as afkit.cli.main runs it once parsed."""
    args = argparse.Namespace(campaign=path)
    return _ended(lambda: cli.guarded(lambda: int(campaign_cli.cmd_validate(args))))


def _key_named(stderr: str) -> bool:
    """The error names where: a key path (``a.b[0].c: ...``, ``(top level)``), or the file."""
    line = next(ln for ln in stderr.splitlines() if ln.startswith("afkit: error:"))
    rest = "\n".join(stderr.splitlines()[stderr.splitlines().index(line) + 1 :])
    return ": " in line.removeprefix("afkit: error: ") or ": " in rest


@examples(700)
@given(mutated(EXAMPLE_CAMPAIGNS, st.one_of(junk, junk, deep)))
def test_a_mutated_campaign_ends_with_its_code_and_one_error_line(here: Path, campaign: Any) -> None:
    with written(here, _dump(campaign)) as path:
        code, stderr = validate_file(path)
    _check_ending(code, stderr)
    if code:
        assert _key_named(stderr), stderr


NAME_KEYS = ["site", "storage", "dataset", "benchmark", "prefix", "tag", "campaign", "file"]


def _renamed(raw: dict[str, Any], what: str, name: str) -> dict[str, Any] | None:
    """RAW with one name WHAT (a site, storage, dataset or benchmark name, a dataset prefix, an
    image tag, the campaign's name, a dataset file) set to NAME, its references too."""
    c = copy.deepcopy(raw)
    if what in ("site", "storage", "dataset"):
        table = {"site": "sites", "storage": "storage", "dataset": "datasets"}[what]
        old = next(iter(c[table]))
        c[table][name] = c[table].pop(old)
        for site in c["sites"].values():
            if what == "storage" and site.get("storage") == old:
                site["storage"] = name
        for ds in c["datasets"].values():
            if what == "storage" and ds.get("storage") == old:
                ds["storage"] = name
        for b in c["benchmarks"]:
            key = {"site": "sites", "dataset": "datasets"}.get(what)
            if key:
                b[key] = [name if v == old else v for v in b[key]]
        c.pop("locations", None)
    elif what == "benchmark":
        c["benchmarks"][0]["name"] = name
    elif what == "campaign":
        c["name"] = name
    elif what == "tag":
        c["image"] = {"build": {"profile": "alice", "tag": name}}
    else:
        ds = next((d for d in c["datasets"].values() if (what[0] == "p" and "generate" in d) or
                   (what[0] == "f" and "files" in d)), None)  # fmt: skip
        if ds is None:
            return None
        if what == "prefix":
            ds["generate"]["prefix"] = name
        else:
            ds["files"] = [name]
            if name.startswith("/"):  # an absolute file is one below its storage's export: not there
                c["storage"][ds["storage"]]["export"] = "/srv/data"
    return c


@examples(700)
@given(st.sampled_from(EXAMPLE_CAMPAIGNS), st.sampled_from(NAME_KEYS),
       st.sampled_from(HOSTILE_NAMES + PATHS))  # fmt: skip
def test_a_name_used_in_paths_or_commands_refuses_what_would_escape(
    here: Path, raw: dict[str, Any], what: str, name: str
) -> None:
    if what in ("prefix", "file", "tag") and name in ("a b", "é", "a/b"):
        name = "a/../b"  # a path's own hostile form ('a/b' is a path, a tag PACKAGE/VERSION)
    c = _renamed(raw, what, name)
    if c is None:
        return
    with written(here, _dump(c)) as path:
        code, stderr = validate_file(path)
    _check_ending(code, stderr)
    assert code == ExitCode.INVALID, f"{what} {name!r} accepted: {stderr}"
    assert "is not allowed: use" in stderr or "control character" in stderr, stderr


@examples(300)
@given(st.binary(max_size=200) | st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass")))
def test_any_bytes_as_a_campaign_file_end_with_their_code(here: Path, blob: bytes) -> None:
    with written(here, blob) as path:
        code, stderr = validate_file(path)
    _check_ending(code, stderr)


SITES_FILE = {
    "image": {"sif": "fake.sif"},
    "sites": {"farm": {"executor": "local", "storage": "a"}},
    "storage": {"a": {"url": "root://a:1094", "path": "/srv/a"}},
    "roles": {"workers": "farm", "server": "a", "servers": ["a"]},
    "params": {"repetitions": 1},
}


@pytest.fixture
def no_run(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, ...]]:
    """``afkit study run``'s ``afkit campaign run`` call replaced: it ends as interrupted (130), so
    the run stops once the study's campaign is valid and written."""
    calls: list[tuple[str, ...]] = []

    def afkit(*argv: str) -> int:
        calls.append(argv)
        return int(ExitCode.INTERRUPTED)

    monkeypatch.setattr(study_cli, "_afkit", afkit)
    return calls


@examples(300)
@given(mutated([SITES_FILE], st.one_of(junk, junk, deep)))
def test_a_mutated_sites_file_ends_with_its_code_and_one_error_line(
    here: Path, no_run: list[tuple[str, ...]], sites: Any
) -> None:
    with written(here, _dump(sites)) as path:
        argv = ["study", "run", "gsi-trains", "--sites", str(path), "--workdir", str(here / "studies")]
        code, stderr = _ended(lambda: cli.main(argv))
    if code == ExitCode.INTERRUPTED:  # valid: its campaign was written and would run
        assert no_run and not [ln for ln in stderr.splitlines() if ln.startswith("afkit: error:")]
        return
    _check_ending(code, stderr)


ARGS = ["validate", "jobs", "results", "locations", "run", "show", "gsi-trains",
        "--sites", "--scale", "--set", "--workdir", "--image", "-n", "--", "-h", "nan", "inf", "-1",
        "1e999", "repetitions=[", "repetitions=1", "nosuch=1", "=", "", "/none", "\x00", "é"]  # fmt: skip


@pytest.fixture(scope="module")
def empty(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with no campaign in it: a command line names none that exists."""
    return tmp_path_factory.mktemp("empty")


@examples(200)
@given(
    st.sampled_from(["campaign", "study"]), st.lists(st.sampled_from(ARGS) | st.text(max_size=6), max_size=6)
)
def test_any_command_line_ends_with_its_code_and_one_error_line(
    empty: Path, no_run: list[tuple[str, ...]], monkeypatch: pytest.MonkeyPatch, area: str, argv: list[str]
) -> None:
    def no_federation() -> dict[str, object]:
        raise PrereqError("the federation in the box is not available (a test: none is up)")

    monkeypatch.setattr(study_cli.recipe, "federation_urls", no_federation)
    with contextlib.chdir(empty):
        code, stderr = _ended(lambda: cli.main([area, *argv]))
    if code == ExitCode.INTERRUPTED:
        return
    if "-h" in argv and code == 0:
        return
    _check_ending(code, stderr)


# The inputs hypothesis (or the search before it) found, one test per bug fixed; the campaign is
# the shipped read-sweep example (oras:// image: valid without a SIF file).
def _read_sweep() -> dict[str, Any]:
    raw = next(c for c in EXAMPLE_CAMPAIGNS if c["name"] == "read-sweep")
    return copy.deepcopy(raw)


def _validated(here: Path, raw: Any) -> tuple[int, str]:
    with written(here, _dump(raw)) as path:
        code, stderr = validate_file(path)
    _check_ending(code, stderr)
    return code, stderr


def test_a_key_that_is_not_text_is_named_not_a_traceback(here: Path) -> None:
    raw = _read_sweep()
    raw[1] = "x"  # was: TypeError: sequence item 0: expected str instance, int found
    code, stderr = _validated(here, raw)
    assert code == ExitCode.INVALID
    assert "(top level): the key 1 is not text" in stderr


def test_a_site_named_with_a_trailing_newline_is_refused(here: Path) -> None:
    raw = _read_sweep()
    old = next(iter(raw["sites"]))
    raw["sites"]["gsi\n"] = raw["sites"].pop(old)  # was: valid (Python's $ matched before the newline)
    for b in raw["benchmarks"]:
        b["sites"] = ["gsi\n"]
    raw.pop("locations", None)
    code, stderr = _validated(here, raw)
    assert code == ExitCode.INVALID
    assert "sites: the name 'gsi\\n' is not allowed: use 1 to 64 letters" in stderr


def test_a_dataset_prefix_that_leaves_its_storage_is_refused(here: Path) -> None:
    raw = _read_sweep()
    store = next(iter(raw["storage"]))
    raw["datasets"]["gen"] = {"storage": store, "generate": {"count": 1, "size_mb": 1, "prefix": "../../etc"}}
    code, stderr = _validated(here, raw)  # was: valid
    assert code == ExitCode.INVALID
    assert "datasets.gen.generate.prefix: '../../etc' is not allowed: use a relative path" in stderr


def test_a_dataset_file_outside_its_storage_is_refused(here: Path) -> None:
    raw = _read_sweep()
    ds = next(n for n, d in raw["datasets"].items() if "files" in d)
    raw["datasets"][ds]["files"] = ["/etc/passwd"]  # was: valid
    code, stderr = _validated(here, raw)
    assert code == ExitCode.INVALID
    assert f"datasets.{ds}.files[0]: '/etc/passwd' is not allowed: use a path below storage." in stderr


def test_a_duration_that_is_not_a_number_is_refused(here: Path) -> None:
    raw = _read_sweep()
    raw["benchmarks"][0]["duration"] = float("nan")  # was: valid (NaN > 0 is not false to jsonschema)
    code, stderr = _validated(here, raw)
    assert code == ExitCode.INVALID
    assert "benchmarks[0].duration: nan is not a finite number" in stderr


def test_a_sweep_of_a_billion_jobs_is_refused_without_planning_them(here: Path) -> None:
    raw = _read_sweep()
    raw["benchmarks"][0]["sweep"]["repetitions"] = 10**9  # was: validate planned them (a hang)
    code, stderr = _validated(here, raw)
    assert code == ExitCode.INVALID
    assert "benchmarks[0].sweep: the campaign plans" in stderr and "more than 100000" in stderr


def test_a_number_beyond_int64_is_refused(here: Path) -> None:
    raw = _read_sweep()
    raw["benchmarks"][0]["sweep"]["repetitions"] = 10**30  # was: OverflowError
    code, stderr = _validated(here, raw)
    assert code == ExitCode.INVALID
    assert "benchmarks[0].sweep.repetitions: " in stderr and "is too large" in stderr


def test_a_campaign_file_that_is_not_utf8_is_exit_6(here: Path) -> None:
    with written(here, b"name: \xff\xfe\n") as path:  # was: UnicodeDecodeError
        code, stderr = validate_file(path)
    _check_ending(code, stderr)
    assert code == ExitCode.INVALID
    assert "not a text file (byte 6 is not UTF-8)" in stderr


def _study_run(here: Path, sites: dict[str, Any], *extra: str) -> tuple[int, str]:
    with written(here, _dump(sites)) as path:
        argv = ["study", "run", "gsi-trains", "--sites", str(path), "--workdir", str(here / "st"), *extra]
        code, stderr = _ended(lambda: cli.main(argv))
    _check_ending(code, stderr)
    return code, stderr


def test_a_sites_file_param_named_by_a_number_is_named(here: Path, no_run: list[Any]) -> None:
    sites = copy.deepcopy(SITES_FILE)
    sites["params"] = {1: 2}  # was: TypeError: '<' not supported between instances of 'int' and 'str'
    code, stderr = _study_run(here, sites)
    assert code == ExitCode.INVALID
    assert "params: the key 1 is not text" in stderr


def test_a_sites_file_image_that_is_not_a_mapping_is_named(here: Path, no_run: list[Any]) -> None:
    sites = copy.deepcopy(SITES_FILE)
    sites["image"] = 5  # was: TypeError: 'int' object is not iterable
    code, stderr = _study_run(here, sites)
    assert code == ExitCode.INVALID
    assert "image: expected a mapping, not 5" in stderr


def test_a_role_naming_a_mapping_is_named(here: Path, no_run: list[tuple[str, ...]]) -> None:
    sites = copy.deepcopy(SITES_FILE)
    sites["roles"]["servers"] = [{}]  # was: TypeError: unhashable type: 'dict'
    code, stderr = _study_run(here, sites)
    assert code == ExitCode.INVALID
    assert "roles.servers: {} is not a name" in stderr


def test_scale_nan_is_a_usage_error(here: Path, no_run: list[tuple[str, ...]]) -> None:
    code, stderr = _study_run(here, SITES_FILE, "--scale", "nan")  # was: ValueError from round(nan)
    assert code == ExitCode.USAGE
    assert "afkit: error: study run: argument --scale: 'nan' is not a finite number" in stderr


def test_set_with_a_value_that_is_not_yaml_is_a_usage_error(here: Path, no_run: list[Any]) -> None:
    code, stderr = _study_run(here, SITES_FILE, "--set", "repetitions=[")  # was: a YAML traceback
    assert code == ExitCode.USAGE
    assert "afkit: error: --set repetitions: '[' is not a YAML value" in stderr


def test_a_usage_error_is_one_afkit_error_line(here: Path) -> None:
    # was: "afkit campaign validate: error: ..." (argparse's prog, not afkit's error line)
    code, stderr = _ended(lambda: cli.main(["campaign", "validate"]))
    _check_ending(code, stderr)
    assert code == ExitCode.USAGE
    assert "afkit: error: campaign validate: the following arguments are required: campaign" in stderr


def test_a_count_written_as_a_float_is_refused(here: Path) -> None:
    raw = _read_sweep()
    raw["benchmarks"][0]["sweep"]["repetitions"] = 1.0  # was: TypeError from range(1.0) (the soak found it)
    code, stderr = _validated(here, raw)
    assert code == ExitCode.INVALID
    assert "benchmarks[0].sweep.repetitions: 1.0 is not of type 'integer'" in stderr
