"""Slice a series at a target x (usually the student's current step), never at its end.

`nearest` takes the logged point whose x is closest to the target (ties go to the earlier point;
among duplicate x the last logged value wins). `interpolate` draws a straight line between the two
logged points that bracket the target. A target beyond the series' last point is not reached: the
answer says so instead of returning the final value.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

ALIGN_MODES = ("nearest", "interpolate")


@dataclass(frozen=True)
class Slice:
    """The value of a series at a target x and how it was obtained."""

    target: float
    value: float
    x_used: float  # the logged x actually used (nearest), or the target itself (interpolated/exact)
    method: str  # "exact" | "nearest" | "interpolate" | "not reached" | "empty"
    bracket: tuple[float, float] | None = None

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
    tolerance: float | None = None,
) -> Slice:
    """The value at `target`. Points beyond the series' end are 'not reached'."""
    if mode not in ALIGN_MODES:
        raise ValueError(f"align mode must be one of {ALIGN_MODES}")
    xs, ys = dedupe_last(x, y)
    if len(xs) == 0:
        return Slice(target, math.nan, math.nan, "empty")
    if target > xs[-1] + (tolerance or 0.0):
        return Slice(target, math.nan, float(xs[-1]), "not reached")
    i = int(np.searchsorted(xs, target))
    if i < len(xs) and xs[i] == target:
        return Slice(target, float(ys[i]), float(xs[i]), "exact")
    if mode == "interpolate" and 0 < i < len(xs):
        x0, x1, y0, y1 = xs[i - 1], xs[i], ys[i - 1], ys[i]
        value = y0 + (y1 - y0) * (target - x0) / (x1 - x0)
        return Slice(target, float(value), float(target), "interpolate", (float(x0), float(x1)))
    candidates = [j for j in (i - 1, i) if 0 <= j < len(xs)]
    j = min(candidates, key=lambda k: (abs(xs[k] - target), xs[k]))
    return Slice(target, float(ys[j]), float(xs[j]), "nearest")
