"""The compare report as one self-contained HTML file: plotly.js embedded, no CDN, no network.

Per metric: the aligned curves of every run (seed groups as mean ± σ bands), the student's step
marked, the values the table used as markers; then the same tables, notes, footnotes and reading as
the Markdown report (both come from `compare_md.build_report`). Smoothing is for display only.
"""

from __future__ import annotations

import dataclasses
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

STATE = ' class="state"'
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
                    "x": _array(t.x), "y": _array(t.y), "hover": list(t.hover)} for t in fig.traces],
    }


def _cell(text: str) -> str:
    """Escape a table cell; footnote markers become links to the Sources list."""
    out = html.escape(text)
    return _FOOTNOTE.sub(lambda m: f' <sup><a href="#src-{m.group(1)}">{m.group(1)}</a></sup>', out)


def _html_table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = []
    for row in rows:
        cells = "".join(f"<td{STATE if c.startswith('not ') else ''}>{_cell(c)}</td>" for c in row)
        body.append(f"<tr>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _table(t: Table) -> str:
    return _html_table(t.header, t.rows)


def _sections(rep: Report, figures: list[Figure], last_k: int) -> str:
    out = []
    index = {f.metric: i for i, f in enumerate(figures)}
    for t in rep.tables:
        title = t.title + (f" — {t.step}" if t.step else "")
        parts = [f'<section class="group" data-group="{t.group}">', f"<h2>{html.escape(title)}</h2>"]
        for f in figures:
            if f.group == t.group:
                parts.append(f'<div class="rundiff-plot" id="plot-{index[f.metric]}" '
                             f'data-metric="{html.escape(f.metric, quote=True)}"></div>')
        if t.rows:
            parts.append(_table(t))
        if t.family_rows:
            parts.append(_html_table(t.family_header, t.family_rows))
        parts += [f'<p class="note">{html.escape(n)}</p>' for n in t.notes]
        parts.append("</section>")
        out.append("\n".join(parts))
    if rep.more:
        out.append(f'<p class="note">{html.escape(rep.more)}</p>')
    if rep.notes or rep.warnings:
        items = [*rep.notes, *(f"note: {w}" for w in rep.warnings)]
        out.append('<section class="notes"><h2>Notes</h2><ul>'
                   + "".join(f"<li>{html.escape(n)}</li>" for n in items) + "</ul></section>")
    return "\n".join(out)


def _every_metric(result: CompareResult, precision: int, trace: bool) -> str:
    """Every compared metric, one click away (a closed <details>) when the page shows a selection."""
    if result.show_all or not result.hidden:
        return ""
    full = build_report(dataclasses.replace(result, show_all=True), precision, trace)
    tables = "".join(f"<h3>{html.escape(t.title)}</h3>{_table(t)}" for t in full.tables if t.rows)
    return (f'<details class="all-metrics"><summary>All {len(result.metrics)} compared metrics'
            f"</summary>{tables}</details>")


def inline(text: str) -> str:
    """A legend line as HTML: escaped, with its `**name**` bold and `code` as code."""
    out = html.escape(text)
    out = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", out)
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", out)


def render_compare_html(result: CompareResult, *, precision: int = 4, smooth: float = 0.0,
                        trace: bool = False) -> str:
    """The whole page as a string (plotly.js inline: about 5 MB)."""
    offline = require("plotly.offline")
    plotly = require("plotly")

    rep = build_report(result, precision, trace)
    shown = set(result.shown)
    figures = [f for f in build_figures(result, smooth) if result.show_all or f.metric in shown]
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
    if len(rep.warnings) > 2:  # how the runs were read: a click away, not a page of notes
        warnings = (f'<details class="warnings"><summary>{len(rep.warnings)} notes on how the runs '
                    f"were read</summary>{warnings}</details>")
    smoothing = (f"Curves smoothed for display with TensorBoard's debiased EMA (weight {smooth:g}); "
                 "raw curves are shown faintly and every number in the tables is unsmoothed."
                 if smooth > 0 else "")
    return Template(_asset("compare.html")).substitute(
        version=html.escape(rundiff_version),
        title=html.escape(rep.title),
        style=_asset("compare.css"),
        plotlyjs=offline.get_plotlyjs(),
        plotly_version=html.escape(_plotlyjs_version(offline.get_plotlyjs()[:300], plotly)),
        preamble="\n".join(f"<li>{inline(p)}</li>" for p in [rep.legend, *rep.preamble]),
        warnings=warnings,
        sections=_sections(rep, figures, result.last_k) + _every_metric(result, precision, trace),
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
