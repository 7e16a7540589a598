"""The statistics rules every verdict stands on, at their edges, with hand-computed numbers.

- headline: final = last logged point, best = min (or max) over finite points with its step,
  last-10% mean over the last ceil(10% of n) points (at least one) — from which step.
- sample σ: ddof=1 over finite values, NaN below two.
- pooled σ: sqrt(((nA−1)sA² + (nB−1)sB²)/(nA+nB−2)); an arm with one seed contributes no
  variance but its degree of freedom is not counted; NaN when neither arm has two seeds.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from rundiff_core.engines.stats import headline, pooled_std, sample_std


def test_rule_headline_without_a_direction_has_no_best():
    h = headline([0, 1, 2], [3.0, 1.0, 2.0], None)
    assert math.isnan(h.best) and math.isnan(h.best_step) and h.final == 2.0


def test_rule_headline_of_a_short_series_uses_its_last_point_as_the_tail():
    """5 points: 10% of 5 rounds up to 1 point — the tail is the final point alone."""
    h = headline([0, 1, 2, 3, 4], [4.0, 1.0, 3.0, 2.0, 2.5], "min")
    assert (h.n_points, h.final, h.final_step) == (5, 2.5, 4.0)
    assert (h.best, h.best_step) == (1.0, 1.0)
    assert (h.last10_mean, h.last10_from_step) == (2.5, 4.0)
    assert (h.stat("final"), h.stat("best"), h.stat("last10_mean")) == (2.5, 1.0, 2.5)


def test_rule_headline_tail_is_ceil_ten_percent_and_best_follows_the_goal():
    """25 points: ceil(2.5) = 3 tail points (steps 22–24); the max goal picks the largest."""
    values = [float(i % 7) for i in range(25)]  # 0..6 repeating; last three: 1, 2, 3
    h = headline(list(range(25)), values, "max")
    assert (h.best, h.best_step) == (6.0, 6.0)  # the first 6, at step 6
    assert (h.last10_mean, h.last10_from_step) == (2.0, 22.0)  # (1 + 2 + 3) / 3
    h = headline(list(range(25)), values, "min")
    assert (h.best, h.best_step) == (0.0, 0.0)


def test_rule_headline_of_one_point_and_of_none():
    h = headline([7], [0.25], "min")
    assert (h.n_points, h.final, h.best, h.best_step, h.last10_mean) == (1, 0.25, 0.25, 7.0, 0.25)
    assert headline([], [], "min") is None


def test_rule_headline_all_nan_has_no_best_but_keeps_its_final():
    h = headline([0, 1], [math.nan, math.nan], "min")
    assert math.isnan(h.best) and math.isnan(h.best_step)
    assert math.isnan(h.final) and h.final_step == 1.0 and math.isnan(h.last10_mean)


def test_rule_sample_std_needs_two_finite_values():
    assert sample_std([1.0, 3.0]) == math.sqrt(2.0)  # deviations ±1, sum 2, / (2 − 1)
    assert math.isnan(sample_std([1.0])) and math.isnan(sample_std([1.0, math.nan]))


def test_rule_pooled_std_at_small_n():
    """By hand: s² of [1, 2] = 0.5, of [1, 2, 3] = 1.0."""
    assert pooled_std([1.0, 2.0], [3.0]) == pytest.approx(math.sqrt((1 * 0.5 + 0) / 1))  # 0.7071
    assert pooled_std([3.0], [1.0, 2.0]) == pytest.approx(math.sqrt(0.5))
    assert pooled_std([5.0], [1.0, 2.0, 3.0]) == pytest.approx(math.sqrt((0 + 2 * 1.0) / 2))  # 1.0
    assert pooled_std([1.0, 2.0, 3.0], [5.0]) == pytest.approx(1.0)
    assert pooled_std([1.0, 2.0], [1.0, 2.0, 3.0]) == pytest.approx(math.sqrt((0.5 + 2.0) / 3))
    assert math.isnan(pooled_std([1.0, 2.0], []))  # two samples in all: no degree of freedom left
    assert math.isnan(pooled_std([1.0], [2.0]))


# -- rounding noise is zero -----------------------------------------------------------------------
def test_a_flat_lines_slope_and_residual_are_exactly_zero():
    """A fit of equal values is flat with slope 0 — not ±1e-18 that another BLAS kernel rounds
    differently — whatever the level and the x span."""
    from rundiff_core.engines.stats import flat_fit

    for level in (0.1, 2.89, 1234.5678):
        for x in (np.arange(5.0), np.arange(100.0, 100_000.0, 997.0)):
            flat, slope, noise = flat_fit(x, np.full(len(x), level), scale=level)
            assert flat and slope == 0.0 and noise == 0.0, (level, slope, noise)


def test_a_real_small_slope_is_kept():
    """The snap is rounding's size, not a threshold on movement: a slope of 1e-9 per step on
    values near 1 moves the line by 1e-6 over 1,000 steps and is reported as it is."""
    from rundiff_core.engines.stats import flat_fit

    x = np.arange(0.0, 1000.0)
    _, slope, _ = flat_fit(x, 1.0 + 1e-9 * x, scale=1.0)
    assert slope == pytest.approx(1e-9, rel=1e-3)


def test_sigma_of_equal_values_is_exactly_zero():
    from rundiff_core.engines.stats import sample_std

    for v, n in ((0.7, 3), (1.1, 6), (1 / 3, 10), (0.123456789, 17), (2.89, 10)):
        assert np.std([v] * n, ddof=1) != 0.0 or v == 2.89  # what numpy alone says: 1.4e-16, …
        assert sample_std([v] * n) == 0.0
    assert sample_std([1.0, 1.0 + 1e-9]) == pytest.approx(7.07e-10, rel=1e-2)
