"""Static PNG plots of a comparison (matplotlib, Agg canvas) for papers and pull requests.

One file per metric, the same picture as the HTML report: aligned curves, seed groups as mean ± σ
bands, the student's step as a dashed line, and the values the table used as markers. Uses
matplotlib's object API with an Agg canvas, so the process-wide pyplot backend is never touched.
"""

from __future__ import annotations

import os
import re

import numpy as np

from ..engines.compare import CompareResult
from .compare_plots import Figure, build_figures, require


def slug(metric: str) -> str:
    """A file-name-safe version of a metric name."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", metric).strip("_") or "metric"


def _draw(fig: Figure, dpi: int) -> object:
    mfigure = require("matplotlib.figure")
    agg = require("matplotlib.backends.backend_agg")
    f = mfigure.Figure(figsize=(8, 4.5), dpi=dpi)
    agg.FigureCanvasAgg(f)
    ax = f.add_subplot(1, 1, 1)
    lower: dict[str, np.ndarray] = {}
    for t in fig.traces:
        width = 2.2 if t.role == "student" else 1.4
        if t.kind == "raw":
            ax.plot(t.x, t.y, color=t.color, alpha=0.25, linewidth=0.8)
        elif t.kind == "band_lower":
            lower[t.arm] = t.y
        elif t.kind == "band_upper":
            ax.fill_between(t.x, lower.get(t.arm, t.y), t.y, color=t.color, alpha=0.18, linewidth=0)
        elif t.kind == "points":
            ax.scatter(t.x, t.y, marker="D", facecolors="none", edgecolors=t.color, s=40, zorder=5,
                       label=t.name)
        else:
            ax.plot(t.x, t.y, color=t.color, linewidth=width, label=t.name)
    if np.isfinite(fig.marker_x):
        ax.axvline(fig.marker_x, color="#111111", linestyle="--", linewidth=1)
        ax.annotate(fig.marker_label, xy=(fig.marker_x, 1.0), xycoords=("data", "axes fraction"),
                    ha="center", va="bottom", fontsize=8)
    ax.set_xlabel(fig.x_label)
    ax.set_ylabel(fig.metric)
    ax.set_title(f"{fig.metric} ({fig.group}, goal: {fig.goal})", fontsize=10, pad=14)
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, loc="best")
    f.tight_layout()
    return f


def write_compare_pngs(result: CompareResult, directory: str, *, smooth: float = 0.0,
                       dpi: int = 120) -> list[str]:
    """Write `NN-<metric>.png` per metric into `directory` (created if needed); returns the paths."""
    figures = build_figures(result, smooth)
    os.makedirs(directory, exist_ok=True)
    paths = []
    for i, fig in enumerate(figures, start=1):
        path = os.path.join(directory, f"{i:02d}-{slug(fig.metric)}.png")
        _draw(fig, dpi).savefig(path)
        paths.append(path)
    return paths
