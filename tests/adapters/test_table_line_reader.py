"""The shared table reader's careful path (sniff._read_lines): what pyarrow declines is read a line
at a time, a bad line or cell costing itself, each kept with its file line for a layout's notes
(SB3 names them), and what a layout knows of its writer (`bad_share`, `whole_lines`) said to it."""

from __future__ import annotations

import numpy as np
import pytest
from rundiff_adapters.local import sniff
from rundiff_adapters.local.sniff import Sniff, read_columns, row_lines, sniff_table


@pytest.fixture(autouse=True)
def _fresh(monkeypatch):
    monkeypatch.setattr(sniff, "_RECENT", {})


def _col(cols, name):
    j = cols.names.index(name)
    return cols.values[j][cols.valid[j]].tolist()


def test_a_line_with_a_cell_too_many_and_a_bad_cell_cost_themselves_with_their_lines(tmp_path):
    path = tmp_path / "log.csv"
    path.write_text("# a comment\nstep,loss\n0,1.0\n\n1,0.5,7\n2,O.25\n3,0.125\n")
    found = Sniff(",", header=["step", "loss"], comments=["# a comment"])
    cols, notes = read_columns(str(path), found, bad_share=1.0)
    assert _col(cols, "step") == [0, 2, 3] and _col(cols, "loss") == [1.0, 0.125]
    assert cols.lines.tolist() == [3, 6, 7]  # the blank line and the skipped one counted
    assert cols.ragged == [(5, "1,0.5,7", 3)]
    assert cols.cells == [(1, "loss", "O.25")] and cols.bad == {"loss": 1}
    assert any("1 malformed row(s) skipped" in n for n in notes)
    assert row_lines(str(path), cols, found).tolist() == [3, 6, 7]


def test_a_last_line_without_its_line_end_is_a_row_unless_the_writer_ends_every_line(tmp_path):
    path = tmp_path / "progress.csv"
    path.write_text("step,loss\n0,1.0\n1,0.5\n2,0.2")
    found = sniff_table(str(path))
    cols, _ = read_columns(str(path), found)
    assert cols.rows == 3 and cols.partial is None
    cols, _ = read_columns(str(path), found, whole_lines=True)
    assert cols.rows == 2 and cols.partial == (4, "2,0.2")


def test_bad_share_decides_whether_a_damaged_column_is_text(tmp_path):
    path = tmp_path / "log.csv"
    rows = [f"{i},{'x' if i % 3 == 0 else i / 10}" for i in range(1, 10)]
    path.write_text("step,loss\n" + "\n".join(rows) + "\n")
    found = sniff_table(str(path)) or Sniff(",", header=["step", "loss"])
    assert "loss" in read_columns(str(path), found)[0].text  # 3 of 9 cells: text
    cols, _ = read_columns(str(path), found, bad_share=1.0)  # a layout that knows it is numbers
    assert len(_col(cols, "loss")) == 6 and len(cols.cells) == 3


def test_pyarrow_rows_map_to_their_file_lines(tmp_path):
    path = tmp_path / "log.csv"
    path.write_text("step,loss\n\n0,1.0\n1,nan\n\n2,0.25\n")
    found = sniff_table(str(path))
    cols, notes = read_columns(str(path), found)
    assert cols.lines is None and not notes  # pyarrow's read
    assert row_lines(str(path), cols, found).tolist() == [3, 4, 6]


def test_a_whitespace_tables_short_line_is_padded_and_a_headerless_counter_read(tmp_path):
    path = tmp_path / "train.log"
    path.write_text("step loss acc\n0 1.0 0.1\n1 0.5\n2 0.25 0.3\n")
    cols, _ = read_columns(str(path), sniff_table(str(path)))
    assert _col(cols, "loss") == [1.0, 0.5, 0.25] and _col(cols, "acc") == [0.1, 0.3]
    path.write_text("0/9 2.5G 1.0\n1/9 2.5G 0.5\n")
    cols, _ = read_columns(str(path), Sniff("ws", header=["epoch", "mem", "loss"], headerless=True))
    assert _col(cols, "epoch") == [0, 1] and np.allclose(_col(cols, "mem"), [2.5, 2.5])


def test_a_short_line_is_skipped_not_padded_for_its_last_cell_is_cut(tmp_path):
    """A delimited line cut mid-way (a zeroed block, a half-written line) ends in a cut number
    (`0.59234` → `0.59`): padded with empty cells (as pandas' reader did) it put that wrong
    number in the history; skipped, every number read is one the writer wrote."""
    from rundiff_adapters.local.sniff import read_table

    lines = ["epoch,loss,acc"] + [f"{e},0.5{e}234,0.9{e}1" for e in range(30)]
    lines[10] = lines[10][:6]  # epoch 9's line, cut inside its loss cell: `9,0.59`
    path = tmp_path / "results.csv"
    path.write_text("\n".join(lines) + "\n")
    frame, notes = read_table(str(path))
    loss = frame[frame["key"].astype(str) == "loss"]
    assert 9 not in loss["step"].tolist() and len(loss) == 29
    assert all(v == pytest.approx(float(f"0.5{int(e)}234")) for e, v in zip(loss["step"], loss["value"],
                                                                          strict=True))
    assert any("1 malformed row(s) skipped" in n for n in notes)
