"""local: tables a training script writes by hand — issue 31 (held-out sweeps D and E).

- A header-less table's first column is its step when it counts (`0, 1, 2, …`, back to its start
  where a launch was appended): xiongzihua's pytorch-YOLO-v1 `log.txt` (`epoch<TAB>val_loss`, 50
  rows) and its copy in zgjsxx/yolov1 (two rows: a table too, as its first column counts).
- Tables of one folder that start again the same number of times are one run per launch
  (HamSade/Transformer-Classifier-MIMIC's `train.log` and `eval.log`).
- A header cell led by digits (`2d_loss`) is a name beside a letter-led one; padded names are
  stripped and a trailing tab's empty cell is no column (lyuheng/unsupervised_3d_pose's
  pytorch-classification-style `Logger`). Expected figures are computed here with the stdlib.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from rundiff_adapters.local.counters import counts_up
from rundiff_adapters.local.shape import shape_of

from rundiff_core.resolve import open_source

ROOT = Path(__file__).resolve().parents[1] / "fixtures"
YOLO_V1 = ROOT / "realworld/textlogs/headerless-counter/abeardear-pytorch-yolo-v1"
WILD = ROOT / "wild"


def _runs(path: Path) -> list:
    source = open_source(f"local:{path}")
    return [source.load_run(ref) for ref in source.list_runs()]


def _rows(path: Path, delim: str) -> list[list[str]]:
    return [[c.strip() for c in ln.split(delim)] for ln in path.read_text().splitlines() if ln.strip()]


def test_a_counting_first_column_is_the_step_of_a_headerless_table():
    rows = _rows(YOLO_V1 / "log.txt", "\t")
    shape = shape_of(str(YOLO_V1 / "log.txt"))
    assert shape.kind == "table" and shape.found.step == "col1" and "its step" in shape.detail
    (run,) = _runs(YOLO_V1)
    assert run.metric_keys() == ["col2"]
    h = run.history(["col2"])
    assert list(h["step"]) == [float(r[0]) for r in rows]
    assert list(h["value"]) == [float(r[1]) for r in rows]


def test_two_rows_whose_first_column_counts_are_a_table():
    tree = WILD / "zgjsxx-yolov1-checkpoints/tree/checkpoints"
    rows = _rows(tree / "log.txt", "\t")
    assert len(rows) == 2
    (run,) = _runs(tree)
    assert run.point_count("col2") == 2
    assert run.last_value("col2") == float(rows[-1][1])


@pytest.mark.parametrize("text", [
    "0 1\n1 0\n",  # two rows of whole numbers: an identity matrix, a pair of ids
    "3\t0.5\n7\t0.25\n",  # the first column does not count from the start
    "0.5\t0.25\n0.75\t0.125\n",
])
def test_two_bare_rows_that_do_not_count_are_not_understood(tmp_path, text):
    (tmp_path / "pair.txt").write_text(text)
    assert shape_of(str(tmp_path / "pair.txt")).kind == "unknown"


@pytest.mark.parametrize("cells, counts", [
    (["0", "1", "2", "0", "1"], True),  # a launch appended
    (["1", "2", "3"], True),
    (["100", "200", "300"], True),  # logged every 100 steps
    (["0/299", "1/299", "2/299"], True),  # old YOLOv5's counter
    (["0", "1", "3"], False),  # a gap: ids, not a count
    (["5", "6", "7"], False),  # not from the start
    (["0", "0", "0"], False),
    (["0.5", "1.5"], False),
    (["2", "1", "0"], False),
])
def test_what_counts(cells, counts):
    assert counts_up(cells) is counts


def test_a_headerless_table_that_does_not_count_keeps_the_row_index(tmp_path):
    (tmp_path / "dump.txt").write_text("3 0.5 0.1\n7 0.4 0.2\n12 0.3 0.3\n")
    shape = shape_of(str(tmp_path / "dump.txt"))
    assert shape.kind == "table" and shape.found.step is None
    (run,) = _runs(tmp_path)
    assert sorted(run.metric_keys()) == ["col1", "col2", "col3"]


def test_tables_that_start_again_alike_are_one_run_per_launch():
    tree = WILD / "hamsade-transformer-classifier-mimic-log/tree/log"
    train, evals = _rows(tree / "train.log", ","), _rows(tree / "eval.log", ",")
    starts = [i for i, r in enumerate(train) if r[0] == "0"]
    assert starts == [i for i, r in enumerate(evals) if r[0] == "0"] and len(starts) == 2
    runs = _runs(tree.parent)
    assert [r.address.rsplit("/", 1)[-1] for r in runs] == ["train.log#1", "train.log#2"]
    bounds = [*starts, len(train)]
    for run, lo, hi in zip(runs, bounds, bounds[1:], strict=False):
        assert run.point_count("train/col2") == run.point_count("eval/col3") == hi - lo
        assert run.last_value("train/col2") == float(train[hi - 1][1])
        assert run.last_value("eval/col3") == float(evals[hi - 1][2])


def test_tables_that_start_again_a_different_number_of_times_stay_apart(tmp_path):
    (tmp_path / "a.csv").write_text("".join(f"{e},{e / 10 + 0.05}\n" for e in [0, 1, 2, 0, 1]))
    (tmp_path / "b.csv").write_text("".join(f"{e},{e / 10 + 0.05}\n" for e in [0, 1, 0, 1, 0, 1]))
    names = sorted(r.address.rsplit("/", 1)[-1] for r in _runs(tmp_path))
    assert names == ["a.csv#1", "a.csv#2", "b.csv#1", "b.csv#2", "b.csv#3"]


def test_digit_led_padded_header_with_trailing_tabs():
    tree = WILD / "lyuheng-unsupervised-3d-pose-checkpoints/tree/checkpoints"
    lines = (tree / "log.txt").read_text().splitlines()
    header = [h.strip() for h in lines[0].split("\t") if h.strip()]
    rows = [ln.split("\t")[:-1] for ln in lines[1:] if ln.strip()]
    (run,) = _runs(tree)
    assert sorted(run.metric_keys()) == sorted(header) == ["2d_loss", "3d_loss", "adv_loss",
                                                          "temporal_loss"]
    for j, key in enumerate(header):
        assert run.point_count(key) == len(rows)
        assert run.last_value(key) == float(rows[-1][j])
    assert "4 metrics" in " | ".join(run.fidelity)


def test_a_header_of_digit_led_cells_only_is_no_header(tmp_path):
    (tmp_path / "sizes.txt").write_text("10k\t20k\n0.5\t0.25\n0.75\t0.125\n0.5\t0.5\n")
    shape = shape_of(str(tmp_path / "sizes.txt"))
    assert not (shape.kind == "table" and shape.found.header == ["10k", "20k"])


def test_padded_csv_names_are_stripped_and_the_step_found(tmp_path):
    (tmp_path / "log.csv").write_text("epoch, loss, acc\n0, 1.0, 0.5\n1, 0.8, 0.6\n2, 0.7, 0.7\n")
    (run,) = _runs(tmp_path)
    assert sorted(run.metric_keys()) == ["acc", "loss"]
    assert list(run.history(["loss"])["step"]) == [0.0, 1.0, 2.0]
