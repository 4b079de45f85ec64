"""``afkit.bench.cli_common``: the registration, check and runner the bench subcommands share."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest

from afkit.bench import cli_common
from afkit.bench.analysis import AnalysisConfig
from afkit.errors import ExitCode, UsageError


def _handler(_args: argparse.Namespace) -> int:
    return 0


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+")
    parser.add_argument("--duration", type=float)


def _subparsers() -> tuple[argparse.ArgumentParser, Any]:
    top = argparse.ArgumentParser(prog="t")
    return top, top.add_subparsers(dest="cmd")


@pytest.mark.parametrize("duration", [None, 0.5, 30.0])
def test_check_duration_accepts_none_and_positive(duration: float | None) -> None:
    assert cli_common.check_duration(argparse.Namespace(duration=duration)) == duration


@pytest.mark.parametrize("duration", [0.0, -1.0])
def test_check_duration_refuses_zero_and_negative(duration: float) -> None:
    with pytest.raises(UsageError, match=f"--duration must be positive, got {duration}") as exc:
        cli_common.check_duration(argparse.Namespace(duration=duration))
    assert exc.value.code == ExitCode.USAGE


def test_add_benchmark_puts_the_output_group_after_the_options() -> None:
    top, sub = _subparsers()
    parser = cli_common.add_benchmark(
        sub, "x", summary="the x bench", description="Runs x.", options=_options, func=_handler
    )
    assert [a.dest for a in parser._actions] == [
        "help",
        "files",
        "duration",
        "output",
        "monitor",
        "no_monitor",
    ]
    output = next(g for g in parser._action_groups if g.title == "output")
    assert [a.dest for a in output._group_actions] == ["output", "monitor", "no_monitor"]
    assert parser.description == "Runs x."
    assert "the x bench" in top.format_help()
    args = top.parse_args(["x", "f1"])
    assert args.func is _handler and args.output == "-" and args.monitor is None and not args.no_monitor


def test_add_multi_benchmark_puts_clients_outdir_and_monitor_first() -> None:
    top, sub = _subparsers()
    parser = cli_common.add_multi_benchmark(
        sub, "mx", summary="N x clients", description="Runs N x.", options=_options, func=_handler
    )
    assert [a.dest for a in parser._actions] == [
        "help",
        "clients",
        "outdir",
        "no_monitor",
        "threads",
        "files",
        "duration",
    ]
    assert "N x clients" in top.format_help()
    args = top.parse_args(["mx", "-n", "2", "--outdir", "d", "f1", "f2"])
    assert args.func is _handler and args.clients == 2 and args.outdir == "d" and not args.no_monitor
    with pytest.raises(SystemExit) as exc:  # -n and --outdir are required
        top.parse_args(["mx", "f1"])
    assert exc.value.code == 2


def test_run_multi_hands_outdir_kind_and_public_args_to_run_clients(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: dict[str, Any] = {}

    def fake_run_clients(configs: list[Any], outdir: Path, **kw: Any) -> int:
        seen.update(configs=configs, outdir=outdir, **kw)
        return 7

    monkeypatch.setattr(cli_common, "run_clients", fake_run_clients)
    args = argparse.Namespace(outdir="res", no_monitor=True, clients=1, func=_handler)
    configs = [AnalysisConfig(files=["a.root"], branches=["b"])]
    assert cli_common.run_multi(args, "multi-analysis", configs) == 7
    assert seen == {
        "configs": configs,
        "outdir": Path("res"),
        "no_monitor": True,
        "kind": "multi-analysis",
        "args": {"outdir": "res", "no_monitor": True, "clients": 1},
        "threads": False,
    }


def test_multi_and_multi_analysis_give_each_client_its_files(monkeypatch: pytest.MonkeyPatch) -> None:
    from afkit import cli
    from afkit.bench import cli_analysis, cli_read
    from afkit.bench.output import public_args
    from afkit.bench.readbench import ReadConfig

    calls: list[tuple[str, list[Any], argparse.Namespace]] = []

    def fake_run_multi(args: argparse.Namespace, kind: str, configs: list[Any]) -> int:
        calls.append((kind, configs, args))
        return 0

    monkeypatch.setattr(cli_read, "run_multi", fake_run_multi)
    monkeypatch.setattr(cli_analysis, "run_multi", fake_run_multi)
    common = ["-n", "2", "--outdir", "d", "--duration", "3", "f1", "f2", "f3"]
    assert cli.main(["bench", "multi", "--block", "4k", "--drop-cache", *common]) == 0
    assert cli.main(["bench", "multi-analysis", "-b", "px", "-t", "events", *common]) == 0

    (kind, reads, rargs), (akind, analyses, aargs) = calls
    assert kind == "multi" and akind == "multi-analysis"
    assert all(isinstance(c, ReadConfig) for c in reads)
    assert [c.urls for c in reads] == [["f1", "f3"], ["f2"]]
    assert reads[0].plan is reads[1].plan and reads[0].plan.block == 4096
    assert {(c.duration, c.reconnect_timeout, c.trace_out, c.drop_cache) for c in reads} == {
        (3.0, 10.0, None, True)
    }
    assert all(c.args == public_args(rargs) for c in reads)
    assert [c.files for c in analyses] == [["f1", "f3"], ["f2"]]
    assert {(tuple(c.branches), c.tree, c.duration) for c in analyses} == {(("px",), "events", 3.0)}
    assert all(c.args == public_args(aargs) for c in analyses)


@pytest.mark.parametrize("command", [["multi"], ["multi-analysis", "-b", "px"]])
def test_multi_checks_the_duration_before_starting_clients(
    command: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from afkit import cli
    from afkit.bench import cli_analysis, cli_read

    def never(*_a: Any) -> int:
        raise AssertionError("no client may start")

    monkeypatch.setattr(cli_read, "run_multi", never)
    monkeypatch.setattr(cli_analysis, "run_multi", never)
    argv = ["bench", *command, "-n", "1", "--outdir", "d", "--duration", "0", "f1"]
    assert cli.main(argv) == ExitCode.USAGE
    assert "--duration must be positive, got 0.0" in capsys.readouterr().err


def test_multi_with_a_demand_paces_every_client_and_loop_reads_until_the_duration(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from afkit import cli
    from afkit.bench import cli_read

    calls: list[list[Any]] = []

    def record(_args: argparse.Namespace, _kind: str, configs: list[Any]) -> int:
        calls.append(configs)
        return 0

    monkeypatch.setattr(cli_read, "run_multi", record)
    argv = ["bench", "multi", "-n", "2", "--outdir", "d", "--demand", "0.5MB/s", "--loop", "--duration", "5"]
    assert cli.main([*argv, "f1", "f2"]) == 0
    assert {(c.rate, c.repeat, c.duration) for c in calls[0]} == {(500_000.0, True, 5.0)}
    assert cli.main(["bench", "multi", "-n", "1", "--outdir", "d", "f1"]) == 0
    assert {(c.rate, c.repeat) for c in calls[1]} == {(None, False)}  # no demand: as fast as it can


@pytest.mark.parametrize(
    ("extra", "says"),
    [(["--loop"], "--loop reads until --duration ends"), (["--demand", "fast"], "not a rate: 'fast'")],
)
def test_a_loop_without_a_duration_or_a_demand_that_is_no_rate_is_exit_2(
    extra: list[str], says: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from afkit import cli
    from afkit.bench import cli_read

    monkeypatch.setattr(cli_read, "run_multi", lambda *_a: pytest.fail("no client may start"))
    assert cli.main(["bench", "multi", "-n", "1", "--outdir", "d", *extra, "f1"]) == ExitCode.USAGE
    assert says in capsys.readouterr().err


def test_multi_threads_runs_the_clients_in_this_process_each_on_its_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from afkit import cli
    from afkit.bench import multi
    from afkit.bench.records import read_jsonl

    monkeypatch.setattr(multi, "run_multi", lambda *_a: pytest.fail("no client process may start"))
    files = []
    for i in range(2):
        files.append(tmp_path / f"f{i}")
        files[-1].write_bytes(bytes([i]) * 200_000)
    out = tmp_path / "res"
    argv = [
        "bench",
        "multi",
        "-n",
        "2",
        "--threads",
        "--outdir",
        str(out),
        "--no-monitor",
        "--block",
        "64KiB",
    ]
    assert cli.main([*argv, *map(str, files)]) == 0
    summaries = [read_jsonl(out / f"client-00{i}.jsonl")[-1] for i in range(2)]
    assert [(s["bytes"], s["files"][0]["url"]) for s in summaries] == [(200_000, str(f)) for f in files]
    assert read_jsonl(out / "sum.jsonl")[-1]["clients_ok"] == 2
