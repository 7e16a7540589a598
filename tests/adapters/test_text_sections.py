"""A text report of alike sections under numbered titles is one run per section (issue 31);
logs whose titles count steps, or carry no number, stay one log."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rundiff_adapters.local.text_sections import text_sections
from rundiff_adapters.local.textgrammar import parse_line

from rundiff_core.resolve import load_runs

TESTS = Path(__file__).resolve().parents[1]
REAL = TESTS / "fixtures" / "realworld"
WILD = TESTS / "fixtures" / "wild"
ATCNET = WILD / "altaheri-eeg-atcnet-results" / "tree" / "results" / "log.txt"


def test_one_run_per_subject_under_its_title():
    runs = {r.address.rsplit("#", 1)[1]: r for r in load_runs(f"local:{ATCNET.parent}")}
    want = json.loads((WILD / "altaheri-eeg-atcnet-results" / "expected.json").read_text())
    assert set(runs) == {r["location"].rsplit("#", 1)[1] for r in want["runs"]}
    third = runs["Subject 3"]
    assert third.flat_config == {"subject": 3, "seed": 1}
    assert third.summary["valid_acc"] == 0.8966 and third.summary["time_m"] == 1.5
    assert all(not r.metric_keys() for r in runs.values())  # final numbers, no curves


def test_a_unit_word_after_a_value_is_its_unit_not_the_next_key():
    rec = parse_line("Subject: 1   seed 1   time: 1.5 m   valid_acc: 0.8448   valid_loss: 0.609")
    assert [k for k, _ in rec.pairs] == ["Subject", "seed", "time_m", "valid_acc", "valid_loss"]


@pytest.mark.parametrize("path", [
    WILD / "dcorredorm-markovdecisionprocess-results" / "tree" / "results" / "dummy_example"
    / "log.txt",  # `Evaluating...` before each `Average reward`: titles with no number
    WILD / "msft-vivi-relationextract-pytorch-experiments" / "tree" / "experiments" / "base_model"
    / "evaluate.log",  # `Starting evaluation...` before each launch's `Test metrics`
    *sorted(REAL.glob("wandb-meta/bokaiji-conceptppo-wandb015/wandb/*/files/output.log"))[:1],
])
def test_logs_without_numbered_titles_are_no_sections(path):
    assert text_sections(str(path)) is None


def test_printed_results_with_decimals_in_their_lines_are_no_titles(realdata):
    """`-- "test accuracy 0.529` lines between records: a number, but not a whole one."""
    log = realdata / "wandb-verysimpletransformer" / "wandb" / "run-20230329_021634-9fdufjz8" / \
        "files" / "output.log"
    assert text_sections(str(log)) is None


def test_sections_of_one_field_per_line_and_titles_that_count_steps(tmp_path):
    """The shape of a k-fold benchmark's printed results (`FOLD 2`, then one `Accuracy: …` per
    line, as a public README shows its program's output) is a run per fold; `Epoch 3` titles
    open points of one run, never runs."""
    folds = tmp_path / "folds.txt"
    folds.write_text("".join(f"FOLD {i}\nAccuracy: 0.7{i}71345387\nMCC: 0.5{i}80825677\nTraining "
                             f"Time: 67{i}7.57267165\n\n" for i in range(1, 6)))
    sections = text_sections(str(folds))
    assert [s.name for s in sections] == [f"FOLD {i}" for i in range(1, 6)]
    assert sections[1].summary == {"Accuracy": 0.7271345387, "MCC": 0.5280825677,
                                   "Training_Time": 6727.57267165}
    epochs = tmp_path / "epochs.txt"
    epochs.write_text("".join(f"Epoch {i}\nloss: 0.{9 - i}1 acc: 0.{i}2\n" for i in range(1, 6)))
    assert text_sections(str(epochs)) is None
    repeated = tmp_path / "repeated.txt"  # a key twice in a section: a history, not results
    repeated.write_text("".join(f"Run {i}\nloss: 0.5\nloss: 0.4\n" for i in range(1, 4)))
    assert text_sections(str(repeated)) is None
