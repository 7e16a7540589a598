"""`history_frame` builds the canonical frame without pandas' dict constructor: it must give the
same frame the constructor would, and keep ready arrays without copying them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rundiff_core.model import HISTORY_COLUMNS, history_frame, make_history


def _reference(step, key, value, wall):
    return pd.DataFrame({"step": step, "key": key, "value": value, "wall_time": wall})


@pytest.mark.parametrize("categorical", [True, False])
def test_same_frame_as_the_dict_constructor(categorical):
    step = np.array([0.0, 1.0, 1.0, 2.5])
    value = np.array([1.0, np.nan, np.inf, -2.0])
    wall = np.array([10.0, 11.0, np.nan, 13.0])
    names = np.array(["loss", "lr", "loss", "eval/acc"], dtype=object)
    key = pd.Categorical(names) if categorical else names
    got = history_frame(step, key, value, wall)
    want = _reference(step, key, value, wall)
    assert list(got.columns) == list(HISTORY_COLUMNS)
    assert got.dtypes.to_dict() == want.dtypes.to_dict()
    pd.testing.assert_frame_equal(got, want)


def test_ready_arrays_are_not_copied_and_frames_stay_independent():
    step, value, wall = (np.arange(5, dtype=float) for _ in range(3))
    key = pd.Categorical(["a"] * 5)
    frame = history_frame(step, key, value, wall)
    assert np.shares_memory(frame["step"].to_numpy(), step)
    other = history_frame(step.copy(), key, value.copy(), wall.copy())
    other.loc[0, "value"] = 99.0
    assert frame.loc[0, "value"] == 0.0


def test_make_history_coerces_lists():
    frame = make_history([1, 2], ["a", "b"], [0.5, 0.25])
    assert frame["step"].dtype == np.float64 and frame["wall_time"].isna().all()
    assert frame["key"].tolist() == ["a", "b"]
    with pytest.raises(ValueError):
        make_history([1, 2, 3], ["a", "b"], [0.5, 0.25])


def test_key_index_of_a_categorical_history_skips_unused_categories():
    from rundiff_core.model import Run

    key = pd.Categorical(["b", "a", "b", "a"], categories=["a", "b", "never"])
    frame = history_frame(np.array([0.0, 0.0, 1.0, 1.0]), key, np.array([1.0, 2.0, 3.0, 4.0]),
                          np.full(4, np.nan))
    run = Run(address="memory:x", name="x", run_id="x", adapter="memory")
    run.loader = lambda keys: frame
    assert run.metric_keys() == ["a", "b"]
    steps, values, _ = run.series("b")
    assert steps.tolist() == [0.0, 1.0] and values.tolist() == [1.0, 3.0]
    assert run.history(["a"])["value"].tolist() == [2.0, 4.0]
    assert len(run.series("never")[0]) == 0
