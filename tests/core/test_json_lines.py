"""rundiff_core's per-line JSON-lines reader (`json_lines`, what the Detectron2 and OpenMMLab
layouts read and `read_jsonl` falls back to) and the first-object look of a file's head."""

from __future__ import annotations

import io

from rundiff_core import JsonLines, first_json_object, json_lines, read_jsonl


def test_each_kind_of_damage_is_counted_with_its_line():
    data = b'{"a": 1}\n\n{bad\n[1, 2]\n{"a": 2}\n' + b"[" * 100_000 + b'\n{"a": 3'
    report = JsonLines("m.json")
    got = list(json_lines(io.BytesIO(data), report))
    assert got == [(1, {"a": 1}), (5, {"a": 2})]
    assert (report.lines, report.bad, report.not_objects, report.torn_last) == (7, [3, 6], [4], True)
    notes = report.notes()
    assert "m.json: 2 line(s) not valid JSON skipped (line 3, 6)" in notes
    assert "m.json: 1 line(s) not a JSON object skipped (line 4)" in notes
    assert any("last line is cut short" in n for n in notes)


def test_an_unreadable_file_is_a_note_not_an_error(tmp_path):
    report = JsonLines("gone.json")
    assert list(json_lines(str(tmp_path / "gone.json"), report)) == []
    assert report.notes()[0].startswith("gone.json: unreadable (")


def test_read_jsonl_fallback_counts_a_too_deep_line_as_corrupt(tmp_path):
    # NaN sends it to the per-line path; a line nested past the recursion limit was a traceback
    path = tmp_path / "m.jsonl"
    path.write_bytes(b'{"x": NaN}\n' + b"[" * 100_000 + b'\n{"x": 2}\n')
    res = read_jsonl(str(path), name="m.jsonl")
    assert [r["x"] for r in res.rows][1:] == [2] and res.skipped_lines == [2]
    assert res.notes == ["m.jsonl: 1 corrupt line(s) skipped (line 2)"]


def test_first_json_object_passes_over_damaged_lines_only():
    assert first_json_object(b'\x00\x00\x00\n{"iteration": 1}\n') == {"iteration": 1}
    assert first_json_object(b'{"cut": \n{"iteration": 2}\n') == {"iteration": 2}
    assert first_json_object(b"step,loss\n1,2\n") is None
    assert first_json_object(b'{"iteration": 3, "tor') is None
