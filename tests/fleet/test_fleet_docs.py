"""docs/fleet.md is tested: its DuckDB and pandas queries run against a real export, and its
command synopsis is the real `--help`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fleetgen import write_fleet

from rundiff_core.cli import build_parser
from rundiff_core.fleet import export_fleet
from rundiff_core.resolve import load_runs

DOC = Path(__file__).resolve().parents[2] / "docs" / "fleet.md"


def _block(marker: str, lang: str) -> str:
    text = DOC.read_text()
    m = re.search(rf"<!-- tested: {re.escape(marker)}.*?-->\s*```{lang}\n(.*?)```", text, re.S)
    assert m, f"docs/fleet.md lost its tested block {marker!r}"
    return m.group(1)


@pytest.fixture
def exported(tmp_path, monkeypatch):
    src = tmp_path / "runs"
    write_fleet(src, arms=2, seeds=2, steps=40)
    export_fleet([str(src)], str(tmp_path / "fleet"), workers=0, progress=False)
    expected = _expected_last_accuracy(src)  # journal names depend on the cwd: read them first
    monkeypatch.chdir(tmp_path)  # the docs' paths are relative to the folder holding fleet/
    return expected


def _expected_last_accuracy(src: Path) -> list[tuple[str, float, float]]:
    out = []
    for run in load_runs(f"journal:{src}"):
        h = run.history(["eval/accuracy"])
        i = int(h["step"].to_numpy().argmax())
        out.append((run.name, float(h["value"].iloc[i]), float(h["step"].iloc[i])))
    return sorted(out, key=lambda r: (-r[1], r[0]))


def test_documented_duckdb_query_gives_last_accuracy_per_run(exported):
    duckdb = pytest.importorskip("duckdb")
    rows = duckdb.connect().sql(_block("duckdb-last-accuracy", "sql")).fetchall()
    expected = exported
    assert [r[0] for r in rows] == [e[0] for e in expected]
    assert [(r[1], r[2]) for r in rows] == [(e[1], e[2]) for e in expected]


def test_documented_pandas_snippet_runs(exported):
    text = DOC.read_text()
    code = re.search(r"## Querying with pandas / pyarrow\s*```python\n(.*?)```", text, re.S).group(1)
    scope: dict = {}
    exec(compile(code, "docs/fleet.md", "exec"), scope)  # noqa: S102 - the documented snippet
    got = sorted(zip(scope["last"]["name"], scope["last"]["value"], scope["last"]["step"],
                     strict=True), key=lambda r: (-r[1], r[0]))
    assert got == exported
    assert set(scope["some"].column("key").to_pylist()) == {"loss"}


def test_synopsis_is_the_real_help():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    usage = sub.choices["export"].format_usage()
    documented = re.search(r"```\n(usage: rundiff export.*?)```", DOC.read_text(), re.S).group(1)
    assert " ".join(documented.split()) == " ".join(usage.split())
