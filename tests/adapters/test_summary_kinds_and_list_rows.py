"""local: sweep F's grammar rules, from the wild corpus's real files (values computed here with
the standard library): a logger prefix before the message's own date-time (ChineseNER), a
summary kind without the step (ChineseNER's evaluation, RA-MATQA's epoch loss), a duration in
units (`0h 17m 24s`), a heading line `epoch: N`, and rows written as lists (a car classifier's
`[epoch, batch, loss, acc]`)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from rundiff_adapters.local.shape import shape_of
from rundiff_adapters.local.textgrammar import clean_line, parse_line
from rundiff_adapters.local.textlog import read_text_log

from rundiff_core.resolve import open_source

WILD = Path(__file__).resolve().parents[1] / "fixtures" / "wild"
NER = WILD / "zr-huang-chinese-ner-result/tree/result/log.txt"
MATQA = WILD / "eternal-f1ame-ra-matqa-result/tree/result/log.txt"
CARS = WILD / "yyyyifan-real-time-car-recognication-based-on-cnn-result/tree/result"


def _runs(path: Path) -> list:
    source = open_source(f"local:{path}")
    return [source.load_run(ref) for ref in source.list_runs()]


def test_a_date_time_after_the_level_is_the_messages_own_stamp():
    line = "2018-11-06 21:52:01,399:INFO:2018-11-06 21:50:42 epoch 1, step 100, loss: 19.4, f1: 15.97"
    assert clean_line(line) == "epoch 1, step 100, loss: 19.4, f1: 15.97"
    # `INFO:acc 94.4` is a message, not a logger named `acc`; `INFO:root:` still a logger's name
    assert clean_line("2018-11-06 21:54:49,272:INFO:acc 94.4012 - f1 54.6012") == "acc 94.4012 - f1 54.6012"
    assert clean_line("INFO:root:loss: 0.5") == "loss: 0.5"
    assert clean_line("INFO:__main__:epoch 3") == "epoch 3"


def test_a_duration_in_units_is_text_beside_the_numbers():
    rec = parse_line("2023-05-10 19:08:46,056 - __main__ - INFO - loss: 2.586, training time: 0h 17m 24s")
    assert rec is not None and rec.pairs == [("loss", 2.586)]
    assert parse_line("time: 3h") is not None  # one unit alone stays a value with its unit


def _stdlib_ner() -> tuple[list[float], list[float], list[float]]:
    train_f1, eval_f1, acc = [], [], []
    for line in NER.read_text(encoding="utf-8").splitlines():
        if m := re.search(r"loss: ([\d.]+), f1: ([\d.]+), global_step:(\d+)", line):
            train_f1.append(float(m[2]))
        elif m := re.search(r"INFO:acc ([\d.]+) - f1 ([\d.]+)$", line):
            acc.append(float(m[1]))
            eval_f1.append(float(m[2]))
    return train_f1, eval_f1, acc


def test_chinese_ner_evaluation_lines_are_a_summary_kind_apart_from_the_step_lines():
    train_f1, eval_f1, acc = _stdlib_ner()
    frame, notes = read_text_log(str(NER))
    assert frame[frame.key == "f1"].value.tolist() == train_f1  # 40, over the step
    assert frame[frame.key == "epoch/f1"].value.tolist() == eval_f1  # 10, one per epoch
    assert frame[frame.key == "acc"].value.tolist() == acc
    assert len(train_f1) == 40 and len(eval_f1) == 10
    assert any("one per epoch" in n for n in notes)


def _stdlib_matqa() -> tuple[list[float], list[float], int]:
    step_loss, epoch_loss, headings = [], [], 0
    for line in MATQA.read_text(encoding="utf-8").splitlines():
        msg = line.split(" - INFO - ", 1)[-1]
        if m := re.fullmatch(r"step: \d+, lr: \S+, loss: (\S+)", msg):
            step_loss.append(float(m[1]))
        elif m := re.fullmatch(r"loss: (\S+), training time: \d+h \d+m \d+s", msg):
            epoch_loss.append(float(m[1]))
        elif re.fullmatch(r"epoch: \d+", msg):
            headings += 1
    return step_loss, epoch_loss, headings


def test_ra_matqa_epoch_losses_kept_apart_and_epoch_headings_no_series():
    step_loss, epoch_loss, headings = _stdlib_matqa()
    frame, notes = read_text_log(str(MATQA))
    assert frame[frame.key == "loss"].value.tolist() == step_loss
    assert frame[frame.key == "epoch/loss"].value.tolist() == epoch_loss
    assert (len(step_loss), len(epoch_loss), headings) == (543, 18, 19)
    assert "epoch" not in set(frame.key)
    assert any(f"{headings} line(s) holding a counter alone" in n for n in notes)


def test_a_summary_kind_without_a_coarser_counter_is_read_as_before(tmp_path):
    # no epoch anywhere: nothing says what the step-less lines summarise, so nothing is renamed
    lines = [f"step: {s}, loss: {1 / s:.4f}" if s % 3 else f"loss: {2 / s:.4f}, acc: 0.{s}"
             for s in range(1, 13)]
    (tmp_path / "log.txt").write_text("\n".join(lines) + "\n")
    frame, _ = read_text_log(str(tmp_path / "log.txt"))
    assert not any(str(k).endswith("/loss") for k in frame.key.unique())


def test_rows_written_as_lists_are_a_headerless_table():
    shape = shape_of(str(CARS / "log.txt"))
    assert shape.kind == "table" and shape.found.bracketed and len(shape.found.header) == 4
    assert "list" in shape.found.described


def test_two_list_tables_of_one_width_are_a_run_each():
    rows = {name: [ast.literal_eval(ln) for ln in (CARS / name).read_text().splitlines() if ln.strip()]
            for name in ("log.txt", "train.log")}
    runs = {r.address.rsplit("/", 1)[-1]: r for r in _runs(CARS)}
    assert set(runs) == {"log.txt", "train.log"}
    for name, want in rows.items():
        assert runs[name].point_count("col3") == len(want)
        assert runs[name].last_value("col3") == want[-1][2]
        assert runs[name].last_value("col4") == want[-1][3]


def test_list_tables_whose_rows_line_up_stay_one_run(tmp_path):
    # a train table and an eval table, a row each per epoch (MIMIC's train.log / eval.log)
    for name, base in (("train.log", 1.0), ("eval.log", 2.0)):
        (tmp_path / name).write_text("".join(f"[{e}, {base / (e + 1):.4f}, 0.{e + 1}]\n" for e in range(6)))
    assert len(_runs(tmp_path)) == 1
