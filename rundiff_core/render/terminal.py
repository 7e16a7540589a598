"""Markdown text to the terminal: `rich` tables fitted to the width on a TTY, the bytes unchanged
when piped or redirected (agents, tests and files get plain GitHub-flavoured Markdown).

Every command renders Markdown once; this module only decides how a terminal shows it. Set
`RUNDIFF_PLAIN=1` to get the plain text on a terminal too.
"""

from __future__ import annotations

import os
import re
import sys
from typing import TextIO

_SEP = re.compile(r"^\|[-| :]+\|$")
_NUMERIC = re.compile(r"^[-+]?(\d[\d,]*(\.\d+)?|\.\d+)([eE][-+]?\d+)?(\s|$|±|@|\(|%)")


def wants_rich(stream: TextIO) -> bool:
    """A real terminal and no request for plain text."""
    if os.environ.get("RUNDIFF_PLAIN") or os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def blocks(text: str) -> list[tuple[str, list[str]]]:
    """Split Markdown into ("table", lines) and ("text", lines) blocks, in order."""
    out: list[tuple[str, list[str]]] = []
    for line in text.split("\n"):
        kind = "table" if line.startswith("|") and line.rstrip().endswith("|") else "text"
        if out and out[-1][0] == kind:
            out[-1][1].append(line)
        else:
            out.append((kind, [line]))
    return out


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def rich_table(lines: list[str]):  # noqa: ANN201 - rich.table.Table
    """A Markdown table as a rich Table: long text folds, numeric columns align right."""
    from rich import box
    from rich.table import Table

    rows = [_cells(x) for x in lines if not _SEP.match(x.strip())]
    header, body = rows[0], rows[1:]
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, expand=False)
    for i, name in enumerate(header):
        col = [r[i] for r in body if i < len(r) and r[i] not in ("", "—", "n/a")]
        numeric = bool(col) and all(_NUMERIC.match(c) for c in col)
        table.add_column(name, justify="right" if numeric else "left", overflow="fold")
    for r in body:
        table.add_row(*(r + [""] * (len(header) - len(r)))[: len(header)])
    return table


def write_markdown(text: str, stream: TextIO | None = None) -> None:
    """Print a command's Markdown: plain bytes unless `stream` is a terminal."""
    stream = stream or sys.stdout
    if not wants_rich(stream):
        stream.write(text)
        return
    from rich.console import Console
    from rich.markup import escape

    console = Console(file=stream, highlight=False, soft_wrap=False)
    parts = blocks(text.rstrip("\n"))
    for kind, lines in parts:
        if kind == "table":
            console.print(rich_table(lines))
            continue
        for line in lines:
            if line.startswith("#"):
                console.print(f"[bold]{escape(line.lstrip('#').strip())}[/bold]")
            else:
                console.print(escape(line), soft_wrap=True)
    stream.flush()
