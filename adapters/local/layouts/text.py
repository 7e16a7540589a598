"""Text logs: lines of `key:value` / `key=value` / `key value` fields with a step (adapters/local/
textlog.py has the grammar). Each file is a run; they are found by the `files` layout's sniff."""

from __future__ import annotations

import os

from rundiff_core import Claimed, LayoutFolder, LayoutRun

from ..lazy import pd
from .common import Meta, read_config_files


def claim(folder: LayoutFolder) -> Claimed | None:
    return None  # the `files` layout sniffs text logs with the tables it reads


def meta(spec: LayoutRun) -> Meta:
    out = Meta()
    out.config, out.notes = read_config_files(os.path.dirname(spec.path))
    return out


def history(spec: LayoutRun) -> tuple[pd.DataFrame, list[str]]:
    from ..textlog import read_text_log  # the grammars compile on import: only to read a log

    return read_text_log(spec.path, spec.sniffs.get(spec.path))
