"""One table of exit codes: afkit.errors.ExitCode. The shell scripts' constants
(scripts/lib/common.sh) and the standalone fixture generator's (tests/fixtures/cvmfsfix/cli.py,
which imports nothing of afkit) are documented against it and must match it; README's table too."""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

from afkit.errors import ExitCode

REPO = Path(__file__).resolve().parents[2]


def test_the_shell_constants_are_the_exit_codes() -> None:
    names = [f"AFKIT_EX_{code.name}" for code in ExitCode]
    script = f"source {REPO / 'scripts/lib/common.sh'}; " + "; ".join(f'echo "${n}"' for n in names)
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True).stdout.split()
    assert out == [str(int(code)) for code in ExitCode]


def test_the_fixture_generators_constants_are_the_exit_codes() -> None:
    tree = ast.parse((REPO / "tests/fixtures/cvmfsfix/cli.py").read_text(encoding="utf-8"))
    found: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Tuple):
            names = [t.id for t in node.targets[0].elts if isinstance(t, ast.Name)]
            if names and all(n.startswith("EX_") for n in names):
                found.update(zip(names, ast.literal_eval(node.value), strict=True))
    aliases = {"EX_FAIL": "FAILURE"}
    assert found  # the generator still names its codes
    for name, value in found.items():
        assert value == ExitCode[aliases.get(name, name.removeprefix("EX_"))], name


def test_the_readme_table_lists_every_exit_code() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    table = text[text.index("## Exit codes") :].split("\n## ", 1)[0]
    assert sorted(int(c) for c in re.findall(r"^\| (\d+) \|", table, re.M)) == sorted(map(int, ExitCode))
