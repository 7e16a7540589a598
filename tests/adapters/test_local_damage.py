"""Damage costs only what it touches in tables (issue 33): one byte that is not UTF-8, or one cell
that is not a number, in a real results.csv costs that cell's row — never the column (YOLO's
`epoch` falling back to the row index) nor the file — and the note says so."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

from rundiff_core.resolve import load_runs
from rundiff_core.testing import hash_tree

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "realworld" / "ultralytics"
SOURCES = sorted(p.parent for p in REAL.glob("*/runs/*/*/results.csv"))


@pytest.mark.parametrize("train", SOURCES[:3], ids=lambda p: p.parts[-4])
@pytest.mark.parametrize("damage", [b"\xff", b"x"])
def test_one_bad_byte_in_results_csv_costs_one_row(train, damage, tmp_path):
    clean = tmp_path / "clean"
    shutil.copytree(train, clean)
    (good,) = load_runs(f"local:{clean}")
    broken = tmp_path / "broken"
    shutil.copytree(train, broken)
    csv = broken / "results.csv"
    data = bytearray(csv.read_bytes())
    rng = random.Random(31)
    lines = [i + 1 for i, b in enumerate(data[:-1]) if b == 10][2:-2]  # a row's first byte
    at = rng.choice(lines)
    data[at:at + 1] = damage  # the row's first cell (its epoch) is no number any more
    csv.write_bytes(bytes(data))
    before = hash_tree(str(broken))
    (run,) = load_runs(f"local:{broken}")
    for key in good.metric_keys():
        assert run.point_count(key) >= good.point_count(key) - 1, key
    assert run.history()["step"].min() == good.history()["step"].min()  # x is still the epoch
    assert any("unreadable cell(s) skipped" in n for n in run.fidelity), run.fidelity
    assert hash_tree(str(broken)) == before
