"""What the compare plots draw, independent of the plotting library (HTML uses plotly.js, PNG uses
matplotlib): per metric, every arm's aligned curve — a line for a single run, mean ± σ band for a
seed group — the student's current step marked, and the values the table used.

Smoothing is TensorBoard's debiased exponential moving average, for display only: the tables and
every statistic use the raw points.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import overload

import numpy as np

from ..engines.compare import CompareResult
from ..errors import MissingDependencyError

PALETTE = (
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf",
)
STUDENT_COLOR = "#111111"


def ema_debiased(values: np.ndarray, weight: float) -> np.ndarray:
    """TensorBoard's scalar smoothing: EMA with zero-init debiasing; non-finite points pass through.

    Same as TensorBoard's `vz_line_chart` smoothing: `last = last·w + (1−w)·y`, divided by
    `1 − w^n` where n counts the finite points so far; a constant series is left as is.
    """
    y = np.asarray(values, dtype="float64")
    if weight <= 0 or len(y) == 0:
        return y.copy()
    finite = np.isfinite(y)
    if finite.all() and (y == y[0]).all():
        return y.copy()
    out = y.copy()
    z = y[finite]
    if weight >= 1:
        out[finite] = 0.0  # `last` never moves from its zero start
        return out
    # in blocks where w^-block stays finite: s_j = w^j (s_0 + (1−w) Σ_{i≤j} x_i w^-i), vectorised
    # (a 1M-point curve smooths in milliseconds, not a Python loop's seconds)
    block = max(1, int(200 / -np.log10(weight)))
    smoothed = np.empty(len(z))
    last = 0.0
    for start in range(0, len(z), block):
        seg = z[start:start + block]
        wk = weight ** np.arange(1, len(seg) + 1)
        s_seg = wk * (last + (1.0 - weight) * np.cumsum(seg / wk))
        smoothed[start:start + len(seg)] = s_seg
        last = float(s_seg[-1])
    out[finite] = smoothed / (1.0 - weight ** np.arange(1, len(z) + 1))
    return out


class SeedCounts(Sequence[str]):
    """A band's hover labels (`N=3`: the seeds behind each point), formatted when read: a curve
    of 1M points drawn thinned reads a few thousand of them, not all."""

    def __init__(self, counts: np.ndarray) -> None:
        self._counts = np.asarray(counts)

    def __len__(self) -> int:
        return len(self._counts)

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> list[str]: ...
    def __getitem__(self, i: int | slice) -> str | list[str]:
        if isinstance(i, slice):
            return [f"N={int(k)}" for k in self._counts[i]]
        return f"N={int(self._counts[i])}"

    def __eq__(self, other: object) -> bool:
        return list(self) == list(other) if isinstance(other, Sequence) else NotImplemented


@dataclass
class Trace:
    """One drawable series. kind: line | raw | band_lower | band_upper | mean | points."""

    kind: str
    name: str
    arm: str
    role: str
    color: str
    x: np.ndarray
    y: np.ndarray
    hover: Sequence[str] = field(default_factory=list)


@dataclass
class Figure:
    metric: str
    group: str
    goal: str
    x_label: str
    marker_x: float  # the student's step the baselines were sliced at
    marker_label: str
    traces: list[Trace]


def arm_colors(result: CompareResult) -> dict[str, str]:
    colors = {result.student.label: STUDENT_COLOR}
    for i, b in enumerate(result.baselines):
        colors[b.label] = PALETTE[i % len(PALETTE)]
    return colors


def build_figures(result: CompareResult, smooth: float = 0.0) -> list[Figure]:
    """One figure per compared metric, in table order (proxy first, then downstream)."""
    if not result.curves and not result.bands and result.metrics:
        raise ValueError("run_compare(..., curves=True) is needed for plots")
    colors = arm_colors(result)
    grouped = {b.label for b in result.baselines if not b.single_seed}
    if not result.student.single_seed:
        grouped.add(result.student.label)
    figures = []
    for m in result.metrics:
        traces: list[Trace] = []
        for c in result.curves.get(m.metric, []):
            if c.arm in grouped:
                continue
            name = c.run + (" (student)" if c.role == "student" else "")
            if smooth > 0:
                traces.append(Trace("raw", f"{name} raw", c.arm, c.role, colors[c.arm], c.x, c.y))
                traces.append(Trace("line", name, c.arm, c.role, colors[c.arm], c.x,
                                    ema_debiased(c.y, smooth)))
            else:
                traces.append(Trace("line", name, c.arm, c.role, colors[c.arm], c.x, c.y))
        for b in result.bands.get(m.metric, []):
            mean = ema_debiased(b.mean, smooth) if smooth > 0 else b.mean
            std = np.where(np.isfinite(b.std), b.std, 0.0)
            std = ema_debiased(std, smooth) if smooth > 0 else std
            name = f"{b.arm} mean ± σ" + (" (student)" if b.role == "student" else "")
            color = colors[b.arm]
            traces.append(Trace("band_lower", f"{b.arm} −σ", b.arm, b.role, color, b.x, mean - std))
            traces.append(Trace("band_upper", f"{b.arm} +σ", b.arm, b.role, color, b.x, mean + std))
            if smooth > 0:
                traces.append(Trace("raw", f"{b.arm} mean raw", b.arm, b.role, color, b.x, b.mean))
            traces.append(Trace("mean", name, b.arm, b.role, color, b.x, mean, SeedCounts(b.n)))
        ok = [row for row in m.rows if row.state == "ok" and math.isfinite(row.value)]
        if ok:
            xs = np.array([m.target] * len(ok))
            ys = np.array([row.value for row in ok])
            hover = [f"{row.arm}: {row.value:.6g} at {result.x_label} "
                     + ", ".join(f"{x:g}" for x in row.x_used) for row in ok]
            traces.append(Trace("points", f"values used at {result.x_label} {m.target:g}", "", "",
                                STUDENT_COLOR, xs, ys, hover))
        figures.append(Figure(m.metric, m.group, m.goal, result.x_label, m.target,
                              f"student at {result.x_label} {m.target:g}", traces))
    return figures


def require(module: str):  # noqa: ANN201 - returns a module
    """Import an optional plotting package or say which extra installs it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] == module.split(".")[0]:
            raise MissingDependencyError(
                f"plots need the '{module.split('.')[0]}' package",
                hint="pip install 'rundiff[plots]'",
            ) from exc
        raise
