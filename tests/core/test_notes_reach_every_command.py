"""Every note a reader writes travels with the run into every command (issue 33, item 1): a line
a damage made unreadable costs that line alone, and the note saying so reaches `diff`, `compare`
and `rank` (JSON and text), not only `ls` — written while the history was read, not only when
the run was listed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from rundiff_core.cli import main

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "realworld"
LOG = REAL / "hydra" / "composer2-lightning-run" / "outputs" / "lightning_logs" / "version_6" / "metrics.csv"


def _pair(tmp_path: Path) -> tuple[Path, Path, int]:
    """A real Lightning metrics.csv, and a copy of it with one row given two extra cells."""
    a, b = tmp_path / "runs" / "a", tmp_path / "runs" / "b"
    a.mkdir(parents=True)
    b.mkdir(parents=True)
    shutil.copy(LOG, a / "metrics.csv")
    lines = LOG.read_text().splitlines(keepends=True)
    bad = len(lines) // 2
    lines[bad] = lines[bad].rstrip("\n") + ",9,9\n"
    (b / "metrics.csv").write_text("".join(lines))
    return a, b, len(lines) - 1


def _json(capsys, *argv: str) -> dict:
    assert main([*argv, "--format", "json"]) in (0, 1)
    return json.loads(capsys.readouterr().out)


def test_a_damaged_row_costs_only_itself_and_its_note_reaches_every_command(tmp_path, capsys):
    a, b, rows = _pair(tmp_path)
    (row,) = _json(capsys, "ls", str(b))
    (good,) = _json(capsys, "ls", str(a))
    lost = {k["key"]: g["points"] - k["points"] for k, g in
            zip(row["keys"], good["keys"], strict=True)}
    assert max(lost.values()) <= 1  # one row's cells, no more
    said = "1 malformed row(s) skipped"
    assert any(said in n for n in row["fidelity"])
    diff = _json(capsys, "diff", str(a), str(b))
    assert any(said in w for w in diff["warnings"])
    compare = _json(capsys, "compare", str(a), str(b))
    assert said in json.dumps(compare)
    rank = _json(capsys, "rank", str(tmp_path / "runs"))
    assert any(said in n for n in rank["notes"][next(k for k in rank["notes"] if k.endswith("b"))])
    assert main(["rank", str(tmp_path / "runs")]) in (0, 1)
    text = capsys.readouterr().out
    assert "## Read with damage (1 run(s))" in text and said in text


def test_watch_and_the_api_carry_the_note_too(tmp_path, capsys, monkeypatch):
    import rundiff

    monkeypatch.setenv("RUNDIFF_CACHE_DIR", str(tmp_path / "cache"))
    a, b, _rows = _pair(tmp_path)
    said = "1 malformed row(s) skipped"
    watch = _json(capsys, "watch", str(b), "--once")
    assert any(said in n for n in watch["runs"][0]["notes"])
    assert main(["watch", str(b), "--once"]) in (0, 1)
    out = capsys.readouterr().out
    assert any(line.startswith("  read with damage: ") and said in line for line in out.splitlines())
    assert any(said in w for w in rundiff.diff(str(a), str(b)).to_dict()["warnings"])


def test_report_shows_each_run_read_with_damage_md_json_and_html(tmp_path, capsys):
    """`report` carries every run's notes (JSON) and names the runs read with damage on its
    page, Markdown and HTML alike, with the note that says what was skipped."""
    import html

    _a, _b, _rows = _pair(tmp_path)
    said = "1 malformed row(s) skipped"
    rep = _json(capsys, "report", str(tmp_path / "runs"))
    damaged = next(k for k in rep["run_notes"] if k.endswith("b"))
    assert any(said in n for n in rep["run_notes"][damaged])
    assert not any(said in n for k, ns in rep["run_notes"].items() if k != damaged for n in ns)
    assert main(["report", str(tmp_path / "runs")]) in (0, 1)
    text = capsys.readouterr().out
    assert "## Read with damage (1 run(s))" in text and said in text
    page = tmp_path / "report.html"
    assert main(["report", str(tmp_path / "runs"), "-o", str(page)]) in (0, 1)
    capsys.readouterr()
    body = page.read_text()
    assert "Read with damage (1 run(s))" in body
    line = next(ln for ln in body.splitlines() if html.escape(said) in ln)
    assert damaged in html.unescape(line) and "<li>" in line  # a list item (lists render as one line)
