"""A run written by the real `transformers.Trainer` (fixture from scripts/make_hf_trainer_fixtures.py;
transformers is too heavy for every CI run): its `checkpoint-*` snapshots are one run, read from the
newest, with train and eval rows kept as their own keys — checked against the JSON by hand."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from rundiff_core import load_runs
from rundiff_core.testing import hash_tree

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "hf_trainer" / "run"


def _by_hand(state: dict) -> dict[str, list[tuple[float, float]]]:
    """Every (step, value) of the log history, as Trainer wrote it (train and eval rows alike).
    `epoch` sits in both rows of a step with the same value: one point per step."""
    out: dict[str, list[tuple[float, float]]] = {}
    for row in state["log_history"]:
        for key, value in row.items():
            if key != "step" and isinstance(value, int | float) and not isinstance(value, bool):
                point = (float(row["step"]), float(value))
                if key == "epoch" and point in out.get(key, []):
                    continue
                out.setdefault(key, []).append(point)
    return out


def test_trainer_checkpoints_are_one_run_with_every_logged_point(tmp_path):
    run_dir = tmp_path / "out"
    shutil.copytree(FIXTURE, run_dir)
    before = hash_tree(str(run_dir))
    runs = load_runs(str(run_dir))
    assert len(runs) == 1  # checkpoint-4, -8, -12 are snapshots of one run
    run = runs[0]
    newest = json.loads((run_dir / "checkpoint-12" / "trainer_state.json").read_text())
    want = {k: v for k, v in _by_hand(newest).items()
            if not k.startswith("train_")}  # the final summary row goes to the summary
    assert set(run.metric_keys()) == set(want)
    for key, points in want.items():
        steps, values, _ = run.series(key)
        assert list(zip(steps.tolist(), values.tolist(), strict=True)) == points, key
    assert "eval_loss" in want and "loss" in want  # eval rows are their own keys
    assert any("checkpoint-12" in n for n in run.fidelity)  # says which snapshot it read
    assert hash_tree(str(run_dir)) == before  # read-only
