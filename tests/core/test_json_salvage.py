"""The shared damaged-JSON salvage (rundiff_core.parsing.jsonsalvage): a damaged list loses only
the entries its damage touched; without `resync` reading stops at the damage."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from rundiff_core import drop_repeats, salvage_list

ROWS = [{"step": i, "loss": 1.0 / (i + 1)} for i in range(1, 9)]
DOC = json.dumps({"global_step": 8, "log_history": ROWS}, indent=2)


def test_an_intact_list_is_read_whole():
    got = salvage_list(DOC, ("log_history",), resync=True)
    assert got is not None and got.key == "log_history"
    assert got.entries == ROWS and got.complete and not got.gaps and got.cut_at is None


def test_a_damaged_entry_is_skipped_and_the_gap_named():
    at = DOC.index('"step": 4')
    text = DOC[:at] + "\0" * 12 + DOC[at + 12:]
    got = salvage_list(text, ("log_history",), resync=True)
    assert got is not None and [r["step"] for r in got.entries] == [1, 2, 3, 5, 6, 7, 8]
    (a, b, before, after), = got.gaps
    assert a < at < b and before["step"] == 3 and after["step"] == 5 and got.complete
    stopped = salvage_list(text, ("log_history",))
    assert stopped is not None and [r["step"] for r in stopped.entries] == [1, 2, 3]
    assert not stopped.complete and stopped.cut_at is not None


def test_a_repeated_region_is_read_once_and_counted():
    body = ",\n".join(json.dumps(r) for r in ROWS[:4] + ROWS[2:])
    got = salvage_list('{"log_history": [' + body + "]}", ("log_history",), resync=True, unique=True)
    assert got is not None and got.entries == ROWS and got.repeated == 2


def test_the_first_key_found_and_the_limit():
    text = '{"checkpoints": ["a", "b", "c"'
    got = salvage_list(text, ("trial_data", "checkpoints"), limit=2)
    assert got is not None and got.key == "checkpoints" and got.entries == ["a", "b"]
    assert salvage_list('{"other": []}', ("trial_data",)) is None


def test_byte_offsets_count_utf8_bytes():
    text = '{"log_history": [{"note": "é—"}, {"step": 1}, {"st'
    got = salvage_list(text, ("log_history",), resync=True)
    assert got is not None and len(got.entries) == 2
    assert got.cut_at == len(text[:text.rindex("{")].encode())


@given(st.integers(0, len(DOC)))
@settings(max_examples=200, deadline=None)
def test_a_cut_keeps_every_entry_before_it(cut):
    got = salvage_list(DOC[:cut], ("log_history",), resync=True)
    if got is None:
        assert '"log_history": [' not in DOC[:cut]
        return
    ends = [DOC.index("}", DOC.index(f'"step": {r["step"]},')) + 1 for r in ROWS]
    assert got.entries == ROWS[:sum(1 for e in ends if e <= cut)]
    assert got.complete == (DOC.rindex("]") < cut)


def test_drop_repeats_keeps_the_first_of_equal_objects_only():
    rows = [{"step": 1, "x": [1]}, {"step": 2}, {"step": 1, "x": [1]}, None, None, {"step": 2}]
    assert drop_repeats(rows) == ([{"step": 1, "x": [1]}, {"step": 2}, None, None], 2)
