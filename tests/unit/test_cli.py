"""The single CLI entry point: every area registers, errors map to exit codes."""

from __future__ import annotations

import pytest

from afkit import __version__, cli
from afkit.errors import AfkitError, ExitCode, NotFoundError


def test_every_area_is_a_subcommand() -> None:
    parser = cli.build_parser()
    text = parser.format_help()
    for area in cli.AREAS:
        assert area in text


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
    monkeypatch.setattr(cli, "build_parser", lambda: _Fixed(args))
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
