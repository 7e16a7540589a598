"""local: text logs of torchtune, HF Trainer / axolotl and fairseq (adapters/local/textlog.py).

Real samples: tests/fixtures/realworld/textlogs/torchtune-csc-gpu-benchmark (torchtune 0.5.0 SLURM
stdout: tqdm `1|<step>|Loss: x` descriptions inside `\\r`-rewritten lines; figures from its
expected.json), fairseq's own logs (below), and HF Trainer / TRL stdout in
test_realworld_console_logs.py. No licensed real sample of a torchtune DiskLogger file or an
axolotl log was found: those tests write synthetic lines modelled on the upstream writers' format
strings, quoted above each writer below.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from rundiff_adapters.local.textlog import read_text_log, sniff_text

from rundiff_core.cli import main
from rundiff_core.resolve import open_source
from rundiff_core.testing import hash_tree

TORCHTUNE = Path(__file__).resolve().parents[1] / "fixtures" / "realworld" / "textlogs" / \
    "torchtune-csc-gpu-benchmark"
OUT = "csc-scripts/logs/a100_g1b6-6076452.out"


def _runs(path) -> dict:
    src = open_source(f"local:{path}")
    return {r.run_id: src.load_run(r) for r in src.list_runs()}


# -- torchtune: the real SLURM stdout -----------------------------------------------------------


def test_torchtune_tqdm_descriptions_in_cr_rewritten_lines():
    exp = json.loads((TORCHTUNE / "expected.json").read_text())["files"][OUT]
    before = hash_tree(str(TORCHTUNE))
    runs = _runs(TORCHTUNE)
    assert list(runs) == [OUT]  # the log is found two folders down; the YAML is not a run
    run = runs[OUT]
    loss = run.history(["loss"])
    assert run.metric_keys() == ["loss"]
    assert len(loss) == exp["loss"]["points"] == exp["distinct_steps"]
    assert (loss.step.iloc[0], loss.step.iloc[-1]) == (exp["first_step"][1], exp["last_step"][1])
    assert loss.value.iloc[0] == exp["loss"]["first_value"]
    assert loss.value.iloc[-1] == exp["loss"]["last_value"]
    assert (loss.value.min(), loss.value.max()) == (exp["loss"]["min"], exp["loss"]["max"])
    assert loss.step.is_monotonic_increasing and loss.step.is_unique
    frame, notes = read_text_log(str(TORCHTUNE / OUT))
    note = notes[0]
    assert "torchtune progress log" in note
    assert f"{exp['tqdm_loss_occurrences']} progress descriptions" in note
    assert f"{exp['distinct_steps']} distinct steps" in note
    assert any("Loss → loss" in n for n in notes)
    assert hash_tree(str(TORCHTUNE)) == before


def test_torchtune_log_through_ls_and_a_truncated_copy(tmp_path, capsys):
    assert main(["ls", str(TORCHTUNE)]) == 0
    assert "layout: text (torchtune progress log" in capsys.readouterr().out
    raw = (TORCHTUNE / OUT).read_bytes()
    cut = tmp_path / "cut.out"
    cut.write_bytes(raw[: len(raw) * 2 // 3])  # mid-way through the progress line
    frame, notes = read_text_log(str(cut))
    steps = frame[frame.key == "loss"].step
    assert 1 <= len(steps) < 512 and steps.iloc[0] == 1
    garbled = tmp_path / "garbled.out"
    garbled.write_bytes(raw[:40000] + b"\x00\xff" * 500 + raw[40000:])
    frame, notes = read_text_log(str(garbled))
    assert len(frame[frame.key == "loss"]) == 512


# -- torchtune DiskLogger (synthetic) -----------------------------------------------------------
# torchtune/training/metric_logging.py, DiskLogger:
#     def log_dict(self, payload, step):
#         self._file.write(f"Step {step} | ")
#         for name, data in payload.items():
#             self._file.write(f"{name}:{data} ")
#         self._file.write("\n")
# file name: f"log_{unix_timestamp}.txt"


def _disklogger(path: Path, steps: int) -> None:
    with open(path, "w") as fh:
        for step in range(1, steps + 1):
            payload = {"loss": 2.0 / step, "lr": 3e-4 * min(1.0, step / 10),
                       "tokens_per_second_per_gpu": 1500.0 + step,
                       "peak_memory_alloc": 12.5, "peak_memory_reserved": 13.25}
            fh.write(f"Step {step} | ")
            for name, data in payload.items():
                fh.write(f"{name}:{data} ")
            fh.write("\n")


def test_torchtune_disklogger_file(tmp_path):
    path = tmp_path / "log_1712345678.txt"
    _disklogger(path, 40)
    g = sniff_text(str(path))
    assert g is not None and g.step == "Step" and g.framework == "torchtune-disk"
    run = _runs(tmp_path)["log_1712345678.txt"]
    assert sorted(run.metric_keys()) == ["loss", "lr", "peak_memory_alloc", "peak_memory_reserved",
                                         "tokens_per_second_per_gpu"]
    assert run.point_count("loss") == 40 and run.last_value("loss") == 2.0 / 40
    assert run.history(["lr"]).step.tolist() == [float(s) for s in range(1, 41)]
    assert any("torchtune DiskLogger text log" in n for n in run.fidelity)


# -- HF Trainer / axolotl stdout (synthetic) ----------------------------------------------------
# transformers/trainer_callback.py, ProgressCallback.on_log (4.3x–4.4x):
#     if "epoch" in shallow_logs:
#         shallow_logs["epoch"] = round(shallow_logs["epoch"], 2)
#     self.training_bar.write(str(shallow_logs))
# newer ProgressCallback.on_log: `elif isinstance(v, float): shallow_logs[k] = f"{v:.4g}"` before
# the same write (values printed as text); PrinterCallback.on_log: `print(logs)`.
# axolotl trains through the HF Trainer: the same lines in its stdout.


def _hf_stdout(path: Path, *, text_values: bool = False, per_epoch: int = 10,
               epochs: int = 2, bar: bool = True) -> list[dict]:
    records = []
    total = per_epoch * epochs
    with open(path, "w") as fh:
        fh.write("[2024-05-01 10:00:00,000] [INFO] [axolotl.train.train:173] Starting trainer...\n")
        for i in range(1, total + 1):
            logs = {"loss": round(2.0 - i * 0.05, 4), "grad_norm": 0.5 + i / 100,
                    "learning_rate": 2e-05 * (1 - i / total), "epoch": round(i / per_epoch, 2)}
            records.append(logs)
            shown = {k: (f"{v:.4g}" if text_values and isinstance(v, float) else v)
                     for k, v in logs.items()}
            prefix = f"\r {i * 100 // total:3d}%|###   | {i}/{total} [00:0{i % 10}<00:10,  1.2it/s]" \
                if bar else ""
            fh.write(prefix + "\r" + str(shown) + "\n")
            if i % per_epoch == 0:
                ev = {"eval_loss": 1.5 - i / 100, "eval_runtime": 3.2, "eval_samples_per_second": 31.2,
                      "eval_steps_per_second": 3.9, "epoch": round(i / per_epoch, 2)}
                records.append(ev)
                fh.write(str({k: (f"{v:.4g}" if text_values and isinstance(v, float) else v)
                              for k, v in ev.items()}) + "\n")
        final = {"train_runtime": 120.5, "train_samples_per_second": 8.3,
                 "train_steps_per_second": 1.04, "train_loss": 1.52, "epoch": float(epochs)}
        records.append(final)
        fh.write(str(final) + "\n")
    return records


@pytest.mark.parametrize("text_values", [False, True], ids=["round-floats", "4g-text"])
def test_hf_trainer_dict_lines_x_is_the_epoch(tmp_path, text_values):
    path = tmp_path / "train.out"
    records = _hf_stdout(path, text_values=text_values)
    g = sniff_text(str(path))
    assert g is not None and g.framework == "hf-dict"
    run = _runs(tmp_path)["train.out"]
    loss = run.history(["loss"])
    train = [r for r in records if "loss" in r]
    assert len(loss) == len(train) == 20
    assert loss.step.tolist() == [r["epoch"] for r in train]
    want = [float(f"{r['loss']:.4g}") if text_values else r["loss"] for r in train]
    assert loss.value.tolist() == pytest.approx(want)
    evals = run.history(["eval_loss"])
    assert evals.step.tolist() == [1.0, 2.0] and run.point_count("eval_runtime") == 2
    assert run.point_count("train_loss") == 1 and "epoch" not in run.metric_keys()
    notes = read_text_log(str(path))[1]
    assert "x = epoch" in notes[0] and "20 train, 2 eval, 1 other" in notes[0]
    assert "ast.literal_eval" in notes[0]


def test_hf_trainer_dict_lines_with_repeated_epochs_count_records(tmp_path):
    """200 logs per epoch: `round(epoch, 2)` repeats, so x is the count of train records and an
    eval record takes the count of the train record before it."""
    path = tmp_path / "axolotl.log"
    records = _hf_stdout(path, per_epoch=200, epochs=1, bar=False)
    run = _runs(tmp_path)["axolotl.log"]
    loss = run.history(["loss"])
    assert loss.step.tolist() == [float(i) for i in range(1, 201)]
    assert run.history(["eval_loss"]).step.tolist() == [200.0]
    assert run.history(["epoch"]).value.iloc[-1] == records[-1]["epoch"]  # epoch kept as a series
    assert "count of train records" in read_text_log(str(path))[1][0]


def test_hf_numpy_and_tensor_reprs_are_numbers_and_nothing_is_evaluated(tmp_path):
    path = tmp_path / "stdout.txt"
    path.write_text(
        "{'loss': np.float64(1.25), 'grad_norm': tensor(0.5, device='cuda:0'), 'epoch': 0.1}\n"
        "{'loss': np.float32(1.0), 'grad_norm': tensor(0.25), 'epoch': 0.2}\n"
        "{'loss': __import__('os').system('touch pwned'), 'epoch': 0.3}\n"
        "{'loss': 0.75, 'epoch': 0.4, 'note': 'text is skipped', 'flag': True}\n")
    frame, notes = read_text_log(str(path))
    loss = frame[frame.key == "loss"]
    assert loss.value.tolist() == [1.25, 1.0, 0.75] and loss.step.tolist() == [0.1, 0.2, 0.4]
    assert frame[frame.key == "grad_norm"].value.tolist() == [0.5, 0.25]
    assert set(frame.key) == {"loss", "grad_norm"}
    assert not (tmp_path / "pwned").exists() and not os.path.exists("pwned")
    assert "1 other line(s) skipped" in notes[0]


# -- fairseq (synthetic) ------------------------------------------------------------------------
# fairseq/logging/progress_bar.py:
#     BaseProgressBar: self.prefix += "epoch {:03d}".format(epoch); prefix " | " + prefix
#     _str_commas: ", ".join(key + "=" + stats[key].strip() for key in stats.keys())
#     _str_pipes:  " | ".join(key + " " + stats[key].strip() for key in stats.keys())
#     SimpleProgressBar.log:  logger.info("{}:  {:5d} / {:d} {}".format(self.prefix, self.i + 1, self.size, postfix))
#     SimpleProgressBar.print: logger.info("{} | {}".format(self.prefix, postfix))
# fairseq_cli/train.py: validate(..., prefix=f"valid on '{subset}' subset"); logging format
#     "%(asctime)s | %(levelname)s | %(name)s | %(message)s", logger renamed to the tag
#     (train_inner / train / valid) by rename_logger.


def _fairseq_log(path: Path, *, stamped: bool = True, size: int = 1000, every: int = 100) -> dict:
    lines, want = [], {"loss": [], "valid/loss": [], "train/loss": []}
    head = "2021-03-01 10:00:00 | INFO | {} | " if stamped else "| "
    lines.append((head.format("fairseq_cli.train") if stamped else "| ") + "model transformer, "
                 "criterion LabelSmoothedCrossEntropyCriterion")
    nu = 0
    for epoch in (1, 2):
        prefix = "epoch {:03d}".format(epoch)  # noqa: UP032 - fairseq's own format call
        for i in range(every - 1, size, every):
            nu += every
            stats = {"loss": f"{10 - nu / 500:.3f}", "nll_loss": "8.9", "ppl": "477.5", "wps": "12345.6",
                     "ups": "3.2", "wpb": "3840", "bsz": "128", "num_updates": str(nu), "lr": "0.0005",
                     "gnorm": "1.2", "train_wall": "30", "wall": str(35 + nu)}
            postfix = ", ".join(k + "=" + v.strip() for k, v in stats.items())
            lines.append(head.format("train_inner") + "{}:  {:5d} / {:d} {}".format(prefix, i + 1, size, postfix))  # noqa: UP032
            want["loss"].append((nu, float(stats["loss"])))
        valid = {"loss": f"{9 - epoch / 10:.3f}", "nll_loss": "8.2", "ppl": "295", "wps": "5000",
                 "wpb": "3000", "bsz": "100", "num_updates": str(nu), "best_loss": "8.8"}
        lines.append(head.format("valid") + "{} | {}".format(
            prefix + " | valid on 'valid' subset", " | ".join(k + " " + v for k, v in valid.items())))
        want["valid/loss"].append((nu, float(valid["loss"])))
        train = {"loss": f"{9.5 - epoch / 10:.3f}", "nll_loss": "8.8", "ppl": "445", "num_updates": str(nu),
                 "lr": "0.0005", "gnorm": "1.1", "train_wall": "300", "wall": str(310 * epoch)}
        lines.append(head.format("train") + "{} | {}".format(prefix, " | ".join(k + " " + v for k, v in train.items())))
        want["train/loss"].append((nu, float(train["loss"])))
        lines.append(head.format("fairseq.checkpoint_utils") + f"Saved checkpoint checkpoint{epoch}.pt "
                     f"(epoch {epoch} @ {nu} updates, score 8.8) (writing took 1.2 seconds)")
    path.write_text("\n".join(lines) + "\n")
    return want


@pytest.mark.parametrize("stamped", [True, False], ids=["hydra-logging", "legacy-pipe-prefix"])
def test_fairseq_train_inner_epoch_and_valid_rows_on_num_updates(tmp_path, stamped):
    path = tmp_path / "train.log"
    want = _fairseq_log(path, stamped=stamped)
    g = sniff_text(str(path))
    assert g is not None and g.framework == "fairseq" and g.step == "num_updates"
    run = _runs(tmp_path)["train.log"]
    for key, points in want.items():
        hist = run.history([key])
        assert list(zip(hist.step.tolist(), hist.value.tolist(), strict=True)) == \
            [(float(s), v) for s, v in points], key
    assert run.point_count("valid/best_loss") == 2 and run.point_count("num_updates") == 0
    assert "valid/num_updates" not in run.metric_keys()
    notes = read_text_log(str(path))[1]
    assert "2 train, 20 train_inner, 2 valid" in notes[0]


def test_fairseq_compare_reads_valid_loss_as_lower_is_better(tmp_path, capsys):
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        _fairseq_log(tmp_path / name / "train.log")
    assert main(["compare", str(tmp_path / "a" / "train.log"), str(tmp_path / "b" / "train.log"),
                 "--all", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    got = {m["metric"]: m["goal"] for m in out["metrics"]}
    assert got["valid/loss"] == "min" and got["loss"] == "min"


def test_a_generic_pipe_log_with_epochs_but_no_num_updates_stays_generic(tmp_path):
    path = tmp_path / "log.txt"
    path.write_text("".join(f"epoch {e} | loss {1 / (e + 1):.4f} | acc {e / 10:.2f}\n" for e in range(10)))
    g = sniff_text(str(path))
    assert g is not None and g.framework is None and g.step == "epoch"
    frame, _ = read_text_log(str(path))
    assert len(frame[frame.key == "loss"]) == 10


def test_a_huge_garbage_file_is_sniffed_from_its_head_and_tail_only(tmp_path):
    path = tmp_path / "huge.log"
    with open(path, "wb") as fh:
        fh.write(b"{'loss': 1.0, 'epoch': 0.1}\n" * 3)
        fh.truncate(512 << 20)  # sparse zeros: a binary tail
    import time

    from rundiff_core import InputError

    t0 = time.perf_counter()
    assert sniff_text(str(path)) is None  # NUL bytes: not a text log
    with pytest.raises(InputError):  # nothing else in the folder: no run, found fast
        open_source(f"local:{tmp_path}")
    assert time.perf_counter() - t0 < 1.0


# -- real fairseq logs (facebookresearch/fairseq, MIT; tests/fixtures/realworld/textlogs) --------
FAIRSEQ_REAL = Path(__file__).resolve().parents[1] / "fixtures" / "realworld" / "textlogs"


@pytest.mark.parametrize("source, log, keys", [
    ("fairseq-fb-sweep-mock-results", "fb_sweep/mock_results/big_run.run1/train.log",
     {"train_inner/loss": "loss", "train_inner/lr": "lr", "train_inner/ppl": "ppl"}),
    ("fairseq-fb-sweep-mock-results", "fb_sweep/mock_results/run_simple/train.log",
     {"train_inner/loss": "loss"}),
    ("fairseq-pr4315-wav2vec-stdout", "examples/wav2vec/first_try.out",
     {"train_inner/loss": "loss", "train_inner/accuracy": "accuracy",
      "valid/valid_loss": "valid/loss", "valid/valid_accuracy": "valid/accuracy",
      "train/train_loss": "train/loss"}),
])
def test_real_fairseq_logs_in_both_log_formats(source, log, keys):
    """`--log-format json` (values as strings; `valid_*`-prefixed epoch records, under
    fairseq-hydra-train's `[time][tag][LEVEL] - ` prefix too) and the simple text format: x =
    num_updates, every record; figures from each fixture's expected.json (stdlib-computed)."""
    from rundiff_core import load_run

    root = FAIRSEQ_REAL / source
    expected = json.loads((root / "expected.json").read_text())["files"][log]["metrics"]
    run = load_run(f"local:{root / log}")
    assert run.meta["layout"] == "text"
    for theirs, ours in keys.items():
        if theirs not in expected:
            continue
        want = expected[theirs]
        steps, values, _ = run.series(ours)
        assert len(steps) == want["points"], (ours, len(steps), want)
        assert (steps[0], steps[-1]) == (want["first_step"], want["last_step"])
        assert values[-1] == pytest.approx(want["last_value"])
        assert np.nanmin(values) == pytest.approx(want["min"]) and np.nanmax(values) == pytest.approx(want["max"])
