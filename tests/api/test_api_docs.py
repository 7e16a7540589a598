"""docs/api.md's examples run as doctests on demo runs and two generated trajectory exports."""

from __future__ import annotations

import doctest
import sys
from pathlib import Path

import pytest

from rundiff_core.demo import make_demo

DOCS = Path(__file__).resolve().parents[2] / "docs"
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "trajectories"))
import trajgen  # noqa: E402


@pytest.fixture
def docs_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    make_demo(str(tmp_path / "runs"))
    s = trajgen.scenario({"both_pass": 3, "both_fail": 1, "regression": 1, "persistence": 4,
                          "knowledge": 1})
    (tmp_path / "agents").mkdir()
    trajgen.write_export(tmp_path / "agents" / "small-model.json", s.a)
    trajgen.write_export(tmp_path / "agents" / "big-model.json", s.b)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_api_md_examples_run(docs_folder: Path) -> None:
    text = (DOCS / "api.md").read_text(encoding="utf-8")
    assert text.count(">>> ") >= 25  # the examples are there to run, not only to read
    parser = doctest.DocTestParser()
    test = parser.get_doctest(text, {}, "docs/api.md", str(DOCS / "api.md"), 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    out: list[str] = []
    runner.run(test, out=out.append)
    assert runner.failures == 0, "".join(out)
    assert runner.tries == len(test.examples) and runner.tries >= 25
    assert sorted(p.name for p in docs_folder.iterdir()) == ["agents", "runs"]  # nothing written
