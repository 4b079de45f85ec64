"""docs/campaigns.md's one line of typed hops names the code's real types and functions (and the
contract's docstring says the same line)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

from afkit.campaign import contract

DOC = Path(__file__).resolve().parents[3] / "docs" / "campaigns.md"
TYPES = {
    "Campaign": "afkit.campaign.config",
    "Job": "afkit.campaign.contract",
    "JobSpec": "afkit.campaign.contract",
    "PayloadSpec": "afkit.campaign.contract",
    "PayloadResult": "afkit.campaign.contract",
    "JobRecord": "afkit.campaign.contract",
    "JobRow": "afkit.campaign.rows",
}


def _section() -> str:
    text = DOC.read_text(encoding="utf-8")
    return text.split("## What a job does", 1)[1].split("\n## ", 1)[0]


def _line() -> str:
    [line] = re.findall(r"```text\n(C\.yaml → .*)\n```", _section())
    return line


def test_the_path_is_one_line_of_the_codes_types() -> None:
    hops = [h.strip() for h in _line().split("→")]
    assert hops[0] == "C.yaml" and hops[-1] == "report, compare"
    typed = [h.strip("[]") for h in hops[1:-1] if not h.startswith("(") and h != "jobs.csv"]
    assert typed == list(TYPES)
    for name, module in TYPES.items():
        assert isinstance(getattr(importlib.import_module(module), name), type), name


def test_every_function_and_module_the_path_table_names_exists() -> None:
    named = set(re.findall(r"`(afkit\.[A-Za-z_.]+[A-Za-z_])`", _section()))
    assert "afkit.campaign.rows.read_jobs" in named and "afkit.campaign.plan.expand" in named
    for dotted in sorted(named):
        try:
            importlib.import_module(dotted)
        except ModuleNotFoundError:
            module, _, attr = dotted.rpartition(".")
            obj = importlib.import_module(module)
            assert hasattr(obj, attr), dotted


def test_the_contract_says_the_same_line() -> None:
    doc = " ".join((contract.__doc__ or "").split())
    assert " ".join(_line().split()) in doc
