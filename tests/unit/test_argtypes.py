"""afkit.argtypes: the number options of every area take finite numbers only (exit 2, one error)."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (
            ["campaign", "compare", "a", "b", "--tolerance", "nan"],
            "argument --tolerance: 'nan' is not a finite number",
        ),
        (
            ["campaign", "compare", "a", "b", "--tolerance", "-0.1"],
            "argument --tolerance: '-0.1' is negative",
        ),
        (["study", "run", "gsi-trains", "--scale", "inf"], "argument --scale: 'inf' is not a finite number"),
        (["study", "run", "gsi-trains", "--scale", "0"], "argument --scale: '0' is not above 0"),
        (["bench", "read", "x", "--duration=-inf"], "argument --duration: '-inf' is not a finite number"),
        (
            ["bench", "read", "x", "--reconnect-timeout", "ten"],
            "argument --reconnect-timeout: 'ten' is not a number",
        ),
        (["storage", "up", "origin", "--timeout", "NaN"], "argument --timeout: 'NaN' is not a finite number"),
    ],
)
def test_a_number_option_that_is_not_a_finite_number_is_exit_2_in_one_error(
    argv: list[str], says: str
) -> None:
    proc = subprocess.run([sys.executable, "-m", "afkit", *argv], capture_output=True, text=True, check=False)
    assert proc.returncode == 2, proc.stderr
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("afkit: error:")]
    assert len(errors) == 1 and says in errors[0], proc.stderr
    assert "Traceback" not in proc.stderr
