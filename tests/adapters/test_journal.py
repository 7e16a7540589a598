"""The journal adapter: contract suite on a real journal run, plus its format's quirks."""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pandas as pd
import pytest

from rundiff_core.demo import write_journal_run
from rundiff_core.errors import InputError
from rundiff_core.model import make_history
from rundiff_core.resolve import load_run, load_runs
from rundiff_core.testing import AdapterContract, CorruptRun, WrittenRun


class TestJournalContract(AdapterContract):
    adapter = "journal"

    @pytest.fixture
    def written_run(self, tmp_path) -> WrittenRun:
        steps = np.arange(0, 200, 2)
        rows, expected = [], []
        for i, s in enumerate(steps):
            row = {"step": int(s), "loss": float(1 / (i + 1)), "time": 1000.0 + s}
            if i % 5 == 0:
                row["eval/acc"] = float(i) / 100
            rows.append(row)
            expected.append((s, "loss", row["loss"], row["time"]))
            if "eval/acc" in row:
                expected.append((s, "eval/acc", row["eval/acc"], row["time"]))
        config = {"optim": {"lr": 0.001, "name": "adam"}, "layers": 4}
        path = write_journal_run(str(tmp_path / "exp" / "seed-0"), config=config, rows=rows,
                                 final={"loss": 0.01, "status": "finished"}, seed=0)
        s, k, v, t = zip(*expected, strict=True)
        return WrittenRun(path=path, address=f"journal:{path}", history=make_history(s, k, v, t),
                          config=config, summary={"loss": 0.01}, run_id="seed-0")

    @pytest.fixture
    def corrupt_run(self, tmp_path) -> CorruptRun:
        path = tmp_path / "bad"
        path.mkdir()
        (path / "metrics.jsonl").write_text('{"step": 1, "loss": 1.0}\n{"step": 2, "lo\n{"step": 3, "loss": 0.5}\n')
        return CorruptRun(f"journal:{path}", "metrics.jsonl", expect=("1 corrupt line(s) skipped (line 2)",))


def _write(path, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as fh:
        fh.write(text)


def test_long_rows_with_key_or_name_and_time(tmp_path):
    lines = [
        {"step": 0, "key": "loss", "value": 2.0, "wall_time": 5.0},
        {"step": 0, "name": "acc", "value": 0.1, "wall_time": 5.5},
        {"step": 1, "key": "loss", "value": 1.5, "wall_time": 6.0},
    ]
    _write(str(tmp_path / "r" / "metrics.jsonl"), "".join(json.dumps(x) + "\n" for x in lines))
    h = load_run(f"journal:{tmp_path / 'r'}").history()
    got = sorted(zip(h["key"].astype(str), h["step"], h["value"], h["wall_time"], strict=True))
    assert got == [("acc", 0.0, 0.1, 5.5), ("loss", 0.0, 2.0, 5.0), ("loss", 1.0, 1.5, 6.0)]


def test_truncated_last_line_is_dropped_with_a_note(tmp_path):
    _write(str(tmp_path / "r" / "metrics.jsonl"),
           '{"step": 0, "loss": 2.0}\n{"step": 1, "loss": 1.0}\n{"step": 2, "lo')
    run = load_run(f"journal:{tmp_path / 'r'}")
    h = run.history()
    assert h["step"].tolist() == [0.0, 1.0]
    assert any("truncated last line" in n for n in run.fidelity)


def test_nan_inf_kept_and_corrupt_middle_line_counted(tmp_path):
    _write(str(tmp_path / "r" / "metrics.jsonl"),
           '{"step": 0, "loss": NaN}\n{"step": 1, "loss": Infinity}\nnot json\n{"step": 3, "loss": -Infinity}\n')
    run = load_run(f"journal:{tmp_path / 'r'}")
    v = run.history()["value"].tolist()
    assert math.isnan(v[0]) and v[1] == math.inf and v[2] == -math.inf
    assert any("1 corrupt line(s) skipped (line 3)" in n for n in run.fidelity)


def test_duplicate_and_non_integer_steps_are_kept(tmp_path):
    _write(str(tmp_path / "r" / "metrics.jsonl"),
           '{"step": 1, "loss": 1}\n{"step": 1, "loss": 2}\n{"step": 1.5, "loss": 3}\n{"step": 0, "loss": 4}\n')
    h = load_run(f"journal:{tmp_path / 'r'}").history()
    assert h["step"].tolist() == [1.0, 1.0, 1.5, 0.0]
    assert h["value"].tolist() == [1.0, 2.0, 3.0, 4.0]


def test_nested_wide_rows_flatten_and_text_is_reported(tmp_path):
    _write(str(tmp_path / "r" / "metrics.jsonl"),
           '{"step": 0, "train": {"loss": 1.0}, "phase": "warmup"}\n{"step": 1, "train": {"loss": 0.5}, "phase": "main"}\n')
    run = load_run(f"journal:{tmp_path / 'r'}")
    assert run.metric_keys() == ["train.loss"]
    assert any("non-numeric fields not loaded: phase" in n for n in run.fidelity)


def test_events_kind_from_event_type_or_kind(tmp_path):
    d = tmp_path / "r"
    write_journal_run(str(d), config={}, rows=[{"step": 0, "loss": 1}], events=[
        {"event": "resume", "step": 10}, {"type": "rollback", "step": 20}, {"kind": "KILL", "time": 3.0}])
    run = load_run(f"journal:{d}")
    assert [e.kind for e in run.events] == ["resume", "rollback", "kill"]
    assert run.events[0].step == 10 and run.events[2].time == 3.0
    assert run.status == "crashed"


def test_metadata_seed_sha_env_redacted(tmp_path):
    d = tmp_path / "exp" / "seed-7"
    write_journal_run(str(d), config={"db": {"password": "hunter2"}, "lr": 1}, rows=[{"step": 0, "loss": 1}],
                      seed=7, env={"WANDB_API_KEY": "k" * 40, "PATH": "/bin"}, final={"loss": 1})
    run = load_run(str(d))  # bare path: sniffed
    assert run.address == f"journal:{d}"
    assert run.seed == 7 and run.git_sha and run.status == "finished"
    assert run.env["WANDB_API_KEY"] == "***REDACTED***" and run.env["PATH"] == "/bin"
    assert run.config["db"]["password"] == "***REDACTED***"


def test_experiment_folder_lists_seed_runs(demo_runs):
    runs = load_runs(f"journal:{demo_runs / 'exp-baseline'}")
    assert [r.seed for r in runs] == [0, 1, 2]
    assert all(r.name.endswith(f"exp-baseline/seed-{r.seed}") for r in runs)


def test_missing_directory_is_an_input_error(tmp_path):
    with pytest.raises(InputError):
        load_run(f"journal:{tmp_path / 'nope'}")


def test_history_is_lazy_and_keyed(demo_runs):
    run = load_run(str(demo_runs / "exp-baseline" / "seed-0"))
    only = run.history(["lr"])
    assert set(only["key"].astype(str)) == {"lr"}
    full = run.history()
    assert set(full["key"].astype(str)) == {"loss", "lr", "grad_norm", "eval/accuracy"}
    assert isinstance(full, pd.DataFrame) and list(full.columns) == ["step", "key", "value", "wall_time"]


def _big_file(path, rows, extra=None):
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "metrics.jsonl"), "w") as fh:
        for i in range(rows):
            rec = {"step": i, "loss": 1.0 / (i + 1), "lr": 0.001}
            if extra:
                rec.update(extra(i))
            fh.write(json.dumps(rec) + "\n")
    assert os.path.getsize(os.path.join(path, "metrics.jsonl")) > 4 << 20  # the polars fast path


def test_large_file_keeps_a_key_first_seen_late(tmp_path):
    """polars infers from the first rows only; rundiff must notice and lose nothing."""
    _big_file(tmp_path / "r", 90_000, lambda i: {"eval/acc": 0.5} if i >= 80_000 and i % 1000 == 0 else {})
    h = load_run(f"journal:{tmp_path / 'r'}").history()
    assert (h["key"].astype(str) == "eval/acc").sum() == 10
    assert len(h) == 90_000 * 2 + 10


def test_large_file_with_a_stray_string_keeps_numbers(tmp_path):
    _big_file(tmp_path / "r", 90_000, lambda i: {"note": "x"} if i == 70_000 else {"note": 1.0})
    run = load_run(f"journal:{tmp_path / 'r'}")
    h = run.history()
    assert (h["key"].astype(str) == "loss").sum() == 90_000
    assert (h["key"].astype(str) == "note").sum() == 89_999  # every numeric note; the string is not a point


def test_restarts_duplicates_and_fractional_steps_are_reported(tmp_path):
    _write(str(tmp_path / "r" / "metrics.jsonl"),
           '{"step": 0, "loss": 1}\n{"step": 10, "loss": 2}\n{"step": 10, "loss": 2.5}\n'
           '{"step": 5, "loss": 3}\n{"step": 5.5, "loss": 4}\n')
    run = load_run(f"journal:{tmp_path / 'r'}")
    assert len(run.history()) == 5
    notes = " | ".join(run.fidelity)
    assert "step went backwards (restart?) — all points kept: loss ×1 (first 10 → 5)" in notes
    assert "duplicate steps kept as separate points: loss ×1" in notes
    assert "non-integer steps: loss" in notes
