"""Soak: the host tests that wait on processes, ten times, at a load of at least 8 on 2 cores.

Not part of ``make test`` (a few minutes a round). ``make test``'s own stages load 2 cores to 9-13
when testbeds run beside it; a test that waits a fixed wall-time budget for a process (a payload's
first record, a stage's log) then fails on a machine its author never had. This soak makes that
load on purpose: CPU hogs (busy loops at the tests' own priority, by default 5 per core) run beside
the tests, and each round starts only when the one-minute load average is at least ``--load-min``.
The tests are those that wait on something: the test functions of tests/unit whose body calls
``wait_until(``, ``ctrl_c_when(`` or ``interrupt_when(`` (found by their source, so a new such test
is soaked too) and the bats tests of tests/bats whose body calls ``wait_until`` (tests/bats/testbed.bats
only where the testbed is up, ``--with-testbed``). Run from the repository
as root, after ``make venv``:

    .venv/bin/python tests/soak/load_soak.py [--rounds 10] [--load-min 8] [--hogs N]

One JSON line per round (passed, failed, the load before and after, seconds), then a summary;
exit 1 when any round failed, and the failing round's output in build/load-soak/round-N.log.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))

from waitsupport import wait_until  # noqa: E402

BATS_NEEDS_TESTBED = {"testbed.bats"}


WAITS = re.compile(r"\b(wait_until|ctrl_c_when|interrupt_when)\(")


def _unit_waiting(path: Path) -> list[str]:
    """PATH's test functions (pytest node ids, their parameters all) whose body waits."""
    tree = ast.parse(path.read_text())
    lines = path.read_text().splitlines()
    out = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
            body = "\n".join(lines[node.lineno - 1 : node.end_lineno])
            if WAITS.search(body):
                out.append(f"{path.relative_to(REPO)}::{node.name}")
    return out


def _bats_waiting(path: Path) -> list[str]:
    """The names of PATH's @test blocks whose body calls wait_until."""
    names: list[str] = []
    body: list[str] = []
    current: str | None = None
    for line in [*path.read_text().splitlines(), "@test end"]:
        start = re.match(r'@test "(.*)" \{', line)
        if start or line.startswith("@test end"):
            if current is not None and any("wait_until " in b for b in body):
                names.append(current)
            current, body = (start.group(1) if start else None), []
        else:
            body.append(line)
    return names


def waiting_tests(with_testbed: bool) -> tuple[list[str], dict[Path, list[str]]]:
    """(the unit tests' node ids, each bats file's test names) that wait on processes."""
    unit = [n for p in sorted((REPO / "tests/unit").rglob("test_*.py")) for n in _unit_waiting(p)]
    bats = {
        p: names
        for p in sorted((REPO / "tests/bats").glob("*.bats"))
        if (with_testbed or p.name not in BATS_NEEDS_TESTBED) and (names := _bats_waiting(p))
    }
    return unit, bats


def hogs(n: int) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def counts(text: str) -> tuple[int, int]:
    """(passed, failed) from pytest's closing line and bats' TAP lines."""
    passed = failed = 0
    for m in re.finditer(r"(\d+) (passed|failed|error)", text):
        if m.group(2) == "passed":
            passed += int(m.group(1))
        else:
            failed += int(m.group(1))
    passed += len(re.findall(r"^ok \d+", text, re.M))
    failed += len(re.findall(r"^not ok \d+", text, re.M))
    return passed, failed


def one_round(unit: list[str], bats: dict[Path, list[str]], log: Path) -> tuple[int, int, int]:
    venv = Path(os.environ.get("AFKIT_VENV", REPO / ".venv"))
    env = {**os.environ, "PATH": f"{venv / 'bin'}:{os.environ['PATH']}"}
    out = []
    codes = []
    filters = [["--filter", "^(" + "|".join(re.escape(n) for n in names) + ")$", str(p)]
               for p, names in bats.items()]  # fmt: skip
    for cmd in (
        [str(venv / "bin/pytest"), "-q", "-p", "no:cacheprovider", "-n", "3", *unit],
        *(["bats", "--tap", *f] for f in filters),
    ):
        proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, check=False)
        out.append(f"$ {' '.join(cmd)}\n{proc.stdout}{proc.stderr}")
        codes.append(proc.returncode)
    text = "\n".join(out)
    log.write_text(text)
    passed, failed = counts(text)
    return passed, failed, max(codes)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--load-min", type=float, default=8.0, help="the one-minute load each round starts at")
    ap.add_argument("--hogs", type=int, default=5 * (os.cpu_count() or 1), help="busy loops beside the tests")
    ap.add_argument("--with-testbed", action="store_true", help="also tests/bats/testbed.bats (testbed up)")
    args = ap.parse_args()
    unit, bats = waiting_tests(args.with_testbed)
    logs = REPO / "build/load-soak"
    logs.mkdir(parents=True, exist_ok=True)
    listed = {"unit": unit, "bats": {str(p.relative_to(REPO)): n for p, n in bats.items()}}
    print(json.dumps({**listed, "hogs": args.hogs}), flush=True)
    running = hogs(args.hogs)
    bad = 0
    try:
        for n in range(1, args.rounds + 1):
            wait_until(lambda: os.getloadavg()[0] >= args.load_min, 600, 1.0,
                       what=f"a load of {args.load_min}")  # fmt: skip
            before, start = os.getloadavg()[0], time.monotonic()
            passed, failed, code = one_round(unit, bats, logs / f"round-{n}.log")
            ok = code == 0 and failed == 0 and passed > 0
            bad += not ok
            print(json.dumps({"round": n, "ok": ok, "passed": passed, "failed": failed, "load_before": before,
                              "load_after": os.getloadavg()[0], "seconds": round(time.monotonic() - start)}),
                  flush=True)  # fmt: skip
    finally:
        for h in running:
            h.kill()
            h.wait()
    print(f"load soak: {args.rounds - bad} of {args.rounds} rounds green at load >= {args.load_min:g}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
