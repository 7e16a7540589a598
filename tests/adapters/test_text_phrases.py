"""Phrase-valued records, kind words, evaluation headings and conlleval lines in text logs
(adapters/local/textphrases.py, textblocks.py), on the real logs that showed them: each figure
is computed here from the file with the standard library."""

from __future__ import annotations

import os
import re

import pytest
from rundiff_adapters.local.textblocks import conll_fields, eval_heading
from rundiff_adapters.local.textgrammar import STEP_KEYS
from rundiff_adapters.local.textlog import read_text_log
from rundiff_adapters.local.textphrases import kind_word, phrase_field

WILD = os.path.join(os.path.dirname(__file__), "..", "fixtures", "wild")
BREXIT = os.path.join(WILD, "somethingx01-topicalattentionbrexit-save", "tree", "save", "log.txt")
MXNET = os.path.join(WILD, "ouyangchao-mxnet-cls-log", "tree", "log", "train.log")
NER = os.path.join(WILD, "mazhanyu007-ner-log", "tree", "log", "train.log")


@pytest.mark.parametrize(("line", "want"), [
    ("learning_rate changed to 0.004500", "learning_rate: 0.004500"),
    ("update: 3120: Change learning rate to 1.00000e-03", "update: 3120: learning rate: 1.00000e-03"),
    ("Epoch 00012: ReduceLROnPlateau reducing learning rate to 0.0001.",
     "Epoch 00012: learning rate: 0.0001"),
    ("Epoch 00001: LearningRateScheduler setting learning rate to 0.01.",
     "Epoch 00001: learning rate: 0.01"),
    ("The learning rate is set to 0.1", "learning rate: 0.1"),
    ("lr changed to 0.05", "lr: 0.05"),
    ("LR changed to: 0.001", "LR: 0.001"),  # Keras scripts' print('LR changed to:', lr)
])
def test_a_phrase_is_the_field_of_what_changed(line, want):
    assert phrase_field(line) == want


@pytest.mark.parametrize("line", [
    "his speed was reduced to 0.1 * 0.05 = 0.0 seconds",  # prose: more after the number
    "we reduce lr to 0.1",  # a sentence's subject is no key
    "lr decayed to 1e-5, loss 3",  # not the whole line
    "model saved to 3",  # `saved` is no change of a value
    "model saved to /tmp/x/model",
])
def test_prose_around_to_is_left_alone(line):
    assert phrase_field(line) == line


def test_kind_words():
    assert kind_word("TRAIN\tepoch: 0/200\tloss: 1.0", STEP_KEYS) == ("TRAIN", "epoch: 0/200\tloss: 1.0")
    assert kind_word("valid | loss: 0.3, acc: 0.9", STEP_KEYS) == ("valid", "loss: 0.3, acc: 0.9")
    assert kind_word("Epoch\tloss: 1.0", STEP_KEYS) is None  # a counter's header
    assert kind_word("Done\tloss: 1.0", STEP_KEYS) is None  # a word of prose, not a kind
    assert kind_word("TRAIN epoch: 0 loss: 1.0", STEP_KEYS) is None  # no separator after it


def test_evaluation_headings():
    assert eval_heading("evaluate:dev") == "dev"
    assert eval_heading("evaluate:test") == "test"
    assert eval_heading("Evaluating on the test set") == "test"
    assert eval_heading("Validation:") == "Validation"
    assert eval_heading("test") is None  # a bare word without its colon
    assert eval_heading("evaluate:dev 3") is None
    assert eval_heading("evaluate the model") is None


def test_conlleval_type_line_loses_its_count():
    line = "              LOC: precision:  58.65%; recall:  72.32%; FB1:  64.77  2406"
    assert conll_fields(line) == "              LOC: precision:  58.65%; recall:  72.32%; FB1:  64.77"
    other = "accuracy:  95.91%; precision:  62.56%; recall:  69.70%; FB1:  65.94"
    assert conll_fields(other) == other


def _series(frame):  # noqa: ANN001, ANN202 - a history frame → {key: [values]}
    out: dict[str, list[float]] = {}
    for k, v in zip(frame["key"], frame["value"], strict=True):
        out.setdefault(str(k), []).append(float(v))
    return out


def test_brexit_log_kind_word_and_changed_to():
    train = re.compile(r" - TRAIN\tepoch: (\d+)/\d+\tbatch: \d+/\d+\tloss: ([\d.]+)\taccuracy: ([\d.]+)$")
    lr = re.compile(r" - learning_rate changed to ([\d.]+)$")
    loss, acc, rates = [], [], []
    with open(BREXIT, encoding="utf-8") as fh:
        for line in fh:
            if m := train.search(line.rstrip("\n")):
                loss.append(float(m[2]))
                acc.append(float(m[3]))
            elif m := lr.search(line.rstrip("\n")):
                rates.append(float(m[1]))
    assert len(loss) == 342 and len(rates) == 115
    got = _series(read_text_log(BREXIT)[0])
    assert got["TRAIN/loss"] == loss
    assert got["TRAIN/accuracy"] == acc
    assert got["learning_rate"] == rates
    assert "learning_rate_changed_to" not in got
    assert "batch" not in got and "TRAIN/batch" not in got and "TRAIN/epoch" not in got
    assert len(got["accuracy"]) == 171  # the epoch summary's accuracy stays its own series


def test_mxnet_change_learning_rate_and_counters():
    change = re.compile(r"Update\[(\d+)\]: Change learning rate to ([\d.e+-]+)$")
    rates = []
    with open(MXNET, encoding="utf-8") as fh:
        for line in fh:
            if m := change.search(line.rstrip("\n")):
                rates.append(float(m[2]))
    assert len(rates) == 2
    frame, notes = read_text_log(MXNET)
    got = _series(frame)
    assert got["learning_rate"] == rates
    assert "Change_learning_rate_to" not in got
    assert "batch" not in got and "update" not in got  # where a record was written, no series
    assert any("not read as metrics" in n and "batch" in n for n in notes)


def test_chinesener_evaluation_blocks_apart(tmp_path):
    # the logger's name before the level (`- log/train.log - INFO - `) is stripped here: this
    # test is about the blocks, not the prefix
    prefix = re.compile(r"^\S+ \S+ - \S+ - INFO - ")
    overall = re.compile(r"accuracy:\s+([\d.]+)%; precision:\s+([\d.]+)%; recall:\s+([\d.]+)%; "
                         r"FB1:\s+([\d.]+)$")
    per_type = re.compile(r"^\s+(\w+): precision:\s+([\d.]+)%; recall:\s+([\d.]+)%; FB1:\s+([\d.]+)\s+\d+$")
    want: dict[str, list[float]] = {}
    split = None
    lines = []
    with open(NER, encoding="utf-8") as fh:
        for raw in fh:
            line = prefix.sub("", raw.rstrip("\n"))
            lines.append(line)
            if line.startswith("evaluate:"):
                split = line.split(":")[1]
            elif line.startswith("iteration:"):
                split = None
            elif split and (m := overall.match(line)):
                for name, v in zip(("accuracy_pct", "precision_pct", "recall_pct", "FB1"),
                                   m.groups(), strict=True):
                    want.setdefault(f"{split}/{name}", []).append(float(v))
            elif split and (m := per_type.match(line)):
                for name, v in zip(("precision_pct", "recall_pct", "FB1"), m.groups()[1:], strict=True):
                    want.setdefault(f"{split}/{m[1]}/{name}", []).append(float(v))
    assert len(want) == 26 and all(len(v) == 100 for v in want.values())
    got = _series(read_text_log(str(tmp_path / "train.log"), lines=lines)[0])
    for key, values in want.items():
        assert got[key] == values, key
    assert "accuracy_pct" not in got and "FB1" not in got  # never one series of dev and test
