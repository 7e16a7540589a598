"""The compare plots as plotly figures for notebooks: the same traces, styles and student-step
marker the `--html` report draws (render/assets/compare.js), built in Python."""

from __future__ import annotations

from typing import Any

import numpy as np


def _rgba(hex_color: str, alpha: float) -> str:
    n = int(hex_color[1:], 16)
    return f"rgba({(n >> 16) & 255},{(n >> 8) & 255},{n & 255},{alpha})"


def _values(a: np.ndarray) -> list[float | None]:
    a = np.asarray(a, dtype="float64")
    return np.where(np.isfinite(a), a, None).tolist()


def _trace(t: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"x": _values(t.x), "y": _values(t.y), "name": t.name, "type": "scatter",
                            "mode": "lines", "legendgroup": t.arm or "points", "connectgaps": False}
    if t.kind == "raw":
        base.update(line={"color": t.color, "width": 1}, opacity=0.3, showlegend=False,
                    hoverinfo="skip")
    elif t.kind == "band_lower":
        base.update(line={"color": t.color, "width": 0}, showlegend=False, hoverinfo="skip")
    elif t.kind == "band_upper":
        base.update(line={"color": t.color, "width": 0}, fill="tonexty",
                    fillcolor=_rgba(t.color, 0.18), showlegend=False, hoverinfo="skip")
    elif t.kind == "points":
        base.update(mode="markers", text=list(t.hover), hovertemplate="%{text}<extra></extra>",
                    marker={"color": t.color, "size": 9, "symbol": "diamond-open",
                            "line": {"width": 2}})
    else:
        base["line"] = {"color": t.color, "width": 3 if t.role == "student" else 2}
        if t.hover:
            base["text"] = list(t.hover)
    return base


def plotly_figures(figures: list[Any]) -> list[Any]:
    """plotly.graph_objects.Figure per compare figure (raises the "install rundiff[plots]" error
    when plotly is missing)."""
    from ._bridge import require

    go = require("plotly.graph_objects")
    out = []
    for fig in figures:
        layout: dict[str, Any] = {
            "title": {"text": f"{fig.metric} ({fig.group}, goal: {fig.goal})", "font": {"size": 14}},
            "xaxis": {"title": {"text": fig.x_label}}, "yaxis": {"title": {"text": fig.metric}},
            "margin": {"l": 60, "r": 20, "t": 40, "b": 45}, "legend": {"orientation": "h", "y": -0.2},
            "height": 380,
        }
        if np.isfinite(fig.marker_x):
            layout["shapes"] = [{"type": "line", "xref": "x", "yref": "paper", "x0": fig.marker_x,
                                 "x1": fig.marker_x, "y0": 0, "y1": 1,
                                 "line": {"color": "#111", "width": 1.5, "dash": "dash"}}]
            layout["annotations"] = [{"x": fig.marker_x, "xref": "x", "y": 1, "yref": "paper",
                                      "text": fig.marker_label, "showarrow": False,
                                      "yanchor": "bottom", "font": {"size": 11}}]
        out.append(go.Figure(data=[_trace(t) for t in fig.traces], layout=layout))
    return out


def figures_html(figures: list[Any]) -> str:
    """HTML divs for the figures; plotly.js is inlined once, so the output works offline."""
    parts = []
    for i, fig in enumerate(figures):
        parts.append(fig.to_html(full_html=False, include_plotlyjs=(i == 0),
                                 config={"displaylogo": False, "responsive": True}))
    return "\n".join(parts)
