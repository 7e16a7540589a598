"""Log prefixes, value tokens (adapters/local/texttokens.py) and tqdm bar postfixes
(adapters/local/textbars.py), each held on the real logs it was written for and, where one was
found, a second source from another public repository.

Every expectation on a real file is computed here from the file with `re` and the standard
library — never copied from rundiff's output.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from readback import read_one as _run
from readback import values as _values
from rundiff_adapters.local.textgrammar import clean_line, parse_line
from rundiff_adapters.local.textlog import read_text_log, sniff_text

TESTS = Path(__file__).resolve().parents[1]
WILD = TESTS / "fixtures" / "wild"
TEXTLOGS = TESTS / "fixtures" / "realworld" / "textlogs"

BAAF = WILD / "huixiancheng-my-baaf-with-semantickitti-train-log" / "tree" / "train_log" / "log.txt"
CHINESE_NER = {
    "xlnet-ner": WILD / "js-wangzhu-xlnet-ner-log" / "tree" / "log" / "train.log",
    "mazhanyu007": WILD / "mazhanyu007-ner-log" / "tree" / "log" / "train.log",
}
LOGURU = WILD / "liblume-shimotsuki-bclp-log" / "tree" / "log" / "train.log"
BARS = {
    # one real source: a second (Kangkang-wky/gaussian-splatting's logs) is under a
    # non-commercial license and was not committed
    "partialunet": WILD / "iloveu3d-partialunet-log" / "tree" / "log" / "train.log",
}
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


# -- log prefixes -----------------------------------------------------------------------------------
@pytest.mark.parametrize(("line", "message"), [
    ("[20221127 22:30:55][INFO] Step 00000050 L_out=13.618", "Step 00000050 L_out=13.618"),
    ("2019-10-10 20:33:11,477 - log\\train.log - INFO - iteration:1 step:100/23196",
     "iteration:1 step:100/23196"),
    ("2019-03-20 13:41:57,511 - log/train.log - INFO - iteration:1 step:100/1044",
     "iteration:1 step:100/1044"),
    ("2022-06-24 15:53:43.292 | INFO     | __main__:<module>:9 - train_loss:102.38",
     "train_loss:102.38"),
    ("2023-09-12 16:59:09.148 | SUCCESS  | trainer.loop:train_one_epoch:46 - loss: 0.4",
     "loss: 0.4"),
])
def test_logger_prefixes_are_removed(line: str, message: str) -> None:
    assert clean_line(line) == message


def test_a_loguru_location_without_a_level_before_it_is_message() -> None:
    # `name:function:line - ` is loguru's only after its level: elsewhere it is the message's
    assert clean_line("a:b:3 - loss: 0.5").startswith("a:b:3")


# -- value tokens -----------------------------------------------------------------------------------
def test_value_tokens() -> None:
    rec = parse_line("iteration:1 step:100/23196, NER loss:31.083714")
    assert rec is not None and rec.pairs == [("iteration", 1.0), ("step", 100.0), ("NER_loss", 31.083714)]
    rec = parse_line("epoch1/10:")
    assert rec is not None and rec.pairs == [("epoch", 1.0)] and rec.totals == {"epoch": 10}
    rec = parse_line("Step 00000050 L_out=13.618 Acc=0.43 ---  862.44 ms/batch")
    assert rec is not None and rec.pairs[-1] == ("ms/batch", 862.44)
    rec = parse_line("Best m_IoU is: 21.119")
    assert rec is not None and rec.pairs == [("Best_m_IoU", 21.119)]


def test_value_tokens_that_stay_text() -> None:
    assert clean_line("step1: load the data") == "step1: load the data"  # no total: no counter
    assert clean_line("resnet50/2:") == "resnet50/2:"  # not a step's name
    assert parse_line("4050.26 samples/sec") is None  # no rule or bar before it: no field
    assert parse_line("Speed: 4050.26 samples/sec").pairs == [("Speed_samples_per_sec", 4050.26)]


# -- the BAAF-Net log (compact date, `--- ms/batch` tail, per-epoch evaluation lines) -----------------
def test_compact_date_log() -> None:
    text = BAAF.read_text(encoding="utf-8")
    steps = re.findall(r"\] Step (\d+) L_out=([\d.]+) Acc=([\d.]+) ---", text)
    evals = re.findall(r"\] eval accuracy: ([\d.]+)", text)
    best = re.findall(r"\] Best m_IoU is: ([\d.]+)", text)
    run = _run(BAAF)
    assert _values(run, "L_out") == [float(v) for _, v, _ in steps]
    assert _values(run, "Acc") == [float(v) for _, _, v in steps]
    assert [float(s) for s in run.history(["L_out"]).step] == [float(s) for s, _, _ in steps]
    assert _values(run, "eval_accuracy") == [float(v) for v in evals]
    assert _values(run, "Best_m_IoU") == [float(v) for v in best]


# -- the ChineseNER template (logger name before the level, `NER loss:` glued) ------------------------
@pytest.mark.parametrize("name", sorted(CHINESE_NER))
def test_chinese_ner_loss_lines(name: str) -> None:
    path = CHINESE_NER[name]
    found = re.findall(r"- INFO - iteration:(\d+) step:(\d+)/\d+, NER loss:\s*([\d.]+)",
                       path.read_text(encoding="utf-8"))
    assert len(found) >= 30
    frame, _ = read_text_log(str(path))
    loss = frame[frame["key"] == "NER_loss"]
    assert [float(v) for v in loss["value"]] == [float(v) for _, _, v in found]


# -- loguru, one key per line under `epochN/M:` ------------------------------------------------------
def test_loguru_log_with_epoch_headings() -> None:
    text = LOGURU.read_text(encoding="utf-8")
    epochs = [int(e) for e in re.findall(r" - epoch(\d+)/\d+:$", text, re.M)]
    loss = [float(v) for v in re.findall(r" - train_loss:([\d.]+)$", text, re.M)]
    mape = [float(v) for v in re.findall(r" - train_mape:([\d.]+)%$", text, re.M)]
    run = _run(LOGURU)
    assert _values(run, "train_loss") == loss
    assert _values(run, "train_mape_pct") == mape
    assert [int(s) for s in run.history(["train_loss"]).step] == epochs


# -- tqdm postfixes ---------------------------------------------------------------------------------
def _postfixes(path: Path) -> list[dict[str, float]]:
    """Each change of the bar's postfix, read with the standard library."""
    out: list[dict[str, float]] = []
    last = None
    for frame in re.split(r"[\r\n]+", _ANSI.sub("", path.read_text(encoding="utf-8"))):
        m = re.search(r"(?:it/s|s/it), ([^\]]*=[^\]]*)\]\s*$", frame)
        if m is None or m.group(1) == last:
            continue
        last = m.group(1)
        out.append({k.strip(): float(v) for k, v in (i.split("=") for i in last.split(","))})
    return out


@pytest.mark.parametrize("name", sorted(BARS))
def test_tqdm_postfix_updates(name: str) -> None:
    path = BARS[name]
    updates = _postfixes(path)
    assert len(updates) >= 8
    run = _run(path)
    for key in updates[0]:
        assert _values(run, key) == [u[key] for u in updates]
        assert [int(s) for s in run.history([key]).step] == list(range(1, len(updates) + 1))


def test_tqdm_postfix_yields_to_records(tmp_path: Path) -> None:
    # a script printing its epoch lines beside the bar is read from those lines (as before)
    bar = "Epoch 1: 50%|#####     | 5/10 [00:01<00:01, 4.1it/s, loss=0.{}]"
    lines = [bar.format(i) for i in range(5)] + ["epoch: 1, val_loss: 0.3",
                                                 "epoch: 2, val_loss: 0.2"]
    log = tmp_path / "train.log"
    log.write_text("\r".join(lines[:5]) + "\n" + "\n".join(lines[5:]) + "\n", encoding="utf-8")
    grammar = sniff_text(str(log))
    assert grammar is not None and grammar.framework != "tqdm-postfix" and grammar.step == "epoch"


def test_one_postfix_repeated_is_no_log(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("\r".join(f"{i}/10 [00:0{i}<00:01, 4.1it/s, loss=0.5]" for i in range(5)),
                   encoding="utf-8")
    assert sniff_text(str(log)) is None
