"""local: plain-text training logs (real llm.c and build-nanogpt logs, and the issue's grammars)."""

from __future__ import annotations

import numpy as np
import pytest
from rundiff_adapters.local.textgrammar import parse_line
from rundiff_adapters.local.textlog import read_text_log, sniff_text

from rundiff_core.resolve import open_source


def _load(path):
    src = open_source(f"local:{path}")
    refs = src.list_runs()
    return src, refs


def test_llmc_main_log_three_record_types_share_the_step(realdata):
    src, refs = _load(realdata / "text-llmc-gpt2-124m")
    assert [r.run_id for r in refs] == ["log124M/main.log"]
    run = src.load_run(refs[0])
    hist = run.history()
    counts = hist.key.value_counts().to_dict()
    assert counts == {"trl": 19552, "lr": 19552, "norm": 19552, "tel": 80, "eval": 79}
    assert hist[hist.key == "tel"].step.max() == 19552  # past the last train step
    assert hist[hist.key == "lr"].value.iloc[-1] == 0.0  # printed as 0.000000
    note = next(n for n in run.fidelity if "read as a text log" in n)
    assert "`key:value`" in note and "step = s" in note and "0 line(s) skipped" in note


def test_nanogpt_stdout_pipes_units_and_stepless_evals(realdata):
    path = realdata / "text-build-nanogpt" / "log_bigger" / "nanogpt-bigger-1818620.out"
    frame, notes = read_text_log(str(path))
    counts = frame.key.value_counts().to_dict()
    assert counts["loss"] == counts["dt_ms"] == counts["tok/sec"] == 19073
    assert counts["validation_loss"] == 78 and counts["HellaSwag_accuracy"] == 78
    first_val = frame[frame.key == "validation_loss"].iloc[0]
    assert first_val.step == 0 and first_val.value == pytest.approx(11.0864)
    hs = frame[frame.key == "HellaSwag_accuracy"]
    assert hs.value.iloc[0] == pytest.approx(0.2498)  # 2508/10042=0.2498
    assert frame[frame.key == "dt_ms"].value.iloc[0] == pytest.approx(22621.26)
    assert "total_desired_batch_size" not in set(frame.key)  # a one-off banner line
    text = " ".join(notes)
    assert "units stripped" in text and "ms" in text
    assert "line(s) skipped" in text  # generated samples: counted, not fatal


def test_nanogpt_folder_lists_one_run_per_log_and_last_values_agree(realdata):
    src, refs = _load(realdata / "text-build-nanogpt")
    ids = [r.run_id for r in refs]
    assert ids == ["log/log.txt", "log_bigger/log.txt", "log_bigger/nanogpt-bigger-1818620.out",
                   "log_smaller/log.txt"]
    killed = src.load_run(refs[0]).history(["train"])
    assert len(killed) == 95 and killed.step.max() == 94
    long_form = src.load_run(refs[1]).history()
    out = src.load_run(refs[2]).history()
    assert long_form[long_form.key == "train"].value.iloc[-1] == pytest.approx(
        out[out.key == "loss"].value.iloc[-1])
    assert len(long_form[long_form.key == "val"]) == 78


@pytest.mark.parametrize("line, expected", [
    ("step:100/1750 train_loss:3.28 train_time:1234ms",
     [("step", 100), ("train_loss", 3.28), ("train_time_ms", 1234)]),
    ("iter 100: loss 3.2100, time 45.2ms", [("iter", 100), ("loss", 3.21), ("time_ms", 45.2)]),
    ("s:100 trl:3.2 lr:1e-4", [("s", 100), ("trl", 3.2), ("lr", 1e-4)]),
    ("epoch=3 acc=0.91 loss=nan", [("epoch", 3), ("acc", 0.91), ("loss", float("nan"))]),
])
def test_grammar_forms(line, expected):
    rec = parse_line(line)
    assert rec is not None
    assert [k for k, _ in rec.pairs] == [k for k, _ in expected]
    np.testing.assert_allclose([v for _, v in rec.pairs], [v for _, v in expected])


@pytest.mark.parametrize("line", ["rank 1 sample 0: Hello, I'm a language model, is that",
                                  "found 99 shards for split train", "Traceback (most recent call last):",
                                  "using fused AdamW: True", ""])
def test_prose_is_not_a_record(line):
    assert parse_line(line) is None


def test_a_log_opening_with_the_training_script(tmp_path):
    script = "".join(f"x{i} = torch.zeros({i})  # line {i}\n" for i in range(2000))
    body = "".join(f"step:{s}/500 val_loss:{5 - s / 100:.4f} train_time:{s * 10}ms step_avg:nanms\n"
                   for s in range(0, 500, 5))
    path = tmp_path / "run-seed_4.txt"
    path.write_bytes((script + "=" * 80 + "\n" + body).encode())
    assert sniff_text(str(path)).step == "step"  # found in the tail: the head is all script
    src, refs = _load(tmp_path)
    run = src.load_run(refs[0])
    hist = run.history(["val_loss", "step_avg_ms"])
    assert len(hist[hist.key == "val_loss"]) == 100
    assert np.isnan(hist[hist.key == "step_avg_ms"].value).all()
    assert run.seed == 4
    assert any("2001 line(s) skipped" in n for n in run.fidelity)
    assert any("N/500" in n for n in run.fidelity)
