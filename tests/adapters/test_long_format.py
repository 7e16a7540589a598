"""local: long-format tables — a `split`/`phase`/`stage`/`mode`/`type` column whose few text labels
name the rows (`epoch,split,loss` with `train` and `val` rows) — read as one key per (label,
metric): `train/loss`, `val/loss`, said in a note. Never on a constant column or on free text, and
the label column is never dropped in silence.

No licensed real sample of such a file was found (two unlicensed ones were dropped), so the
"real writer" here is what training scripts do: collect one dict per row in the loop and write them
with pandas' `DataFrame.to_csv` (pandas is the writer, not a framework). Figures are counted from
the written files with the csv module, never with rundiff."""

from __future__ import annotations

import csv
import json
import math
import time
from pathlib import Path

import pandas as pd
import pytest
from rundiff_adapters.local.sniff import read_table, sniff_table

from rundiff_core.cli import main
from rundiff_core.resolve import open_source


def _one(path):
    src = open_source(f"local:{path}")
    (ref,) = src.list_runs()
    run = src.load_run(ref)
    run.history()
    return run


def _long_figures(path: Path, label: str, step: str, sep: str = ",") -> dict:
    """{label/column: (points, last value)} of a long table, with the csv module."""
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter=sep))
    out: dict[str, tuple[int, float]] = {}
    for r in rows:
        for k, v in r.items():
            if k in (label, step) or v == "":
                continue
            key = f"{r[label]}/{k}" if r[label] else k
            n, _ = out.get(key, (0, math.nan))
            out[key] = (n + 1, float(v))
    return out


def _training_log(epochs: int = 6, seed: int = 0) -> list[dict]:
    """What a training loop appends: a train row per epoch (with the lr) and a val row."""
    rows = []
    for e in range(epochs):
        rows.append({"epoch": e, "split": "train", "loss": 2.0 / (e + 1) + seed * 0.01,
                     "acc": 0.5 + 0.05 * e, "lr": 1e-3 * 0.9 ** e})
        rows.append({"epoch": e, "split": "val", "loss": 2.2 / (e + 1) + seed * 0.02,
                     "acc": 0.45 + 0.05 * e})
    return rows


def _check(run, want: dict) -> None:
    assert sorted(run.metric_keys()) == sorted(want), (run.metric_keys(), sorted(want))
    for key, (n, last) in want.items():
        assert run.point_count(key) == n, key
        assert run.last_value(key) == pytest.approx(last), key


def test_pandas_to_csv_long_log_one_key_per_split_and_metric(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    pd.DataFrame(_training_log()).to_csv(run_dir / "log.csv", index=False)  # the writer
    want = _long_figures(run_dir / "log.csv", "split", "epoch")
    assert "val/lr" not in want and want["train/lr"][0] == 6  # lr only on train rows
    run = _one(run_dir)
    assert run.meta["layout"] == "files"
    _check(run, want)
    hist = run.history(["val/loss"])
    assert list(hist.step) == [0, 1, 2, 3, 4, 5]  # x = epoch, the val rows only
    notes = "\n".join(run.fidelity)
    assert "log.csv read as CSV; x = epoch; 5 metrics" in notes
    assert "log.csv: long format — `split` names the rows (train, val): one key per (label, " \
           "metric), e.g. train/…, val/…" in notes
    assert "text column" not in notes  # the label column is accounted for, not "skipped"


def test_tsv_phase_column_with_three_labels_and_a_step(tmp_path):
    rows = []
    for step in range(0, 300, 10):
        rows.append({"step": step, "phase": "train", "loss": 1 / (step + 1)})
        if step % 100 == 90:
            rows.append({"step": step, "phase": "valid", "loss": 1.1 / (step + 1), "f1": step / 300})
    rows.append({"step": 290, "phase": "test", "loss": 0.004, "f1": 0.97})
    (tmp_path / "r").mkdir()
    pd.DataFrame(rows).to_csv(tmp_path / "r" / "metrics.tsv", sep="\t", index=False)
    want = _long_figures(tmp_path / "r" / "metrics.tsv", "phase", "step", sep="\t")
    run = _one(tmp_path / "r")
    _check(run, want)
    assert set(run.metric_keys()) == {"train/loss", "valid/loss", "valid/f1", "test/loss", "test/f1"}
    assert "`phase` names the rows (train, valid, test)" in "\n".join(run.fidelity)


def test_a_constant_label_column_is_no_split_and_says_so(tmp_path):
    (tmp_path / "r").mkdir()
    pd.DataFrame([{"step": s, "stage": "fit", "loss": 1 / (s + 1)} for s in range(5)]).to_csv(
        tmp_path / "r" / "train_log.csv", index=False)
    run = _one(tmp_path / "r")
    assert run.metric_keys() == ["loss"] and run.point_count("loss") == 5
    notes = "\n".join(run.fidelity)
    assert "train_log.csv: `stage` holds one label ('fit') on every row: not a split" in notes
    assert "text column(s) skipped" not in notes


def test_free_text_in_a_type_column_is_not_a_split(tmp_path):
    (tmp_path / "r").mkdir()
    rows = [{"step": s, "type": f"checkpoint saved to ckpt_{s}.pt after {s} steps", "loss": 1 / (s + 1)}
            for s in range(4)]
    pd.DataFrame(rows).to_csv(tmp_path / "r" / "log.csv", index=False)
    run = _one(tmp_path / "r")
    assert run.metric_keys() == ["loss"]
    assert "log.csv: `type` is free text (4 distinct value(s), e.g. 'checkpoint saved to ckpt_0.pt " \
           "after 0 st'), not split labels; skipped" in "\n".join(run.fidelity)


def test_many_labels_are_text_not_a_split(tmp_path):
    (tmp_path / "r").mkdir()
    rows = [{"step": s, "mode": f"task{s:02d}", "score": s} for s in range(12)]
    pd.DataFrame(rows).to_csv(tmp_path / "r" / "log.csv", index=False)
    run = _one(tmp_path / "r")
    assert run.metric_keys() == ["score"] and run.point_count("score") == 12
    assert "`mode` is free text (12 distinct value(s)" in "\n".join(run.fidelity)


def test_a_numeric_stage_column_stays_a_metric(tmp_path):
    (tmp_path / "r").mkdir()
    pd.DataFrame([{"step": s, "stage": s // 3 + 1, "loss": 1 / (s + 1)} for s in range(9)]).to_csv(
        tmp_path / "r" / "log.csv", index=False)
    run = _one(tmp_path / "r")
    assert sorted(run.metric_keys()) == ["loss", "stage"] and run.last_value("stage") == 3


def test_unlabelled_rows_keep_the_plain_names_and_a_second_label_column_is_named(tmp_path):
    (tmp_path / "r").mkdir()
    text = ("step,split,mode,loss\n"
            "0,train,fast,1.0\n0,val,fast,1.2\n1,train,slow,0.8\n1,,slow,0.5\n2,val,fast,0.9\n")
    (tmp_path / "r" / "log.csv").write_text(text)
    run = _one(tmp_path / "r")
    assert sorted(run.metric_keys()) == ["loss", "train/loss", "val/loss"]
    assert run.point_count("loss") == 1 and run.last_value("loss") == 0.5
    notes = "\n".join(run.fidelity)
    assert "1 row(s) without a label keep the plain names" in notes
    assert "`mode` is a second label column (fast, slow); the rows are split by `split` only" in notes


def test_whitespace_table_and_ragged_rows_take_the_pandas_path_and_still_split(tmp_path):
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "train.log").write_text(
        "step phase loss\n" + "".join(f"{s} {'train' if s % 2 else 'eval'} {1 / (s + 1)}\n"
                                      for s in range(8)))
    run = _one(tmp_path / "ws")
    assert sorted(run.metric_keys()) == ["eval/loss", "train/loss"]
    assert run.point_count("eval/loss") == 4 and run.last_value("train/loss") == pytest.approx(1 / 8)
    (tmp_path / "ragged").mkdir()
    good = "".join(f"{e},{s},{1 / (e + 1)}\n" for e in range(30) for s in ("train", "val"))
    (tmp_path / "ragged" / "log.csv").write_text(  # a bad row past the sniff window
        "epoch,split,loss\n" + good + "30,train,0.5,oops\n30,val,1.0\n31,train,0.25\n")
    frame, notes = read_table(str(tmp_path / "ragged" / "log.csv"))
    got = {k: len(g) for k, g in frame.groupby("key", observed=True)}
    assert got == {"train/loss": 31, "val/loss": 31}
    assert any("1 malformed row(s) skipped" in n for n in notes)
    assert any("`split` names the rows (train, val)" in n for n in notes)


def test_json_lines_are_left_to_their_layouts(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_text("".join(json.dumps({"step": s, "mode": "train" if s % 2 else "val",
                                        "loss": 1 / (s + 1)}) + "\n" for s in range(6)))
    frame, notes = read_table(str(path), sniff_table(str(path)))
    assert set(frame.key) == {"loss"}  # mmdet-style JSON lines: their layout reads `mode`
    assert "1 text column(s) skipped (mode)" in notes[-1]


def test_cli_ls_diff_and_compare_on_two_long_format_runs(tmp_path, capsys):
    for seed in (0, 1):
        d = tmp_path / "runs" / f"lr-small_s{seed}"
        d.mkdir(parents=True)
        pd.DataFrame(_training_log(seed=seed)).to_csv(d / "log.csv", index=False)
    want = _long_figures(tmp_path / "runs" / "lr-small_s0" / "log.csv", "split", "epoch")
    assert main(["ls", str(tmp_path / "runs")]) == 0
    out = capsys.readouterr().out
    assert out.count("layout: files") == 2
    assert f"val/loss: {want['val/loss'][0]} points, steps 0–5" in out
    assert "long format — `split` names the rows (train, val)" in out
    a, b = (str(tmp_path / "runs" / f"lr-small_s{s}") for s in (0, 1))
    assert main(["diff", a, b, "--metric", "val/loss", "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["goal"] == "min" and d["metric"] == "val/loss"
    assert d["headline_a"]["final"] == pytest.approx(want["val/loss"][1])
    assert main(["compare", a, b]) == 0
    out = capsys.readouterr().out
    assert "val/loss" in out and "train/loss" in out


def test_a_long_format_table_of_100k_rows_is_read_whole_and_fast(tmp_path):
    n = 100_000
    (tmp_path / "big").mkdir()
    pd.DataFrame({"step": [i // 2 for i in range(n)],
                  "split": ["train" if i % 2 == 0 else "val" for i in range(n)],
                  "loss": [1 / (i + 1) for i in range(n)],
                  "acc": [i / n for i in range(n)]}).to_csv(tmp_path / "big" / "log.csv", index=False)
    t0 = time.perf_counter()
    frame, _ = read_table(str(tmp_path / "big" / "log.csv"))
    assert time.perf_counter() - t0 < 5
    got = {k: len(g) for k, g in frame.groupby("key", observed=True)}
    assert got == {"train/loss": n // 2, "val/loss": n // 2, "train/acc": n // 2, "val/acc": n // 2}
