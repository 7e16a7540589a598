"""Say what a history holds beyond a clean, increasing step sequence — kept, never merged."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np


def step_notes(series: Iterable[tuple[str, np.ndarray]], source: str = "") -> list[str]:
    """Notes on duplicate steps, restarts (a step going backwards) and non-integer steps.

    `series` yields (key, steps in logged order). One note per kind, naming up to five keys.
    """
    dup: list[str] = []
    back: list[str] = []
    frac: list[str] = []
    for key, steps in series:
        s = np.asarray(steps, dtype="float64")
        s = s[np.isfinite(s)]
        if len(s) < 2:
            continue
        d = np.diff(s)
        if (d > 0).all():  # the common case, O(n) without a sort
            if not np.all(s == np.floor(s)):
                frac.append(key)
            continue
        n_back = int((d < 0).sum())
        n_dup = len(s) - len(np.unique(s))
        if n_back:
            first = int(np.flatnonzero(d < 0)[0])
            back.append(f"{key} ×{n_back} (first {s[first]:g} → {s[first + 1]:g})")
        if n_dup:
            dup.append(f"{key} ×{n_dup}")
        if not np.all(s == np.floor(s)):
            frac.append(key)
    prefix = f"{source}: " if source else ""
    notes = []
    if back:
        notes.append(prefix + "step went backwards (restart?) — all points kept: " + _few(back))
    if dup:
        notes.append(prefix + "duplicate steps kept as separate points: " + _few(dup))
    if frac:
        notes.append(prefix + "non-integer steps: " + _few(frac))
    return notes


def _few(items: list[str], k: int = 5) -> str:
    return ", ".join(items[:k]) + (f" and {len(items) - k} more" if len(items) > k else "")
