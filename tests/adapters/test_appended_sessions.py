"""local: a text log that several sessions appended to is one run read in file order (issue 31,
"appended sessions read as one run in file order"), from real files of the wild corpus."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from rundiff_adapters.local.textlog import read_text_log

WILD = Path(__file__).resolve().parents[1] / "fixtures" / "wild"


def test_sessions_appended_to_a_cs230_train_log_count_on_in_file_order():
    # msft-vivi/RelationExtract-Pytorch: ~20 `Starting training` sessions over a year, Epoch 1… each
    path = WILD / "msft-vivi-relationextract-pytorch-experiments/tree/experiments/base_model/train.log"
    frame, notes = read_text_log(str(path))
    f1 = frame[frame.key == "Train_metrics/precison"]
    assert len(f1) == 784
    assert (np.diff(f1.step.to_numpy()) > 0).all()  # one step per epoch, never back
    assert f1.value.iloc[-1] == 72.40  # the file's last record (Epoch 14 of the last session)
    assert f1.step.iloc[58] == 59 and f1.step.iloc[59] == 60  # session 2's Epoch 1 follows 59
    note = next(n for n in notes if "sessions appended" in n)
    assert note.startswith("train.log: 21 sessions appended to one file (Epoch back at 1 20 time(s))")
    assert not any("went backwards" in n for n in notes)


def test_one_session_and_blocks_that_never_count_up_keep_their_steps():
    # lemonhu/RE-CNN-pytorch: one session, Epoch 1–59 (of 100) as written
    one = WILD / "lemonhu-re-cnn-pytorch-experiments/tree/experiments/base_model/train.log"
    frame, notes = read_text_log(str(one))
    assert frame.step.max() == 59 and not any("sessions" in n for n in notes)
    # best_res_1run.txt: one block per run of a sweep, each with its best epoch (20, 18, 16, 30…):
    # the step goes back without a session counting up before it, so it is kept as written
    blocks = WILD / "mqtth3w-pixel-level-segmentation-in-pets-unipr-unet-runs/tree/runs/best_res_1run.txt"
    frame, notes = read_text_log(str(blocks))
    loss = frame[frame.key == "training_loss"]
    assert loss.step.tolist()[:4] == [20, 18, 16, 30]
    assert not any("sessions appended" in n for n in notes)


def _global_steps(path: Path) -> list[tuple[float, float]]:
    """(iteration, step within it, loss) of ChineseNER's `iteration:3 step:112/1044, NER loss: …`
    lines, read with the standard library: the global step is (iteration - 1) · 1044 + step."""
    import re

    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        m = re.search(r"iteration:(\d+) step:(\d+)/(\d+), NER loss:\s*([\d.]+)", line)
        if m:
            it, step, total, loss = int(m[1]), int(m[2]), int(m[3]), float(m[4])
            out.append(((it - 1) * total + step, loss))
    return out


def test_a_step_written_n_of_total_that_starts_again_counts_passes_of_an_outer_loop():
    """ChineseNER prints the global step modulo the steps of an iteration (`step:56/1044` opens
    iteration 2): each pass of the outer loop is `total` steps on, so x is the global step — not
    the previous pass's last step + 1, as for sessions appended by hand."""
    path = WILD / "mazhanyu007-ner-log" / "tree" / "log" / "train.log"
    want = _global_steps(path)
    assert len(want) == 1044 and want[10][0] == 1100  # iteration 2's first line
    frame, notes = read_text_log(str(path))
    loss = frame[frame["key"] == "NER_loss"]
    assert [(float(s), float(v)) for s, v in zip(loss["step"], loss["value"], strict=True)] == \
        [(float(s), v) for s, v in want]
    assert any("passes of an outer loop" in n and "N/1044" in n for n in notes)
    assert not any("sessions appended" in n for n in notes)
