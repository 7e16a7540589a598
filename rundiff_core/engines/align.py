"""Slice a series at a target x (usually the student's current step), never at its end.

`nearest` takes the logged point whose x is closest to the target (ties go to the earlier point;
among duplicate x the last logged value wins). `interpolate` draws a straight line between the two
logged points that bracket the target. A target beyond the series' last point is not reached: the
answer says so instead of returning the final value. With `strict_start=True` a target before the
series' first point is "not started" too (a baseline that had not logged an eval yet), instead of
borrowing the first point, which may lie far in the future.

`slice_sorted` / `values_at` work on series already sorted and de-duplicated (`dedupe_last`), so an
engine that slices one series at many targets pays for the sort once. `axis_from_key` and
`relative_wall_time` turn a logged monotone key (epoch, tokens) or wall clock into the x-axis.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .options import ALIGN_MODES  # defined without numpy for the command line


@dataclass(frozen=True)
class Slice:
    """The value of a series at a target x and how it was obtained."""

    target: float
    value: float
    x_used: float  # the logged x actually used (nearest), or the target itself (interpolated/exact)
    method: str  # "exact" | "nearest" | "interpolate" | "not reached" | "empty"
    bracket: tuple[float, float] | None = None
    indices: tuple[int, ...] = ()  # positions in the sorted, de-duplicated series that were used

    @property
    def reached(self) -> bool:
        return self.method in ("exact", "nearest", "interpolate")


def dedupe_last(x: Sequence[float], y: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """Sort by x and keep the last logged value of each duplicated x (stable)."""
    xa = np.asarray(x, dtype="float64")
    ya = np.asarray(y, dtype="float64")
    keep = np.isfinite(xa)
    xa, ya = xa[keep], ya[keep]
    if len(xa) == 0:
        return xa, ya
    order = np.argsort(xa, kind="stable")
    xs, ys = xa[order], ya[order]
    last = np.append(xs[1:] != xs[:-1], True)
    return xs[last], ys[last]


def slice_at(
    x: Sequence[float], y: Sequence[float], target: float, mode: str = "nearest",
    tolerance: float | None = None, *, strict_start: bool = False,
) -> Slice:
    """The value at `target`. Points beyond the series' end are 'not reached'."""
    xs, ys = dedupe_last(x, y)
    return slice_sorted(xs, ys, target, mode, tolerance, strict_start=strict_start)


def slice_sorted(
    xs: np.ndarray, ys: np.ndarray, target: float, mode: str = "nearest",
    tolerance: float | None = None, *, strict_start: bool = False,
) -> Slice:
    """`slice_at` for a series already sorted by x with unique x (see `dedupe_last`)."""
    if mode not in ALIGN_MODES:
        raise ValueError(f"align mode must be one of {ALIGN_MODES}")
    if len(xs) == 0:
        return Slice(target, math.nan, math.nan, "empty")
    tol = tolerance or 0.0
    if target > xs[-1] + tol:
        return Slice(target, math.nan, float(xs[-1]), "not reached", indices=(len(xs) - 1,))
    if strict_start and target < xs[0] - tol:
        return Slice(target, math.nan, float(xs[0]), "not started", indices=(0,))
    i = int(np.searchsorted(xs, target))
    if i < len(xs) and xs[i] == target:
        return Slice(target, float(ys[i]), float(xs[i]), "exact", indices=(i,))
    if mode == "interpolate" and 0 < i < len(xs):
        x0, x1, y0, y1 = xs[i - 1], xs[i], ys[i - 1], ys[i]
        value = y0 + (y1 - y0) * (target - x0) / (x1 - x0)
        return Slice(target, float(value), float(target), "interpolate", (float(x0), float(x1)),
                     indices=(i - 1, i))
    candidates = [j for j in (i - 1, i) if 0 <= j < len(xs)]
    j = min(candidates, key=lambda k: (abs(xs[k] - target), xs[k]))
    return Slice(target, float(ys[j]), float(xs[j]), "nearest", indices=(j,))


def values_at(
    xs: np.ndarray, ys: np.ndarray, targets: Sequence[float] | np.ndarray, mode: str = "nearest",
    *, strict_start: bool = True,
) -> np.ndarray:
    """Vectorised `slice_sorted(...).value` for many targets; NaN where not reached/started."""
    t = np.asarray(targets, dtype="float64")
    out = np.full(len(t), np.nan)
    if len(xs) == 0 or len(t) == 0:
        return out
    inside = t <= xs[-1]
    if strict_start:
        inside &= t >= xs[0]
    if mode == "interpolate":
        out[inside] = np.interp(t[inside], xs, ys)
        return out
    i = np.searchsorted(xs, t[inside])
    lo = np.clip(i - 1, 0, len(xs) - 1)
    hi = np.clip(i, 0, len(xs) - 1)
    pick_lo = np.abs(xs[lo] - t[inside]) <= np.abs(xs[hi] - t[inside])  # ties: the earlier point
    out[inside] = np.where(pick_lo, ys[lo], ys[hi])
    return out


def seed_mean_at(seeds: Sequence[Any], metric: str, series: Mapping[tuple[str, str], Any],
                 xs: np.ndarray, mode: str) -> np.ndarray:
    """The mean over an arm's seeds (runs with an `address`) of their `metric` series — objects
    with `size` and `part(xs) → (x, y)` arrays — read at each x by `mode`; NaN where no seed has
    a value there."""
    stack = []
    for run in seeds:
        ser = series.get((run.address, metric))
        if ser is not None and ser.size:
            part = ser.part(xs)
            stack.append(values_at(part.x, part.y, xs, mode, strict_start=True))
    if not stack:
        return np.full(len(xs), np.nan)
    mat = np.vstack(stack)
    counts = np.sum(np.isfinite(mat), axis=0)
    sums = np.nansum(mat, axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)


def axis_from_key(
    steps: np.ndarray, key_steps: np.ndarray, key_values: np.ndarray
) -> np.ndarray:
    """x for points logged at `steps`, read off a monotone logged key (epoch, tokens) by step.

    The key is taken where it was logged at the same step, and linearly between the steps where
    it was logged otherwise; outside its logged range the x is NaN (unknown, never extrapolated).
    """
    ks, kv = dedupe_last(key_steps, key_values)
    keep = np.isfinite(kv)
    ks, kv = ks[keep], kv[keep]
    if len(ks) == 0:
        return np.full(len(steps), np.nan)
    return np.interp(np.asarray(steps, dtype="float64"), ks, kv, left=np.nan, right=np.nan)


def first_decrease(key_steps: np.ndarray, key_values: np.ndarray) -> float | None:
    """The step at which a supposedly monotone key first goes down (None when it never does)."""
    ks, kv = dedupe_last(key_steps, key_values)
    keep = np.isfinite(kv)
    ks, kv = ks[keep], kv[keep]
    bad = np.flatnonzero(np.diff(kv) < 0)
    return float(ks[bad[0] + 1]) if len(bad) else None


def relative_wall_time(wall_time: np.ndarray, start: float | None = None) -> np.ndarray:
    """Seconds since `start` (default: the earliest finite wall time given)."""
    w = np.asarray(wall_time, dtype="float64")
    if start is None:
        finite = w[np.isfinite(w)]
        if len(finite) == 0:
            return np.full(len(w), np.nan)
        start = float(finite.min())
    return w - start
