"""afkit.errors.one_line: the one line of an error text that a record or a message shows; ended: how a
program ended."""

from __future__ import annotations

from afkit.errors import ended, one_line

APPTAINER = "INFO:    Starting\nFATAL:   could not open image x.sif: no such file\nINFO:    Cleaning up\n"


def test_the_last_line_naming_an_error_is_shown() -> None:
    line = one_line(APPTAINER, marks=("fatal", "error"))
    assert line == "FATAL:   could not open image x.sif: no such file"


def test_without_an_error_line_the_last_line_is_shown() -> None:
    assert one_line("first\nsecond\n") == "second"


def test_first_shows_the_first_line_of_a_message() -> None:
    assert one_line("ValueError: bad\nmore detail\n", marks=(), first=True) == "ValueError: bad"


def test_a_quoted_file_on_the_next_line_is_added() -> None:
    text = "FileNotFoundError: file not found\n\n    '/data/f.root'\n\nFiles may be specified as:\n"
    assert one_line(text, marks=(), first=True) == "FileNotFoundError: file not found '/data/f.root'"


def test_a_long_line_is_cut_and_no_text_is_empty() -> None:
    assert one_line("error " + "x" * 400, limit=20) == "error xxxxxxxxxxx..."
    assert one_line("  \n") == ""


def test_otherwise_stands_for_text_that_names_no_error() -> None:
    assert one_line("INFO: pulling\nINFO: done\n", marks=("fatal", "error"), otherwise="") == ""


def test_a_program_killed_by_a_signal_is_named_by_the_signal() -> None:
    assert ended(-11) == "was killed by SIGSEGV"
    assert ended(1) == "exited 1"
    assert ended(-200) == "was killed by signal 200"  # no such signal's name
