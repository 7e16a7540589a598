"""History held as columns: the same points, keys and frames as the DataFrame path, and commands
that need no DataFrame (`rundiff ls` on a journal) never import pandas."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from rundiff_core.model import HistoryColumns, Run, make_history


def _columns() -> HistoryColumns:
    # interleaved keys, a duplicate step, NaN and inf kept as logged
    return HistoryColumns(
        step=np.array([0.0, 0.0, 1.0, 1.0, 1.0, 2.0]),
        key_codes=np.array([0, 1, 0, 1, 0, 2], dtype=np.int32),
        keys=["loss", "lr", "eval/acc"],
        value=np.array([2.0, 1e-3, np.nan, 1e-3, np.inf, 0.5]),
        wall_time=np.array([10.0, 10.0, 11.0, 11.0, 12.0, np.nan]),
        notes=["metrics.jsonl: step 1 logged twice for loss"],
    )


def _frame() -> pd.DataFrame:
    c = _columns()
    return make_history(c.step, [c.keys[i] for i in c.key_codes], c.value, c.wall_time)


@pytest.mark.parametrize("as_columns", [True, False])
def test_run_reads_the_same_from_columns_or_frame(as_columns):
    """Rule: a loader's columns and the equivalent frame give identical series, keys and frames."""
    run = Run("journal:x", "x", "x", "journal",
              loader=lambda keys: _columns() if as_columns else _frame())
    assert run.metric_keys() == ["eval/acc", "loss", "lr"]
    steps, values, walls = run.series("loss")
    assert steps.tolist() == [0.0, 1.0, 1.0] and values[0] == 2.0 and np.isnan(values[1])
    assert np.isinf(values[2]) and walls.tolist() == [10.0, 11.0, 12.0]
    assert run.n_points() == 6
    full = run.history()
    assert full["key"].astype(str).tolist() == ["loss", "lr", "loss", "lr", "loss", "eval/acc"]
    sub = run.history(["lr", "eval/acc"])  # logged order across keys kept
    assert sub["key"].astype(str).tolist() == ["lr", "lr", "eval/acc"]
    assert sub["value"].tolist() == [1e-3, 1e-3, 0.5]


def test_notes_from_columns_reach_the_run():
    run = Run("journal:x", "x", "x", "journal", loader=lambda keys: _columns())
    run.metric_keys()
    assert run.fidelity == ["metrics.jsonl: step 1 logged twice for loss"]


def test_from_frame_round_trip():
    frame = _frame()
    back = HistoryColumns.from_frame(frame).to_frame()
    pd.testing.assert_frame_equal(back.assign(key=back["key"].astype(str)),
                                  frame.assign(key=frame["key"].astype(str)))


def test_ls_on_a_journal_imports_no_pandas(tmp_path):
    """Rule: listing a journal run builds no DataFrame, so pandas (~0.4 s) is never imported."""
    from rundiff_core.demo import write_journal_run

    run = write_journal_run(str(tmp_path / "r"), config={"lr": 0.1},
                            rows=[{"step": s, "loss": 1.0 / (s + 1), "acc": s / 10}
                                     for s in range(50)])
    code = (
        "import sys, json\n"
        "from rundiff_core.resolve import load_runs\n"
        "from rundiff_core.commands.ls import summarize\n"
        f"rows = [summarize(r) for r in load_runs({run!r})]\n"
        "print(json.dumps({'heavy': [m for m in ('pandas', 'polars') if m in sys.modules],"
        " 'keys': rows[0]['keys'], 'points': rows[0]['points']}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ})
    got = json.loads(out.stdout)
    assert got["heavy"] == []
    assert got["points"] == 100
    assert got["keys"] == [{"key": "acc", "points": 50, "first_step": 0.0, "last_step": 49.0},
                           {"key": "loss", "points": 50, "first_step": 0.0, "last_step": 49.0}]


@pytest.mark.parametrize("values", [
    np.array([5, 3, 5, 1, 3, 3, 9], dtype=np.uint64),  # small ints: the lookup-table path
    np.array([10**12, 5, 10**12, 7], dtype=np.int64),  # large ints: the sorting path
    np.array([2.5, np.nan, 2.5, -1.0]),
    np.array([b"loss", b"lr", b"loss", b"acc"], dtype=object),
    np.array([], dtype=np.int64),
])
def test_factorize_matches_pandas(values):
    """Rule: codes in order of first appearance, exactly as pandas.factorize gives them."""
    from rundiff_core.parsing.codes import factorize

    codes, uniques = factorize(values)
    want_codes, want_uniques = pd.factorize(pd.Series(values), use_na_sentinel=False)
    assert codes.tolist() == want_codes.tolist()
    assert [str(u) for u in uniques] == [str(u) for u in np.asarray(want_uniques)]


def test_tensorboard_listing_imports_no_pandas():
    """Rule: the TensorBoard reader builds columns, so `ls` on a TB run needs no pandas."""
    root = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "realdata",
                        "tb-lightning-fractaldb")
    if not os.path.isdir(root):
        pytest.skip("realdata not found")
    code = ("import sys\nfrom rundiff_core.resolve import load_runs\n"
            "from rundiff_core.commands.ls import summarize\n"
            f"rows = [summarize(r) for r in load_runs('tb:' + {os.path.abspath(root)!r})]\n"
            "assert rows and rows[0]['points'] > 0\n"
            "print([m for m in ('pandas', 'polars') if m in sys.modules])\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
