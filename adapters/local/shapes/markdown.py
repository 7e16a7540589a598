"""Markdown results files (`adapters/local/markdown.py` parses them and decides who is a run): a
run is the file, or one of its alike sections `FILE#HEADING`. They are found by the `files`
layout's shape sniff."""

from __future__ import annotations

import os

from rundiff_core import Claimed, LayoutFolder, LayoutRun, read_config_files

from ..common import Meta
from ..lazy import pd


def claim(folder: LayoutFolder) -> Claimed | None:
    return None  # the `files` layout's shape sniff finds Markdown among a folder's files


def _part(spec: LayoutRun):  # noqa: ANN202 - a markdown.MarkdownRun
    from ..markdown import MarkdownRun, read_markdown

    path = spec.files[0]
    part = spec.sniffs.get(path)
    if isinstance(part, MarkdownRun):
        return path, part
    doc, _ = read_markdown(path)
    section = spec.path.split("#", 1)[1] if "#" in spec.path else None
    return path, MarkdownRun(doc, section) if doc is not None else None


def meta(spec: LayoutRun) -> Meta:
    from ..markdown import markdown_meta

    path, part = _part(spec)
    out = Meta()
    if part is None:
        out.notes.append(f"{os.path.basename(path)}: no longer readable as Markdown")
        return out
    if part.section is None:  # the file is the run: its folder's config files are its own
        out.config, out.notes = read_config_files(os.path.dirname(path))
    config, summary, notes = markdown_meta(path, part.doc, part.section)
    out.config.update(config)
    out.summary.update(summary)
    out.notes += notes
    return out


def history(spec: LayoutRun) -> tuple[pd.DataFrame, list[str]]:
    import rundiff_core

    from ..markdown import markdown_history

    path, part = _part(spec)
    if part is None:
        return rundiff_core.empty_history(), []
    return markdown_history(path, part.doc, part.section)
