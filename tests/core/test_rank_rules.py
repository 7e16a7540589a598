"""The many-run rules with boundaries that used to move without a test noticing: the spike
threshold, a burst reported from its first step, the Holm decision at exactly α, rank's common
step per metric with runs that stopped early listed as not reached."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rundiff_core.engines import rank as rank_engine
from rundiff_core.engines.rank import ALPHA, rank_metric, run_rank, top_excluded
from rundiff_core.engines.runset import Group, anomalies, reach_step
from rundiff_core.engines.stats import SPIKE_THRESHOLD, robust_spikes, spike_episodes
from rundiff_core.model import Run, make_history


def _flat_with_bump(height_sigma: float, n: int = 100, at: int = 50) -> np.ndarray:
    """-10 everywhere (no log scale, no ratio test: the level is negative) with one point
    `height_sigma` robust σ above it; the σ floor there is |level| × 1e-3 = 0.01."""
    v = np.full(n, -10.0)
    v[at] += height_sigma * 0.01
    return v


def test_rule_spike_threshold_flags_8_5_sigma_and_not_7_5():
    assert SPIKE_THRESHOLD == 8.0
    steps = np.arange(100.0)
    (spike,) = spike_episodes(steps, _flat_with_bump(8.5))
    assert spike.step == 50 and spike.score == pytest.approx(8.5)
    assert spike_episodes(steps, _flat_with_bump(7.5)) == []
    # the boundary itself moves nothing: just above the threshold flags, just below does not
    assert spike_episodes(steps, _flat_with_bump(8.05)) and not spike_episodes(steps, _flat_with_bump(7.95))


def test_rule_a_burst_is_reported_from_its_first_step():
    v = np.full(100, -10.0)
    v[70] += 0.5   # 50 σ: the burst begins
    v[71] += 0.9   # 90 σ: its peak
    steps = np.arange(100.0) * 10
    (e,) = spike_episodes(steps, v)
    assert (e.first, e.step, e.last, e.points) == (700, 710, 710, 2)
    assert robust_spikes(steps, v)[0][0] == 700  # diff and watch report where it began
    run = _run("grad-burst", {"loss": (steps, v)})
    (a,) = [x for x in anomalies([run], ["loss"]) if x.kind == "spike"]
    assert a.step == 700 and "from step 700" in a.detail and "peak" in a.detail


def _run(name: str, series: dict[str, tuple], status: str = "finished") -> Run:
    steps, keys, values = [], [], []
    for k, (s, v) in series.items():
        steps += list(s)
        keys += [k] * len(s)
        values += list(v)
    h = make_history(steps, keys, values)
    return Run(address=f"memory:{name}", name=name, run_id=name, adapter="memory", status=status,
               loader=lambda keys=None, h=h: h if keys is None else h[h["key"].isin(keys)])


def test_rule_holm_keeps_a_group_at_exactly_alpha_in_the_top_group(monkeypatch):
    assert ALPHA == 0.05
    assert top_excluded(0.0499) and not top_excluded(ALPHA) and not top_excluded(0.0501)
    groups = [Group(f"g{i}", [_run(f"g{i}-s{s}", {"acc": ([0, 1], [0.5 + i / 10 + s / 100] * 2)})
                              for s in range(3)]) for i in range(2)]
    for p, in_top in ((ALPHA, True), (ALPHA * 0.99, False)):
        monkeypatch.setattr(rank_engine, "welch_p", lambda a, b, p=p: p)
        ranking = rank_metric(groups, "acc")
        assert ranking.best == "g1" and ("g0" in ranking.top_group) is in_top, p


def test_rule_reach_step_ignores_runs_that_stopped_early_but_not_running_ones():
    # 0.8 × the median last step is the bar for runs that stopped
    assert reach_step([100, 100, 79]) == 100 and reach_step([100, 100, 81]) == 81
    assert reach_step([100, 100, 11], [False, False, True]) == 11  # still training: pulls back
    assert math.isnan(reach_step([math.nan]))


def test_rank_lists_a_run_that_stopped_logging_a_metric_as_not_reached():
    """The Lightning case: one run's val_acc ends at 1718 while the others reach 2417 — that run
    is 'not reached (last at step 1718)', never ranked at its own last point."""
    grid = np.arange(0, 2418, 1)
    runs = [_run(f"version_{i}", {"val_acc": (grid, 0.5 + grid / 1e4 + i / 100)}) for i in range(3)]
    runs.append(_run("version_3", {"val_acc": (grid[:1719], 0.9 + grid[:1719] * 0)}))
    result = run_rank(runs, metrics=["val_acc"], group_seeds=False)
    (m,) = result.metrics
    assert m.step == 2417 and [n.run for n in m.not_reached] == ["version_3"]
    assert m.not_reached[0].last_step == 1718
    assert all(p.step_used == 2417 for s in m.order for p in s.points)
    assert {s.label for s in m.order} == {"version_0", "version_1", "version_2"}
    # named beats inferred: --step 1700 ranks all four there
    (m,) = run_rank(runs, metrics=["val_acc"], group_seeds=False, at=1700).metrics
    assert m.step == 1700 and not m.not_reached and len(m.order) == 4
