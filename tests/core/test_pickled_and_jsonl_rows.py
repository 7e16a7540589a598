"""The shared readers the Ray Tune layout reads through: `rundiff_core.pickled` (pickles inside
JSON, read from their opcodes, never unpickled) and `read_jsonl_rows`/`last_jsonl_row` (JSON
lines as dicts, json.loads per line). Pickles are made here with the pickle module and numpy;
nothing under test may call pickle.loads."""

from __future__ import annotations

import base64
import json
import pickle
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from rundiff_core import last_jsonl_row, pickled, read_jsonl, read_jsonl_rows


class Opaque:  # a class the reader can name but must never import or build
    pass


@pytest.fixture(autouse=True)
def _never_unpickled(monkeypatch):
    def refuse(*_a, **_k):
        raise AssertionError("unpickled")

    monkeypatch.setattr(pickle, "loads", refuse)
    monkeypatch.setattr(pickle, "load", refuse)


def _fallback(obj, protocol: int = 5) -> dict:
    return {"_type": "CLOUDPICKLE_FALLBACK", "value": pickle.dumps(obj, protocol=protocol).hex()}


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
@pytest.mark.parametrize("value", [np.float64(0.25), np.float32(1.5), np.int64(-7), np.uint8(200),
                                   np.bool_(True)])
def test_a_pickled_numpy_scalar_is_its_number(value, protocol):
    got = pickled.placeholder(_fallback(value, protocol))
    assert got == value.item() and type(got) is type(value.item())


def test_wrappers_hex_and_base64_are_blobs_and_a_port_is_not():
    raw = pickle.dumps(Opaque(), protocol=4)
    for blob in (_fallback(Opaque()), raw.hex(), base64.b64encode(raw).decode(),
                 {"__pickled__": raw.hex()}, {"_serialized": base64.b64encode(raw).decode()}):
        assert pickled.is_blob(blob)
        assert pickled.placeholder(blob) == f"<pickled {__name__}.Opaque>"
    for not_blob in ("8003", "80038003", "gAN9cQAu-not", {"value": raw.hex()}, 8003, None):
        assert not pickled.is_blob(not_blob)
    assert pickled.placeholder(_fallback(None)) is None
    assert pickled.placeholder({"_type": "CLOUDPICKLE_FALLBACK", "value": "80zz"}) == \
        "<pickled object>"
    cut = raw.hex()[: len(raw.hex()) // 4 * 2] + "2e"  # a cut pickle: the disassembler stops there
    assert str(pickled.placeholder(cut)).startswith("<pickled ")


def test_clean_replaces_blobs_in_a_nested_value_and_counts_them_in_one_note():
    counts: Counter[str] = Counter()
    value = {"lr": _fallback(np.float64(0.5)), "cls": _fallback(Opaque()),
             "nested": [{"n": _fallback(np.int64(3))}], "hist": [1.0, 2.0], "port": "8003"}
    got = pickled.clean(value, counts)
    assert got == {"lr": 0.5, "cls": f"<pickled {__name__}.Opaque>", "nested": [{"n": 3}],
                   "hist": [1.0, 2.0], "port": "8003"}
    note = pickled.note("the config", counts)
    assert note is not None and note.startswith("the config: 3 pickled value(s), never unpickled")
    assert "numpy scalar read as its number ×2" in note
    assert pickled.note("x", Counter()) is None


def test_jsonl_rows_keep_nan_tokens_count_bad_lines_and_cut_a_torn_tail(tmp_path: Path):
    path = tmp_path / "result.json"
    path.write_bytes(b'{"a": 1, "x": NaN}\nnot json\n[1]\n' + b"[" * 100_000 + b"\n"
                     + b'{"a": 2, "x": Infinity}\n{"a": 3, "x"')
    rows, notes = read_jsonl_rows(str(path), name="result.json")
    assert [r["a"] for r in rows] == [1, 2] and np.isnan(rows[0]["x"]) and rows[1]["x"] == np.inf
    assert "result.json: truncated last line 6" in notes[0]
    assert notes[1] == "result.json: 3 corrupt line(s) skipped (line 2, 3, 4)"
    assert last_jsonl_row(str(path)) == rows[-1]
    same = read_jsonl(str(path), name="result.json").rows  # the same per-line reading
    assert json.dumps(same) == json.dumps(rows)
    assert read_jsonl_rows(str(tmp_path / "absent.json"), name="absent.json")[1][0].startswith(
        "absent.json: unreadable")


def test_a_torn_last_line_longer_than_the_window_keeps_the_rows_before_it(tmp_path: Path):
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b'{"a": 1}\n{"a": 2}\n{"big": "' + b"x" * (3 << 20))
    rows, notes = read_jsonl_rows(str(path))
    assert rows == [{"a": 1}, {"a": 2}] and "truncated last line 3" in notes[0]
    assert last_jsonl_row(str(path)) == {"a": 2}


def test_last_jsonl_row_reads_back_past_its_first_window(tmp_path: Path):
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps({"a": 1}) + "\n" + json.dumps({"pad": "y" * (1 << 20)}) + "\n"
                    + "garbage\n" * 50_000)
    assert last_jsonl_row(str(path)) == {"pad": "y" * (1 << 20)}
