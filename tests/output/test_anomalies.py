"""Spikes calibrated on real noise: next to nothing flagged on healthy real runs (the Lightning and
SummaryWriter TensorBoard logs, W&B and MLflow runs in ../shared/realdata, plus noisy runs written
here), while a planted 25× spike is always caught, once, with the rule that fired and where."""

from __future__ import annotations

import numpy as np
import pytest

from rundiff_core.cli import main
from rundiff_core.engines.stats import SPIKE_RULE, spike_episodes
from rundiff_core.resolve import load_runs

from .writers import noisy_loss

HEALTHY = ("tb-lightning-fractaldb", "tb-tensorboard-reducer/tests/runs/strict",
           "tb-tensorboard-reducer/tests/runs/lax", "tb-tensorboard-reducer/tests/runs/duplicate_steps",
           "mlflow-aiops-mnist", "wandb-verysimpletransformer/wandb", "metrics-lightning-csv-toadgan")


def _healthy_series(realdata):
    out = []
    for folder in HEALTHY:
        for run in load_runs(str(realdata / folder)):
            for key in run.metric_keys():
                s, v, _ = run.series(key)
                if len(v) >= 20 and "grad" not in key:  # grad norms are heavy-tailed by nature
                    out.append((f"{folder}:{run.name}:{key}", s, v))
    return out


def test_healthy_real_losses_flag_next_to_nothing(realdata):
    series = _healthy_series(realdata)
    assert len(series) >= 25  # Lightning val/train losses, SummaryWriter runs, W&B and MLflow runs
    points = sum(len(v) for _, _, v in series)
    flagged = {name: spike_episodes(s, v) for name, s, v in series}
    total = sum(len(e) for e in flagged.values())
    assert total <= 3 and total / points < 0.001, {k: len(e) for k, e in flagged.items() if e}
    lightning = [n for n in flagged if n.startswith("tb-lightning-fractaldb")]
    assert len(lightning) >= 3 and all(flagged[n] == [] for n in lightning)


def test_a_planted_25x_spike_is_always_caught_once(realdata):
    rng = np.random.default_rng(0)
    for name, s, v in _healthy_series(realdata):
        if not np.nanmin(v) > 0:  # "25×" is a height above a positive level
            continue
        for _ in range(3):
            i = int(rng.integers(len(v) // 10, len(v) - 1))
            planted = v.astype(float).copy()
            planted[i] = 25 * np.nanmedian(v[max(0, i - 5):i + 6])
            hits = [e for e in spike_episodes(s, planted) if e.first <= s[i] <= e.last]
            assert len(hits) == 1 and hits[0].step == s[i], (name, i)


@pytest.mark.parametrize("heavy", [False, True])
def test_written_noisy_runs(heavy):
    steps = np.arange(2000, dtype=float)
    for seed in range(5):
        v = np.array(noisy_loss(2000, seed, noise=0.05, heavy=heavy))
        assert len(spike_episodes(steps, v)) <= 1  # t₃ noise may earn one honest flag
        v[1234] *= 25
        e = [x for x in spike_episodes(steps, v) if x.step == 1234]
        assert len(e) == 1 and e[0].value / e[0].level > 20 and e[0].rule == SPIKE_RULE


def test_an_episode_is_reported_once_at_its_peak():
    steps = np.arange(300, dtype=float)
    v = np.array(noisy_loss(300, 1))
    v[100:103] = [8.0, 12.0, 9.0]  # three bad points in a row: one episode
    (e,) = spike_episodes(steps, v)
    assert (e.step, e.first, e.last, e.points) == (101, 100, 102, 3)


def test_rank_finds_the_planted_spike_and_lists_the_empty_run(sweep, capsys):
    assert main(["rank", str(sweep)]) == 0
    out = capsys.readouterr().out
    spikes = [line for line in out.splitlines() if " — spike" in line]
    assert len(spikes) == 1 and "lr-0.2/seed-0" in spikes[0] and "at step 150" in spikes[0]
    assert "no metrics: logged no scalar at all" in out and "lr-0.4/seed-0" in out
    assert "- rule (spike): " + SPIKE_RULE in out
    # the heavy-tailed seeds (seed-2 of every config) are not spikes
    assert not any("seed-2" in line for line in spikes)
