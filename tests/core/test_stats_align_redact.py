"""Statistics, alignment and redaction: the numbers reports stand on."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rundiff_core.engines.align import slice_at
from rundiff_core.engines.stats import (
    bootstrap_ci,
    headline,
    holm,
    pooled_std,
    robust_spikes,
    welch_p,
)
from rundiff_core.redact import REDACTED, redact


def test_headline_final_best_last10():
    steps = np.arange(100)
    vals = 10 - steps * 0.1
    vals[50] = -5  # best
    h = headline(steps, vals, "min")
    assert (h.final, h.final_step) == (pytest.approx(0.1), 99)
    assert (h.best, h.best_step) == (-5, 50)
    assert h.last10_mean == pytest.approx(np.mean(vals[-10:]))
    assert headline(steps, vals, "max").best == 10


def test_headline_ignores_nan_for_best_but_final_is_last():
    h = headline([0, 1, 2], [1.0, 0.5, math.nan], "min")
    assert math.isnan(h.final) and h.best == 0.5


def test_pooled_std_formula():
    a, b = [1.0, 2.0, 3.0], [2.0, 4.0, 6.0, 8.0]
    sa, sb = np.std(a, ddof=1), np.std(b, ddof=1)
    expected = math.sqrt((2 * sa**2 + 3 * sb**2) / 5)
    assert pooled_std(a, b) == pytest.approx(expected)
    assert math.isnan(pooled_std([1.0], [2.0]))


def test_goal_from_name():
    from rundiff_core.engines.directions import vocabulary

    goal = lambda name: vocabulary(name).goal  # noqa: E731
    assert goal("train/loss") == "min" and goal("eval/accuracy") == "max"
    assert goal("val_ppl") == "min" and goal("reward_mean") == "max"


def test_spikes_are_robust_and_flag_nonfinite():
    v = np.ones(60) + np.sin(np.arange(60)) * 0.01
    v[30] = 10
    v[45] = math.inf
    steps = [s for s, _, _ in robust_spikes(np.arange(60), v)]
    assert steps == [30.0, 45.0]


def test_welch_and_holm_and_bootstrap():
    from scipy import stats as sps

    a, b = [1.0, 2.0, 3.5, 2.2], [3.0, 4.5, 5.0, 4.2]
    assert welch_p(a, b) == pytest.approx(sps.ttest_ind(a, b, equal_var=False).pvalue, rel=1e-9)
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    lo, hi = bootstrap_ci([1.0, 2.0, 3.0, 4.0])
    assert lo < 2.5 < hi and bootstrap_ci([1.0, 2.0, 3.0, 4.0]) == (lo, hi)


def test_slice_nearest_interpolate_not_reached():
    x, y = [0, 10, 20, 30], [0.0, 1.0, 2.0, 3.0]
    s = slice_at(x, y, 11)
    assert (s.value, s.x_used, s.method) == (1.0, 10.0, "nearest")
    s = slice_at(x, y, 15, "interpolate")
    assert (s.value, s.method, s.bracket) == (1.5, "interpolate", (10.0, 20.0))
    assert slice_at(x, y, 20).method == "exact"
    s = slice_at(x, y, 31)
    assert s.method == "not reached" and math.isnan(s.value) and s.x_used == 30
    assert slice_at(x, y, 15).x_used == 10  # tie goes to the earlier step


def test_slice_duplicate_steps_take_last_logged():
    s = slice_at([0, 5, 5, 10], [0.0, 1.0, 2.0, 3.0], 5)
    assert s.value == 2.0


def test_redaction_of_keys_urls_and_inline():
    data = {"wandb": {"api_key": "abc"}, "max_tokens": 10, "db_url": "postgres://u:pw@h/db",
            "cmd": "train --api_key=xyz", "tokenizer": "gpt2", "HF_TOKEN": "hf_x", "list": [{"secret": 1}]}
    out = redact(data)
    assert out["wandb"]["api_key"] == REDACTED and out["HF_TOKEN"] == REDACTED
    assert out["max_tokens"] == 10 and out["tokenizer"] == "gpt2"
    assert out["db_url"] == f"postgres://u:{REDACTED}@h/db"
    assert "xyz" not in out["cmd"] and out["list"][0]["secret"] == REDACTED


def test_the_cheap_precheck_never_skips_text_a_full_scrub_would_change():
    """redact_text skips strings without any secret marker; that must never hide a secret."""
    import random

    from rundiff_core.redact import _may_hold_secret, _scrub

    secrets = ["sk-proj-abcdefghijklmnopqrstuv", "ghp_" + "a" * 24, "xoxb-1234567890ab",
               "AKIA" + "B" * 16, "AIza" + "c" * 32, "hf_" + "D" * 24,
               "eyJhbGciOiJIUzI1.eyJzdWIiOiIxMjM0.sig", "Bearer abcdefgh12345678",
               "https://user:pw@host/x", "API_KEY=abc", "password: hunter2", '"token": "t0k"',
               "HF_TOKEN = abc", "export MY_SECRET=1", "eyJhcGlfYWRkcmVzcyI6Imh0dHBzOi8vYXBwLm5lcHR1bmUuYWkiLCJhcGlfdXJsIjoiaHR0cHM6"]
    rng = random.Random(7)
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-/.=:@ \"'"
    corpus = list(secrets)
    for _ in range(3000):
        noise = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        corpus.append(noise)
        corpus.append(noise + rng.choice(secrets) + noise[::-1])
    for text in corpus:
        if _scrub(text) != text:
            assert _may_hold_secret(text), text
    assert all(redact(s) != s for s in secrets)
    assert redact({"optimizer": "adamw", "tags": ["x", "y"]}) == {"optimizer": "adamw",
                                                                  "tags": ["x", "y"]}
