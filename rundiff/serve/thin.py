"""Curves thinned for drawing only: per pixel column, the first, lowest, highest and last point.

A plot of 1M points is as wide as the screen: keeping each column's extremes (and its first and
last point, so lines join) draws the same picture, spikes included, from ≤ 4 points per column.
Every number in a table comes from the full history; only the figures' traces pass through here.
"""

from __future__ import annotations

import numpy as np


def thin_indices(x: np.ndarray, y: np.ndarray, columns: int) -> np.ndarray:
    """Indices (sorted) of the points to draw: all of them when there are few, else per column of
    x the first, last, min and max finite y. Non-finite y are kept (they are gaps)."""
    n = len(x)
    if n <= 4 * columns:
        return np.arange(n)
    xs = np.asarray(x, dtype="float64")
    ys = np.asarray(y, dtype="float64")
    finite_x = np.isfinite(xs)
    lo, hi = (np.nanmin(xs[finite_x]), np.nanmax(xs[finite_x])) if finite_x.any() else (0.0, 1.0)
    span = hi - lo if hi > lo else 1.0
    col = np.clip(((xs - lo) / span * columns).astype("int64", copy=False), 0, columns - 1)
    col[~finite_x] = -1
    if (col[1:] >= col[:-1]).all():  # steps logged in order (nearly always): no sort needed
        order = np.arange(n)
    else:
        order = np.lexsort((np.arange(n), col))  # by column, then logged order
    c = col[order]
    starts = np.flatnonzero(np.r_[True, c[1:] != c[:-1]])
    ends = np.r_[starts[1:], n] - 1
    keep = [order[starts], order[ends]]
    yv = np.where(np.isfinite(ys), ys, np.nan)[order]
    valid = np.isfinite(yv)
    if valid.any():
        big = np.where(valid, yv, -np.inf)
        small = np.where(valid, yv, np.inf)
        seg_max = np.maximum.reduceat(big, starts)
        seg_min = np.minimum.reduceat(small, starts)
        for target, seg in ((big, seg_max), (small, seg_min)):
            hit = target == np.repeat(seg, np.diff(np.r_[starts, n]))
            hit &= valid
            first_hit = np.flatnonzero(hit)
            groups = np.searchsorted(starts, first_hit, side="right") - 1
            _, first = np.unique(groups, return_index=True)
            keep.append(order[first_hit[first]])
    keep.append(np.flatnonzero(~np.isfinite(ys)))
    return np.unique(np.concatenate(keep))
