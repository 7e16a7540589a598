"""Statistics every engine shares: headline numbers, seeds, spikes, intervals, corrections."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .options import STATISTICS  # noqa: F401  (re-exported; defined without numpy for the CLI)


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


def headline(steps: Sequence[float], values: Sequence[float], goal: str | None) -> Headline | None:
    """Headline numbers of a series in logged order; NaN/inf are ignored for best and mean. With
    no known direction (`goal` None) there is no best: NaN at step NaN."""
    s = np.asarray(steps, dtype="float64")
    v = np.asarray(values, dtype="float64")
    if len(v) == 0:
        return None
    finite = np.isfinite(v)
    if finite.any() and goal in ("min", "max"):
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


def flat_fit(x: np.ndarray, y: np.ndarray, scale: float) -> tuple[bool, float, float]:
    """(no real movement, slope, residual σ) of y over x by least squares: flat when the fitted
    change over the span is within 2σ of the residuals (or a 1e-3 share of `scale`)."""
    if len(x) < 2 or np.ptp(x) == 0:
        return True, 0.0, 0.0
    slope, intercept = np.polyfit(x, y, 1)
    resid = y - (slope * x + intercept)
    noise = float(np.std(resid, ddof=1)) if len(x) > 2 else 0.0
    # the rounding error scales with the numbers y came from (a gap's, with the two values')
    size = max(float(np.max(np.abs(y))), abs(scale))
    span = float(np.ptp(x))
    slope = rounding_zero(float(slope), size / span)
    noise = rounding_zero(noise, size)
    change = abs(slope) * span
    return change <= max(2.0 * noise, 1e-3 * scale, 1e-12), slope, noise


#: A result within this share of the size of the numbers it came from is the arithmetic's
#: rounding, not a measurement: ~4,500 ulps, far above what a fit or a mean of a few thousand
#: values accumulates, far below any movement a metric shows.
ROUNDING_SHARE = 1e-12


def rounding_zero(value: float, size: float) -> float:
    """`value` (a slope, σ or difference computed from numbers of magnitude `size`), or exactly 0
    when it is rounding noise around zero: a flat line's slope is 0, not 6e-19 in one process and
    2e-18 in another (BLAS kernels round differently), and a σ of equal values is 0, not 1.2e-16."""
    if math.isfinite(value) and abs(value) <= ROUNDING_SHARE * abs(size):
        return 0.0
    return value


def sample_std(values: Sequence[float]) -> float:
    """Sample standard deviation (ddof=1); NaN for fewer than two values."""
    v = np.asarray([x for x in values if np.isfinite(x)], dtype="float64")
    if len(v) < 2:
        return math.nan
    return rounding_zero(float(v.std(ddof=1)), float(np.max(np.abs(v))))


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


SPIKE_WINDOW = 11  # points in the centred rolling median (the local level)
SPIKE_THRESHOLD = 8.0  # robust σ a point must stand above the local level
SPIKE_RATIO = 4.0  # and, for a positive series, times the local level it must reach
SPIKE_SEPARATION = 5  # points: flags closer than this are one episode
SPIKE_RULE_VERSION = 1  # bump when spike_episodes changes: fleet packs store its results
SPIKE_RULE = (f"value > {SPIKE_THRESHOLD:g} robust σ above the rolling median of "
              f"{SPIKE_WINDOW} points (σ of log values for a positive series, which must also "
              f"exceed {SPIKE_RATIO:g}× that median)")


@dataclass
class Spike:
    """One spike episode: its peak point, how far out it stood, and the points it spans."""

    step: float  # the peak
    value: float
    score: float  # (value − local median) / robust σ; inf for a non-finite value
    level: float  # the local median at the peak
    first: float  # first and last flagged step of the episode
    last: float
    points: int
    rule: str = SPIKE_RULE


def _nanmedian_rows(m: np.ndarray) -> np.ndarray:
    """`np.nanmedian(m, axis=1)` for a few rows, by sorting (NaN sorts last): the same values
    without nanmedian's masked-array path, which costs ~0.25 ms per call on small inputs."""
    if not len(m):
        return np.empty(0)
    d = np.sort(m, axis=1)
    k = np.sum(~np.isnan(d), axis=1)
    lo = np.take_along_axis(d, np.maximum((k - 1) // 2, 0)[:, None], axis=1)[:, 0]
    hi = np.take_along_axis(d, np.maximum(k // 2, 0)[:, None], axis=1)[:, 0]
    with np.errstate(invalid="ignore"):
        return np.where(k > 0, (lo + hi) / 2, np.nan)


def _rolling_median(v: np.ndarray, w: int, chunk: int = 65536) -> np.ndarray:
    """Centred rolling median ignoring NaN (edges use the points there are); bounded memory.

    Windows holding no NaN (nearly all) take the middle element of a partition — the same value
    `nanmedian` gives for an odd window, 10× faster, which matters when a fleet's every loss curve
    is scanned; windows with NaN (the edges, gaps) go through `nanmedian`."""
    import warnings

    from numpy.lib.stride_tricks import sliding_window_view

    h = w // 2
    pad = np.concatenate([np.full(h, np.nan), v, np.full(h, np.nan)])
    nans = np.concatenate([[0], np.cumsum(np.isnan(pad))])
    nan_in = nans[w:] - nans[:-w]  # NaNs in the window centred on each point
    out = np.empty(len(v))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for a in range(0, len(v), chunk):
            b = min(a + chunk, len(v))
            view = sliding_window_view(pad[a:b + 2 * h], w)
            part = out[a:b]
            clean = nan_in[a:b] == 0
            if w % 2:
                part[clean] = np.partition(view[clean], h, axis=1)[:, h]
            else:
                part[clean] = np.median(view[clean], axis=1)
            if not clean.all():
                part[~clean] = _nanmedian_rows(view[~clean])
    return out


def _block_spread(r: np.ndarray, block: int) -> np.ndarray:
    """Robust σ (MAD × 1.4826) of |residuals| per block of points, repeated to every point."""
    import warnings

    n = len(r)
    nb = -(-n // block)
    padded = np.full(nb * block, np.nan)
    padded[:n] = r
    blocks = np.abs(padded.reshape(nb, block))
    clean = ~np.isnan(blocks).any(axis=1)
    mad = np.empty(nb)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mad[clean] = np.median(blocks[clean], axis=1)  # the same value, without nanmedian's masks
        if not clean.all():
            mad[~clean] = _nanmedian_rows(blocks[~clean])
    return np.repeat(mad * 1.4826, block)[:n]


def spike_episodes(steps: Sequence[float], values: Sequence[float], *,
                   window: int = SPIKE_WINDOW, threshold: float = SPIKE_THRESHOLD,
                   ratio: float = SPIKE_RATIO, separation: int = SPIKE_SEPARATION) -> list[Spike]:
    """Upward spikes far outside the run's local noise, one per episode (non-finite points too).

    The local level is a centred rolling median of `window` points; the noise is the robust σ of
    the residuals around it (per block of 4×window points, floored at half the whole series' σ, so
    a noisy stretch raises its own bar), measured on log values when every value is positive
    (losses vary by factors). A point is flagged when it stands more than `threshold` robust σ above
    the level and, where the level is positive, more than `ratio` times it. Flags
    fewer than `separation` points apart are one episode, reported at its peak. Noisy but healthy
    curves flag next to nothing; a point 25× the level is always caught.
    """
    s = np.asarray(steps, dtype="float64")
    v = np.asarray(values, dtype="float64")
    n = len(v)
    if n < 10:
        return []
    finite = np.where(np.isfinite(v), v, np.nan)
    # A positive series (losses, perplexities) varies by factors: its noise is measured in logs.
    positive = bool(np.isfinite(finite).any()) and bool(np.nanmin(finite) > 0)
    with np.errstate(all="ignore"):
        x = np.log(finite) if positive else finite
    w = int(max(5, min(window, n // 4))) | 1
    level_x = _rolling_median(x, w)
    resid = x - level_x
    with np.errstate(all="ignore"):
        spread = np.abs(resid)
        whole = (float(np.median(spread) if not np.isnan(spread).any() else np.nanmedian(spread))
                 * 1.4826 if np.isfinite(resid).any() else 0.0)
        local = _block_spread(resid, 4 * w)
        rel = 1e-3 if positive else np.maximum(np.abs(level_x) * 1e-3, 1e-12)
        floor = np.maximum(0.5 * whole, rel)
        sigma = np.maximum(np.nan_to_num(local, nan=0.0), floor)
        score = resid / sigma
        level = np.exp(level_x) if positive else level_x
        flagged = score > threshold
        flagged &= ~(level > 0) | (finite > ratio * level)
    flagged |= ~np.isfinite(v)
    out: list[Spike] = []
    idx = np.flatnonzero(flagged)
    start = 0
    for k in range(1, len(idx) + 1):
        if k == len(idx) or idx[k] - idx[k - 1] >= separation:
            ep = idx[start:k]
            sc = np.where(np.isfinite(v[ep]), score[ep], np.inf)
            p = int(ep[int(np.argmax(sc))])
            out.append(Spike(float(s[p]), float(v[p]), float(sc.max()), float(level[p]),
                             float(s[ep[0]]), float(s[ep[-1]]), len(ep)))
            start = k
    return out


def robust_spikes(
    steps: Sequence[float], values: Sequence[float], window: int = SPIKE_WINDOW,
    threshold: float = SPIKE_THRESHOLD,
) -> list[tuple[float, float, float]]:
    """(first step, peak value, peak score) of each spike episode: a burst is reported from the
    step it began; see `spike_episodes` for the rule."""
    return [(e.first, e.value, e.score)
            for e in spike_episodes(steps, values, window=window, threshold=threshold)]


def bootstrap_ci(
    values: Sequence[float], level: float = 0.95, n_boot: int = 2000, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean (deterministic: fixed RNG seed)."""
    v = np.asarray([x for x in values if np.isfinite(x)], dtype="float64")
    if len(v) < 2:
        return (math.nan, math.nan)
    means = v[_resamples(len(v), n_boot, seed)].mean(axis=1)
    lo, hi = _quantiles(means, ((1 - level) / 2, 1 - (1 - level) / 2))
    return lo, hi


@lru_cache(maxsize=64)
def _resamples(n: int, n_boot: int, seed: int) -> np.ndarray:
    """The bootstrap's resample indices: they depend on (n, n_boot, seed) only, and a fleet's
    arms mostly share one n, so they are drawn once per size (read-only)."""
    idx = np.random.default_rng(seed).integers(0, n, size=(n_boot, n))
    idx.flags.writeable = False
    return idx


def _quantiles(a: np.ndarray, qs: tuple[float, ...]) -> list[float]:
    """`np.quantile(a, qs)` (method "linear") bit for bit, without its dispatch cost: the same
    index arithmetic and the same two-sided lerp numpy uses (tests/engines compare both)."""
    n = len(a)
    at = [(n - 1) * q for q in qs]
    below = [min(max(int(math.floor(x)), 0), n - 1) for x in at]
    part = np.partition(a, sorted({i for b in below for i in (b, min(b + 1, n - 1))}))
    out = []
    for x, b in zip(at, below, strict=True):
        lo, hi = float(part[b]), float(part[min(b + 1, n - 1)])
        t = x - b
        diff = hi - lo
        out.append(hi - diff * (1 - t) if t >= 0.5 else lo + diff * t)
    return out


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
