"""The JSON-lines tail rule: a torn last line is dropped with one note (it is a run still being
written, not damage), a complete last record without its newline is data and is kept.

Both the fast Arrow path and the per-line fallback (forced by a bare NaN) are exercised: each
implements the rule separately. Expectations are the rows the test writes.
"""

from __future__ import annotations

import math

import pytest

from rundiff_core.parsing.jsonl import read_jsonl
from rundiff_core.resolve import load_run

ROWS = ['{"step": 0, "loss": 2.0}', '{"step": 1, "loss": 1.5}', '{"step": 2, "loss": 1.25}']
NAN_ROWS = ['{"step": 0, "loss": NaN}', '{"step": 1, "loss": 1.5}', '{"step": 2, "loss": 1.25}']


def _run_dir(tmp_path, text: str, events: str | None = None):
    d = tmp_path / "r"
    d.mkdir()
    (d / "config.yaml").write_text("lr: 0.1\n")
    (d / "final.json").write_text("{}")
    (d / "metrics.jsonl").write_bytes(text.encode())
    if events is not None:
        (d / "events.jsonl").write_bytes(events.encode())
    return d


@pytest.mark.parametrize("rows", [ROWS, NAN_ROWS], ids=["arrow-path", "per-line-path"])
def test_rule_complete_last_record_without_newline_is_kept(tmp_path, rows):
    """Rule: no data loss at the tail. The last record is whole JSON, only its newline is missing."""
    d = _run_dir(tmp_path, "\n".join(rows))  # no trailing "\n"
    run = load_run(f"journal:{d}")
    h = run.history()
    assert h["step"].tolist() == [0.0, 1.0, 2.0]
    assert h["value"].tolist()[1:] == [1.5, 1.25]
    assert not any("truncated" in n or "corrupt" in n for n in run.fidelity), run.fidelity


@pytest.mark.parametrize("rows", [ROWS, NAN_ROWS], ids=["arrow-path", "per-line-path"])
def test_rule_torn_last_line_is_dropped_noted_and_not_counted_corrupt(tmp_path, rows):
    """Rule: a last line cut mid-record is dropped with a 'truncated last line' note naming the
    file and line — and is NOT also counted as a corrupt line (that would read as damage)."""
    torn = rows[2][:12]  # '{"step": 2, ' — cut inside the record
    d = _run_dir(tmp_path, "\n".join(rows[:2]) + "\n" + torn)
    run = load_run(f"journal:{d}")
    h = run.history()
    assert h["step"].tolist() == [0.0, 1.0]
    assert h["value"].tolist()[1] == 1.5
    notes = " | ".join(run.fidelity)
    assert f"metrics.jsonl: truncated last line 3 ({len(torn)} bytes) skipped" in notes, notes
    assert "corrupt" not in notes, notes


def test_rule_torn_tail_in_the_reader_itself(tmp_path):
    """The shared reader, without the adapter: a torn tail is cut, never listed as skipped."""
    p = tmp_path / "m.jsonl"
    p.write_bytes(b'{"a": 1}\n{"a": NaN}\n{"a": 3, "b"')
    res = read_jsonl(str(p), name="m.jsonl")
    rows = res.rows if res.rows is not None else res.table.to_pylist()
    assert [r["a"] for r in rows][0] == 1 and math.isnan(rows[1]["a"]) and len(rows) == 2
    assert res.skipped_lines == []
    assert res.notes == ["m.jsonl: truncated last line 3 (12 bytes) skipped — "
                         "the run is probably still being written"]
    p.write_bytes(b'{"a": 1}\n{"a": NaN}\n{"a": 3}')  # complete, no newline
    res = read_jsonl(str(p), name="m.jsonl")
    assert [r["a"] for r in res.rows][2] == 3 and res.notes == [] and res.skipped_lines == []


def test_rule_torn_events_tail_is_dropped_not_corrupt(tmp_path):
    """events.jsonl follows the same tail rule: the whole events before the torn one are kept."""
    events = '{"event": "resume", "step": 1}\n{"event": "kill", "st'
    d = _run_dir(tmp_path, "\n".join(ROWS) + "\n", events=events)
    run = load_run(f"journal:{d}")
    assert [(e.kind, e.step) for e in run.events] == [("resume", 1.0)]
    notes = " | ".join(run.fidelity)
    assert "events.jsonl: truncated last line 2" in notes and "corrupt" not in notes, notes
