"""The single CLI entry point: every area registers, errors map to exit codes."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from afkit import __version__, cli
from afkit.errors import AfkitError, ExitCode, NotFoundError


def test_every_area_is_a_subcommand() -> None:
    parser = cli.build_parser()
    text = parser.format_help()
    for area in cli.AREAS:
        assert area in text


def test_only_the_selected_area_is_imported() -> None:
    code = (
        "import sys; from afkit import cli; cli.build_parser(cli.selected_area(['bench', '--help']));"
        "print(sorted(m for m in sys.modules"
        " if m.startswith('afkit.') and m.count('.') == 2 and m.endswith('.cli')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['afkit.bench.cli']"


@pytest.mark.parametrize("area", list(cli.AREAS))
def test_each_area_registers_its_commands(area: str) -> None:
    def area_parser(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
        action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        return action.choices[area]

    def has_commands(p: argparse.ArgumentParser) -> bool:
        return callable(p._defaults.get("func")) or any(
            isinstance(a, argparse._SubParsersAction) for a in p._actions
        )

    assert has_commands(area_parser(cli.build_parser(area)))
    assert not has_commands(area_parser(cli.build_parser(None)))


def test_selected_area() -> None:
    assert cli.selected_area(["--version"]) is None
    assert cli.selected_area(["image", "build"]) == "image"
    assert cli.selected_area(["nonsense"]) is None


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["--version"])
    assert exc.value.code == 0
    assert __version__ in capsys.readouterr().out


def test_missing_command_is_usage_error() -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main([])
    assert exc.value.code == ExitCode.USAGE


def test_afkit_error_becomes_exit_code(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def boom(_args: object) -> int:
        raise NotFoundError("no such tag 'X'", hint="try 'afkit image tags'")

    parser = cli.build_parser()
    args = parser.parse_args(["image"])
    args.func = boom
    monkeypatch.setattr(cli, "build_parser", lambda _area=None: _Fixed(args))
    assert cli.main(["image"]) == ExitCode.NOT_FOUND
    err = capsys.readouterr().err
    assert "no such tag 'X'" in err and "hint: try" in err


def test_error_default_code() -> None:
    assert AfkitError("x").code == ExitCode.FAILURE


class _Fixed:
    def __init__(self, args: object) -> None:
        self._args = args

    def parse_args(self, _argv: object) -> object:
        return self._args
