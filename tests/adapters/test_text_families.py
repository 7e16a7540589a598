"""A framework's console log that also holds another grammar's records keeps both
(adapters/local/textfamilies.py), on real files:

- positive: two SLURM stdouts of a P-tuning v2 run on the HF Trainer
  (tests/fixtures/wild/evanhuang117-cse5525-research-project-conll-{delete,noise}: the Trainer's
  `{'eval_f1': …}` dicts, and the script's logger `… - INFO - training.trainer_base - best_eval_f1
  = …` after every evaluation, in the transformers example scripts' logging format);
- negative: six HF Trainer / TRL / DeepSpeed console logs of three other sources
  (tests/fixtures/realworld/textlogs/) whose other lines are banners, config prints and tqdm
  bars: no second family is invented there.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from rundiff_adapters.local.textgrammar import clean_line, parse_line
from rundiff_adapters.local.textlog import read_text_log

TESTS = Path(__file__).resolve().parents[1]
WILD = TESTS / "fixtures" / "wild"
CONLL = {
    "delete": WILD / "evanhuang117-cse5525-research-project-conll-delete" / "tree" / "results"
    / "conll" / "delete1.out",
    "noise": WILD / "evanhuang117-cse5525-research-project-conll-noise" / "tree" / "results"
    / "conll" / "noise1.out",
}
TEXTLOGS = TESTS / "fixtures" / "realworld" / "textlogs"
OTHERS = [
    TEXTLOGS / "cleancodeqwen-trl-sft-dpo" / "sft.log",
    TEXTLOGS / "cleancodeqwen-trl-sft-dpo" / "dpo.log",
    TEXTLOGS / "cnminiphi3-deepspeed-hf" / "sft.log",
    TEXTLOGS / "cnminiphi3-deepspeed-hf" / "dpo.log",
    TEXTLOGS / "cnminiphi3-deepspeed-hf" / "ds_pretrain.log",
    *sorted((TEXTLOGS / "chehhao-sft-qwen-wandb-output").rglob("output.log")),
]


def _logged(path: Path, key: str) -> list[float]:
    """The values the script's logger printed for `key`, in file order (stdlib only)."""
    out = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        _, sep, value = line.rpartition(f"training.trainer_base - {key} = ")
        if sep:
            out.append(float(value))
    return out


def test_the_transformers_examples_logging_format_is_a_log_prefix():
    line = "12/06/2022 14:56:10 - INFO - training.trainer_base - best_eval_f1 = 0.9589842118452928"
    assert clean_line(line) == "best_eval_f1 = 0.9589842118452928"
    rec = parse_line(line)
    assert rec is not None and rec.pairs == [("best_eval_f1", 0.9589842118452928)]
    assert clean_line("12/06/2022 13:59:06 - WARNING - __main__ - Process rank: -1") == \
        "Process rank: -1"


@pytest.mark.parametrize("which", sorted(CONLL))
def test_logger_lines_beside_trainer_dicts_are_their_own_series(which):
    path = CONLL[which]
    frame, notes = read_text_log(str(path))
    by_key = {k: g.value.tolist() for k, g in frame.groupby("key", observed=True)}
    for key in ("best_epoch", "best_eval_f1", "best_test_f1"):
        want = _logged(path, key)
        assert len(want) == 30
        assert by_key[key] == pytest.approx(want), key
    # the Trainer's own records are untouched: one eval_f1 per epoch, x = epoch 1..30
    eval_f1 = frame[frame.key == "eval_f1"]
    assert len(eval_f1) == 30 and eval_f1.step.tolist() == [float(e) for e in range(1, 31)]
    assert not any(k.startswith("log/") for k in by_key)  # no key written by both
    assert any("of another grammar beside the framework's records" in n for n in notes)
    # the `***** best metrics *****` block HF prints without the logger's stamp is no 31st point
    assert any("without the time stamp" in n for n in notes)


@pytest.mark.parametrize("path", OTHERS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_second_family_from_banners_and_config_prints(path):
    frame, notes = read_text_log(str(path))
    assert not any("another grammar" in n for n in notes)
    assert not any(str(k).startswith("log/") for k in frame.key.unique())


def test_a_key_both_families_write_is_kept_apart(tmp_path):
    """delete1.out's real lines, its logger's `best_eval_f1` renamed `eval_f1` (the Trainer's
    key): the logger's series is `log/eval_f1`, the Trainer's stays `eval_f1`."""
    text = CONLL["delete"].read_text(encoding="utf-8", errors="replace")
    log = tmp_path / "renamed.out"
    log.write_text(text.replace("training.trainer_base - best_eval_f1 = ",
                                "training.trainer_base - eval_f1 = "), encoding="utf-8")
    frame, notes = read_text_log(str(log))
    assert len(frame[frame.key == "eval_f1"]) == 30
    assert frame[frame.key == "log/eval_f1"].value.tolist() == pytest.approx(
        _logged(CONLL["delete"], "best_eval_f1"))
    assert any("written by both" in n for n in notes)
