"""Distribution summaries (median, IQR, histogram): behaviour is reported as spreads, not anecdotes."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np


def describe(values: Sequence[float], max_bins: int = 10) -> dict[str, Any]:
    """n, median, quartiles, IQR, min, max and an integer-friendly histogram of `values`."""
    arr = np.asarray([v for v in values if v is not None], dtype="float64")
    arr = arr[np.isfinite(arr)]
    if arr.size == 0:
        return {"n": 0, "median": None, "q1": None, "q3": None, "iqr": None, "min": None,
                "max": None, "mean": None, "hist": []}
    q1, med, q3 = (float(x) for x in np.percentile(arr, [25, 50, 75]))
    return {
        "n": int(arr.size),
        "median": med,
        "q1": q1,
        "q3": q3,
        "iqr": q3 - q1,
        "min": float(arr.min()),
        "max": float(arr.max()),
        "mean": float(arr.mean()),
        "hist": histogram(arr, max_bins),
    }


def histogram(arr: np.ndarray, max_bins: int = 10) -> list[dict[str, Any]]:
    """Bins `[lo, hi)` (last bin closed); integer data gets integer-width bins."""
    lo, hi = float(arr.min()), float(arr.max())
    if lo == hi:
        return [{"lo": lo, "hi": hi, "count": int(arr.size)}]
    integer = bool(np.all(arr == np.round(arr)))
    if integer:
        width = max(1, math.ceil((hi - lo + 1) / max_bins))
        edges = np.arange(lo, hi + width + 1, width, dtype="float64")
        edges = edges[: int(np.searchsorted(edges, hi, side="right")) + 1]
    else:
        edges = np.linspace(lo, hi, max_bins + 1)
    counts, edges = np.histogram(arr, bins=edges)
    out = []
    for i, c in enumerate(counts):
        lo_i, hi_i = float(edges[i]), float(edges[i + 1])
        if integer:
            hi_i -= 1  # show integer bins as inclusive ranges: 3–4
        out.append({"lo": lo_i, "hi": hi_i, "count": int(c)})
    return out
