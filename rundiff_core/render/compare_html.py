"""The compare report as one self-contained HTML file: plotly.js embedded, no CDN, no network.

Per metric: the aligned curves of every run (seed groups as mean ± σ bands), the student's step
marked, the values the table used as markers; then the same tables, trends, sources and reading as
the Markdown report (both come from `compare_md.build_report`). Smoothing is for display only.
"""

from __future__ import annotations

import html
import json
import os
import re
from importlib import resources
from string import Template

import numpy as np

from ..engines.compare import CompareResult
from .compare_md import Report, Table, build_report
from .compare_plots import Figure, build_figures, require

_FOOTNOTE = re.compile(r"\s*\[\^(\d+)\]")


def _asset(name: str) -> str:
    return resources.files("rundiff_core.render").joinpath("assets", name).read_text("utf-8")


def _array(a: np.ndarray) -> list[float | None]:
    a = np.asarray(a, dtype="float64")
    return np.where(np.isfinite(a), a, None).tolist()


def figure_json(fig: Figure) -> dict:
    """A figure as plain JSON (null for NaN) for the page script."""
    return {
        "metric": fig.metric, "group": fig.group, "goal": fig.goal, "x_label": fig.x_label,
        "marker_x": fig.marker_x if np.isfinite(fig.marker_x) else None,
        "marker_label": fig.marker_label,
        "traces": [{"kind": t.kind, "name": t.name, "arm": t.arm, "role": t.role, "color": t.color,
                    "x": _array(t.x), "y": _array(t.y), "hover": t.hover} for t in fig.traces],
    }


def _cell(text: str) -> str:
    """Escape a table cell; footnote markers become links to the Sources list."""
    out = html.escape(text)
    return _FOOTNOTE.sub(lambda m: f' <sup><a href="#src-{m.group(1)}">{m.group(1)}</a></sup>', out)


def _table(t: Table) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in t.header)
    body = []
    for row in t.rows:
        cls = ' class="student"' if "(student)" in row[1] else ""
        cells = []
        for i, c in enumerate(row):
            cls_td = ' class="state"' if i == 3 and c.startswith("not ") else ""
            cells.append(f"<td{cls_td}>{_cell(c)}</td>")
        body.append(f"<tr{cls}>{''.join(cells)}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _sections(rep: Report, figures: list[Figure], last_k: int) -> str:
    out = []
    index = {f.metric: i for i, f in enumerate(figures)}
    for t in rep.tables:
        parts = [f'<section class="group" data-group="{t.group}">', f"<h2>{html.escape(t.title)}</h2>"]
        for f in figures:
            if f.group == t.group:
                parts.append(f'<div class="rundiff-plot" id="plot-{index[f.metric]}" '
                             f'data-metric="{html.escape(f.metric, quote=True)}"></div>')
        if t.rows:
            parts.append(_table(t))
        parts += [f'<p class="note">{html.escape(n)}</p>' for n in t.notes]
        if t.trends:
            parts.append(f"<p>Trend over the student's last {last_k} points:</p>")
            parts.append('<ul class="trends">'
                         + "".join(f"<li>{html.escape(x)}</li>" for x in t.trends) + "</ul>")
        parts.append("</section>")
        out.append("\n".join(parts))
    return "\n".join(out)


def render_compare_html(result: CompareResult, *, precision: int = 4, smooth: float = 0.0,
                        trace: bool = False) -> str:
    """The whole page as a string (plotly.js inline: about 5 MB)."""
    offline = require("plotly.offline")
    plotly = require("plotly")

    rep = build_report(result, precision, trace)
    figures = build_figures(result, smooth)
    # Figures in the order the sections show them, so plot ids follow the page.
    order = {t.group: i for i, t in enumerate(rep.tables)}
    figures.sort(key=lambda f: order.get(f.group, 99))
    payload = json.dumps({"figures": [figure_json(f) for f in figures]}, allow_nan=False,
                         ensure_ascii=False, separators=(",", ":"))
    payload = payload.replace("</", "<\\/")
    try:
        from importlib.metadata import version

        rundiff_version = version("rundiff")
    except Exception:  # pragma: no cover - running from a plain checkout
        rundiff_version = "dev"
    warnings = "".join(f'<p class="warning">note: {html.escape(w)}</p>' for w in rep.warnings)
    smoothing = (f"Curves smoothed for display with TensorBoard's debiased EMA (weight {smooth:g}); "
                 "raw curves are shown faintly and every number in the tables is unsmoothed."
                 if smooth > 0 else "")
    return Template(_asset("compare.html")).substitute(
        version=html.escape(rundiff_version),
        title=html.escape(rep.title),
        style=_asset("compare.css"),
        plotlyjs=offline.get_plotlyjs(),
        plotly_version=html.escape(_plotlyjs_version(offline.get_plotlyjs()[:300], plotly)),
        preamble="\n".join(f"<li>{html.escape(p)}</li>" for p in rep.preamble),
        warnings=warnings,
        sections=_sections(rep, figures, result.last_k),
        sources="\n".join(f'<li id="src-{i}">{html.escape(s)}</li>'
                          for i, s in enumerate(rep.sources, start=1)),
        conclusion="\n".join(f"<p>{html.escape(c)}</p>" for c in rep.conclusion),
        smoothing=html.escape(smoothing),
        data=payload,
        script=_asset("compare.js"),
    )


def _plotlyjs_version(head: str, plotly) -> str:  # noqa: ANN001 - module
    m = re.search(r"plotly\.js v([0-9][0-9.]*)", head)
    return m.group(1) if m else f"(plotly.py {plotly.__version__})"


def write_compare_html(result: CompareResult, path: str, **kwargs) -> str:
    """Write the report; returns the path. The parent directory is created if needed."""
    text = render_compare_html(result, **kwargs)
    parent = os.path.dirname(os.path.abspath(path))
    os.makedirs(parent, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    return path
