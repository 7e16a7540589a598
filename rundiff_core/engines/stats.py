"""Statistics every engine shares: headline numbers, seeds, spikes, intervals, corrections."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

_MAX_WORDS = re.compile(
    r"acc|accuracy|f1|auc|auroc|score|reward|return|bleu|rouge|precision|recall|map\b|iou|"
    r"success|pass|win|top[-_]?\d|hit|ndcg|mrr|r2|exact|em\b|correct|"
    r"epret|(?:^|[_/.-])ret(?:$|[_/.-])|(?:^|[_/.-])rew(?:$|[_/.-])", re.I  # RL: Spinning Up's AverageEpRet, SB3's ep_rew_mean
)
_MIN_WORDS = re.compile(
    r"loss|perplexity|ppl|error|err\b|wer|cer|mse|mae|rmse|nll|bpb|bpc|regret|distance|fid\b", re.I
)

STATISTICS = ("last10_mean", "final", "best")


def goal_is_known(metric: str) -> bool:
    """True when the name says its direction (loss-like or accuracy-like); else goal_for guesses."""
    return bool(_MIN_WORDS.search(metric) or _MAX_WORDS.search(metric))


def goal_for(metric: str) -> str:
    """'min' for loss-like names, 'max' for accuracy-like ones; 'min' when unsure (override)."""
    if _MIN_WORDS.search(metric):
        return "min"
    if _MAX_WORDS.search(metric):
        return "max"
    return "min"


@dataclass(frozen=True)
class Headline:
    """Final, best (with step) and last-10%-mean of one metric series, each with its step(s)."""

    n_points: int
    final: float
    final_step: float
    best: float
    best_step: float
    last10_mean: float
    last10_from_step: float

    def stat(self, name: str) -> float:
        return {"final": self.final, "best": self.best, "last10_mean": self.last10_mean}[name]


def headline(steps: Sequence[float], values: Sequence[float], goal: str) -> Headline | None:
    """Headline numbers of a series in logged order; NaN/inf are ignored for best and mean."""
    s = np.asarray(steps, dtype="float64")
    v = np.asarray(values, dtype="float64")
    if len(v) == 0:
        return None
    finite = np.isfinite(v)
    if finite.any():
        idx = np.flatnonzero(finite)
        pick = idx[np.argmin(v[idx])] if goal == "min" else idx[np.argmax(v[idx])]
        best, best_step = float(v[pick]), float(s[pick])
    else:
        best, best_step = math.nan, math.nan
    k = max(1, math.ceil(0.1 * len(v)))
    tail = v[-k:]
    tail_finite = tail[np.isfinite(tail)]
    return Headline(
        n_points=len(v),
        final=float(v[-1]),
        final_step=float(s[-1]),
        best=best,
        best_step=best_step,
        last10_mean=float(tail_finite.mean()) if len(tail_finite) else math.nan,
        last10_from_step=float(s[-k]),
    )


def sample_std(values: Sequence[float]) -> float:
    """Sample standard deviation (ddof=1); NaN for fewer than two values."""
    v = np.asarray([x for x in values if np.isfinite(x)], dtype="float64")
    return float(v.std(ddof=1)) if len(v) >= 2 else math.nan


def pooled_std(a: Sequence[float], b: Sequence[float]) -> float:
    """sqrt(((nA−1)sA² + (nB−1)sB²)/(nA+nB−2)); NaN when neither arm has two samples."""
    na, nb = len(a), len(b)
    if na + nb - 2 <= 0:
        return math.nan
    sa = sample_std(a) if na >= 2 else 0.0
    sb = sample_std(b) if nb >= 2 else 0.0
    if na < 2 and nb < 2:
        return math.nan
    return math.sqrt(((na - 1) * sa**2 + (nb - 1) * sb**2) / (na + nb - 2))


def _block_stats(blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-row median, MAD×1.4826 and finite count of a 2-D array (NaN = missing)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        has_nan = np.isnan(blocks).any()
        med = np.nanmedian(blocks, axis=1) if has_nan else np.median(blocks, axis=1)
        dev = np.abs(blocks - med[:, None])
        mad = (np.nanmedian(dev, axis=1) if has_nan else np.median(dev, axis=1)) * 1.4826
    return med, mad, np.sum(np.isfinite(blocks), axis=1)


def robust_spikes(
    steps: Sequence[float], values: Sequence[float], window: int = 25, threshold: float = 6.0
) -> list[tuple[float, float, float]]:
    """Points far above the robust level of the points before them: (step, value, score).

    The series is cut into blocks of b = clamp(n/6, 8, `window`) points; each point is scored
    against the median and MAD (×1.4826, a robust σ) of the two blocks before its own (one for the
    second block), so the reference holds b to 2b earlier points and never the point itself. A
    point is a spike when (value − median) / robust σ exceeds `threshold`; non-finite values are
    spikes too. Fully vectorised: a million points take milliseconds.
    """
    s = np.asarray(steps, dtype="float64")
    v = np.asarray(values, dtype="float64")
    out: list[tuple[float, float, float]] = []
    n = len(v)
    if n < 10:
        return out
    b = int(max(8, min(window, n // 6)))
    nblocks = -(-n // b)
    padded = np.full(nblocks * b, np.nan)
    padded[:n] = np.where(np.isfinite(v), v, np.nan)
    blocks = padded.reshape(nblocks, b)
    med1, mad1, cnt1 = _block_stats(blocks[:1])
    if nblocks > 2:
        med2, mad2, cnt2 = _block_stats(np.concatenate([blocks[:-2], blocks[1:-1]], axis=1))
    else:
        med2 = mad2 = cnt2 = np.array([])
    ref_med = np.concatenate([[np.nan], med1, med2])[:nblocks]
    ref_mad = np.concatenate([[np.nan], mad1, mad2])[:nblocks]
    ref_cnt = np.concatenate([[0], cnt1, cnt2])[:nblocks]
    med, mad = np.repeat(ref_med, b)[:n], np.repeat(ref_mad, b)[:n]
    enough = np.repeat(ref_cnt >= 5, b)[:n]
    with np.errstate(all="ignore"):
        scale = np.where(mad > 0, mad, np.maximum(np.abs(med) * 1e-3, 1e-12))
        score = (v - med) / scale
    flagged = (enough & (score > threshold)) | ~np.isfinite(v)
    for i in np.flatnonzero(flagged):
        out.append((float(s[i]), float(v[i]), float(score[i]) if np.isfinite(score[i]) else math.inf))
    return out


def bootstrap_ci(
    values: Sequence[float], level: float = 0.95, n_boot: int = 2000, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean (deterministic: fixed RNG seed)."""
    v = np.asarray([x for x in values if np.isfinite(x)], dtype="float64")
    if len(v) < 2:
        return (math.nan, math.nan)
    rng = np.random.default_rng(seed)
    means = v[rng.integers(0, len(v), size=(n_boot, len(v)))].mean(axis=1)
    lo, hi = np.quantile(means, [(1 - level) / 2, 1 - (1 - level) / 2])
    return float(lo), float(hi)


def welch_p(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided Welch t-test p-value (normal approx. of t for tiny dof avoided via scipy-free beta)."""
    a = np.asarray([x for x in a if np.isfinite(x)], dtype="float64")
    b = np.asarray([x for x in b if np.isfinite(x)], dtype="float64")
    if len(a) < 2 or len(b) < 2:
        return math.nan
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    if va + vb == 0:
        return 0.0 if a.mean() != b.mean() else 1.0
    t = (a.mean() - b.mean()) / math.sqrt(va + vb)
    dof = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    return _t_two_sided(abs(t), dof)


def _t_two_sided(t: float, dof: float) -> float:
    x = dof / (dof + t * t)
    return _betainc(dof / 2, 0.5, x)


def _betainc(a: float, b: float, x: float) -> float:
    """Regularised incomplete beta I_x(a, b) by continued fraction (Numerical Recipes)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    lbeta = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
    front = math.exp(math.log(x) * a + math.log(1 - x) * b + lbeta)
    if x > (a + 1) / (a + b + 2):
        return 1.0 - _betainc(b, a, 1 - x)
    f, c, d = 1.0, 1.0, 0.0
    for i in range(200):
        m = i // 2
        if i == 0:
            num = 1.0
        elif i % 2 == 0:
            num = (m * (b - m) * x) / ((a + 2 * m - 1) * (a + 2 * m))
        else:
            num = -((a + m) * (a + b + m) * x) / ((a + 2 * m) * (a + 2 * m + 1))
        d = 1.0 + num * d
        d = 1.0 / (d if abs(d) > 1e-30 else 1e-30)
        c = 1.0 + num / c if abs(c) > 1e-30 else 1e-30
        f *= c * d
        if abs(1.0 - c * d) < 1e-12:
            break
    return front * (f - 1.0) / a


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm–Bonferroni adjusted p-values (same order as given; NaN stays NaN)."""
    p = np.asarray(pvalues, dtype="float64")
    order = [i for i in np.argsort(p) if np.isfinite(p[i])]
    m = len(order)
    adjusted = np.full(len(p), np.nan)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        adjusted[i] = running
    return adjusted.tolist()
