"""The same-step alignment rules (rundiff_core/engines/align.py) against a brute-force reference.

- duplicated x: the last logged value wins; non-finite x is dropped; the result is sorted.
- a target past the series' end (beyond the tolerance) is "not reached" — never the last value;
  with `strict_start`, one before its start is "not started".
- an exact x is used as is; otherwise "nearest" takes the closest x (ties: the smaller x), and
  "interpolate" goes linearly between the two bracketing points.
- an axis key (epoch, tokens) is read by step: exact where logged, linear between, NaN outside.
The reference below implements the rules with plain loops over random series.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from rundiff_core.engines.align import (
    axis_from_key,
    dedupe_last,
    first_decrease,
    relative_wall_time,
    slice_at,
    slice_sorted,
    values_at,
)


def ref_dedupe(x, y):
    last = {}
    for xi, yi in zip(x, y, strict=True):
        if math.isfinite(xi):
            last[xi] = yi
    keys = sorted(last)
    return keys, [last[k] for k in keys]


def ref_slice(x, y, t, mode, tol, strict):
    xs, ys = ref_dedupe(x, y)
    if not xs:
        return ("empty", math.nan, math.nan, ())
    if t > xs[-1] + tol:
        return ("not reached", math.nan, xs[-1], (len(xs) - 1,))
    if strict and t < xs[0] - tol:
        return ("not started", math.nan, xs[0], (0,))
    if t in xs:
        i = xs.index(t)
        return ("exact", ys[i], xs[i], (i,))
    below = [i for i, v in enumerate(xs) if v < t]
    above = [i for i, v in enumerate(xs) if v > t]
    if mode == "interpolate" and below and above:
        i0, i1 = below[-1], above[0]
        v = ys[i0] + (ys[i1] - ys[i0]) * (t - xs[i0]) / (xs[i1] - xs[i0])
        return ("interpolate", v, t, (i0, i1))
    j = min(range(len(xs)), key=lambda k: (abs(xs[k] - t), xs[k]))
    return ("nearest", ys[j], xs[j], (j,))


def _same(a, b):
    return (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, rel=1e-12, abs=1e-12)


def _series(rng):
    n = int(rng.integers(0, 12))
    x = rng.integers(0, 15, n).astype(float)  # duplicates likely
    if n and rng.random() < 0.3:
        x[rng.integers(0, n)] = math.nan
    return x, rng.normal(size=n)


def test_rule_dedupe_keeps_the_last_logged_value_sorted():
    rng = np.random.default_rng(0)
    for _ in range(300):
        x, y = _series(rng)
        xs, ys = dedupe_last(x, y)
        rx, ry = ref_dedupe(x.tolist(), y.tolist())
        assert xs.tolist() == rx and ys.tolist() == ry


@pytest.mark.parametrize("mode", ["nearest", "interpolate"])
def test_rule_slice_equals_the_reference(mode):
    rng = np.random.default_rng(1)
    for _ in range(400):
        x, y = _series(rng)
        tol = float(rng.choice([0.0, 0.0, 1.5]))
        strict = bool(rng.random() < 0.5)
        for t in rng.integers(-3, 18, 6).astype(float).tolist() + [float(rng.uniform(-3, 18))]:
            got = slice_at(x, y, t, mode, tol or None, strict_start=strict)
            method, value, x_used, idx = ref_slice(x.tolist(), y.tolist(), t, mode, tol, strict)
            assert (got.method, got.indices) == (method, idx), (x, t, tol, strict)
            assert _same(got.value, value) and _same(got.x_used, x_used), (x, t)
            assert got.target == t and got.reached == (method in ("exact", "nearest", "interpolate"))
            if method == "interpolate":
                xs, _ = ref_dedupe(x.tolist(), y.tolist())
                assert got.bracket == (xs[idx[0]], xs[idx[1]])
            else:
                assert got.bracket is None


@pytest.mark.parametrize("mode", ["nearest", "interpolate"])
@pytest.mark.parametrize("strict", [True, False])
def test_rule_values_at_equals_slicing_each_target(mode, strict):
    """The vectorised path must give what slicing target by target gives (NaN outside)."""
    rng = np.random.default_rng(2)
    for _ in range(200):
        xs, ys = dedupe_last(*_series(rng))
        # on logged x, halfway between two (ties) and anywhere: every branch of the lookup
        targets = np.concatenate([rng.integers(-2, 17, 4).astype(float), rng.integers(-4, 34, 3) / 2,
                                  rng.uniform(-3, 18, 3)])
        got = values_at(xs, ys, targets, mode, strict_start=strict)
        want = [slice_sorted(xs, ys, float(t), mode, strict_start=strict).value for t in targets]
        if not strict and mode == "interpolate":  # before the start np.interp holds the first value
            want = [ys[0] if len(xs) and t < xs[0] else w for t, w in zip(targets, want, strict=True)]
        assert all(_same(a, b) for a, b in zip(got.tolist(), want, strict=True)), (xs, targets)
    assert values_at(np.array([]), np.array([]), [1.0]).tolist() != [0.0]
    assert math.isnan(values_at(np.array([]), np.array([]), [1.0])[0])
    assert len(values_at(np.array([1.0]), np.array([2.0]), [])) == 0


def test_rule_unknown_align_mode_is_refused():
    with pytest.raises(ValueError, match="align mode must be one of"):
        slice_sorted(np.array([1.0]), np.array([1.0]), 1.0, "cubic")


def test_rule_axis_key_is_read_by_step_and_never_extrapolated():
    # epoch logged at steps 10, 20, 20 (the last wins), 40; NaN epochs are ignored
    ks = np.array([10.0, 20.0, 20.0, 30.0, 40.0])
    kv = np.array([1.0, 1.5, 2.0, math.nan, 4.0])
    got = axis_from_key(np.array([5, 10, 15, 20, 30, 40, 45]), ks, kv)
    # by hand: before 10 and after 40 unknown; 15 halfway 1→2; 30 halfway 2→4
    assert np.array_equal(got, [math.nan, 1.0, 1.5, 2.0, 3.0, 4.0, math.nan], equal_nan=True)
    assert np.isnan(axis_from_key(np.array([1.0, 2.0]), np.array([]), np.array([]))).all()
    assert len(axis_from_key(np.array([1.0, 2.0]), np.array([1.0]), np.array([math.nan]))) == 2


def test_rule_first_decrease_and_relative_wall_time():
    assert first_decrease(np.array([0, 1, 2, 3]), np.array([1.0, 2.0, 1.5, 3.0])) == 2.0
    assert first_decrease(np.array([0, 1]), np.array([1.0, 1.0])) is None
    assert relative_wall_time(np.array([105.0, math.nan, 100.0])).tolist()[::2] == [5.0, 0.0]
    assert relative_wall_time(np.array([105.0]), start=100.0).tolist() == [5.0]
    assert np.isnan(relative_wall_time(np.array([math.nan, math.nan]))).all()


def test_rule_defaults_are_nearest_and_strict_start_only_when_vectorised():
    xs, ys = np.array([2.0, 4.0]), np.array([20.0, 40.0])
    s = slice_sorted(xs, ys, 1.0)  # before the start: the single slice takes the nearest point
    assert (s.method, s.value) == ("nearest", 20.0)
    assert slice_sorted(xs, ys, 3.0).value == 20.0  # a tie goes to the earlier point
    got = values_at(xs, ys, [1.0, 3.0, 4.0])  # the vectorised one is strict at the start
    assert math.isnan(got[0]) and got[1:].tolist() == [20.0, 40.0]
    assert values_at(xs, ys, [4.0]).tolist() == [40.0]  # one target, on the last point
