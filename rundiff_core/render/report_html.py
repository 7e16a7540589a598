"""The experiment report as one self-contained HTML page: the report's sections, then the plots of
`rundiff compare` (aligned curves, seed bands, the common step marked) — plotly.js embedded."""

from __future__ import annotations

import html
import re

from ..engines.compare import CompareResult
from .compare_html import inline, render_compare_html
from .many_md import render_report

_TABLE_SEP = re.compile(r"^\|[-| :]+\|$")


FOLD_AFTER = 4
"""List items shown before the rest folds into `<details>` (notes and long lists a click away)."""
_ITEM = re.compile(r"^(\s*)- (.*)$")


def _list_html(items: list[tuple[int, str]]) -> str:
    """Nested items [(depth, text)] as `<ul>`; past FOLD_AFTER items at one level, the rest fold."""
    out: list[str] = []
    i = 0
    top = items[0][0]
    entries: list[str] = []
    while i < len(items):
        depth, text = items[i]
        j = i + 1
        while j < len(items) and items[j][0] > top:
            j += 1
        children = _list_html(items[i + 1:j]) if j > i + 1 else ""
        entries.append(f"<li>{inline(text)}{children}</li>")
        i = j
    if len(entries) > FOLD_AFTER + 1:
        rest = entries[FOLD_AFTER:]
        out.append("<ul>" + "".join(entries[:FOLD_AFTER]) + "</ul>")
        out.append(f"<details><summary>and {len(rest)} more</summary><ul>{''.join(rest)}</ul></details>")
    else:
        out.append("<ul>" + "".join(entries) + "</ul>")
    return "".join(out)


def markdown_to_html(text: str) -> str:
    """The small Markdown subset rundiff writes: headings, lists, tables, quotes, paragraphs.
    Long lists fold after FOLD_AFTER items."""
    out: list[str] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("|"):
            rows = []
            while i < len(lines) and lines[i].startswith("|"):
                if not _TABLE_SEP.match(lines[i].strip()):
                    rows.append([html.escape(c.strip()) for c in lines[i].strip().strip("|").split("|")])
                i += 1
            head, *body = rows
            out.append("<table><thead><tr>" + "".join(f"<th>{c}</th>" for c in head) + "</tr></thead><tbody>"
                       + "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in body)
                       + "</tbody></table>")
            continue
        if _ITEM.match(line):
            items = []
            while i < len(lines) and (m := _ITEM.match(lines[i])):
                items.append((len(m.group(1)) // 2, m.group(2)))
                i += 1
            out.append(_list_html(items))
            continue
        if line.startswith("#"):
            level = len(line) - len(line.lstrip("#"))
            out.append(f"<h{level}>{html.escape(line[level:].strip())}</h{level}>")
        elif line.startswith(">"):
            out.append(f"<blockquote>{inline(line[1:].strip())}</blockquote>")
        elif line.strip():
            out.append(f"<p>{inline(line)}</p>")
        i += 1
    return "\n".join(out)


def render_report_html(rep, curves: CompareResult | None) -> str:  # noqa: ANN001 - ExperimentReport
    """The report's sections above the compare page for `curves` (plots of the shown metrics,
    every compared metric one click away); a plain page when there is nothing to plot."""
    report = markdown_to_html(render_report(rep))
    section = f'<section class="experiment-report">\n{report}\n</section>'
    if curves is None:
        return ('<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>Experiment report'
                f"</title></head><body>\n{section}\n</body></html>\n")
    page = render_compare_html(curves)
    return page.replace("<body>", "<body>\n" + section + "\n<h1>Curves</h1>", 1).replace(
        f"<title>{html.escape(result_title(page))}</title>", "<title>Experiment report</title>", 1)


def result_title(page: str) -> str:
    m = re.search(r"<title>(.*?)</title>", page, re.S)
    return html.unescape(m.group(1)) if m else ""
