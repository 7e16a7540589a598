"""Text logs: lines of `key:value` / `key=value` / `key value` fields with a step (adapters/local/
textlog.py has the grammar). Each file is a run; they are found by the `files` layout's sniff.

Its config: the config files beside it, and what the log printed in its head — an argparse
`Namespace(…)` or the command line it ran (rundiff_core.log_head_config): the log's own values
win a key both give (the folder's file may serve several logs; the log says what this run ran
with), said in a note. Tracker metadata among them (paths, the command) goes to meta."""

from __future__ import annotations

import os

from rundiff_core import Claimed, LayoutFolder, LayoutRun, log_head_config, split_metadata

from ..lazy import pd
from .common import Meta, read_config_files


def claim(folder: LayoutFolder) -> Claimed | None:
    return None  # the `files` layout sniffs text logs with the tables it reads


def meta(spec: LayoutRun) -> Meta:
    out = Meta()
    out.config, out.notes = read_config_files(os.path.dirname(spec.path))
    printed, printed_meta, notes = log_head_config(spec.path)
    out.notes += notes
    config, metadata = split_metadata(printed)
    differ = sorted(k for k in config if k in out.config and out.config[k] != config[k])
    if differ:
        out.notes.append(f"{os.path.basename(spec.path)}: its printed "
                         f"{', '.join(differ[:4])} kept over the config file's")
    out.config.update(config)
    out.meta.update(metadata)
    out.meta.update(printed_meta)
    return out


def history(spec: LayoutRun) -> tuple[pd.DataFrame, list[str]]:
    from ..textlog import read_text_log  # the grammars compile on import: only to read a log

    return read_text_log(spec.path, spec.sniffs.get(spec.path))
