"""Trace files for --replay."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from afkit.bench.trace import load_trace
from afkit.errors import InvalidError, NotFoundError


def test_csv_with_header(tmp_path: Path) -> None:
    p = tmp_path / "t.csv"
    p.write_text("time,offset,length\n0.5,0,100\n0.6,4096,200\n")
    assert [(e.offset, e.length, e.time) for e in load_trace(p)] == [(0, 100, 0.5), (4096, 200, 0.6)]


def test_csv_without_header(tmp_path: Path) -> None:
    p = tmp_path / "t.csv"
    p.write_text("# recorded\n0,100\n200,50\n")
    assert [(e.offset, e.length) for e in load_trace(p)] == [(0, 100), (200, 50)]


def test_json_pairs_objects_and_lines(tmp_path: Path) -> None:
    a = tmp_path / "a.json"
    a.write_text(json.dumps([[0, 10], {"offset": 20, "length": 5}]))
    b = tmp_path / "b.jsonl"
    b.write_text('{"time": 1.0, "offset": 3, "length": 4}\n\n{"offset": 9, "length": 1}\n')
    assert [(e.offset, e.length) for e in load_trace(a)] == [(0, 10), (20, 5)]
    assert [(e.offset, e.length) for e in load_trace(b)] == [(3, 4), (9, 1)]


@pytest.mark.parametrize("text", ["0,-5\n", "x,y\n", "[[1]]", "[1, 2", ""])
def test_bad_traces_are_invalid(tmp_path: Path, text: str) -> None:
    p = tmp_path / "bad.csv" if not text.startswith("[") else tmp_path / "bad.json"
    p.write_text(text)
    with pytest.raises(InvalidError):
        load_trace(p)


def test_missing_trace(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError):
        load_trace(tmp_path / "none.csv")
