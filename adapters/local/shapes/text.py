"""Text logs: lines of `key:value` / `key=value` / `key value` fields with a step (adapters/local/
textlog.py has the grammar). Each file is a run; they are found by the `files` layout's sniff.

Its config: the config files beside it, and what the log printed in its head — an argparse
`Namespace(…)` or the command line it ran (rundiff_core.log_head_config): the log's own values
win a key both give (the folder's file may serve several logs; the log says what this run ran
with), said in a note. Tracker metadata among them (paths, the command) goes to meta. Else a
config block the log printed (log_config: its last launch's) adds the keys the files lack. The
events folder beside it is the run's (owned_events)."""

from __future__ import annotations

import os

from rundiff_core import (
    Claimed,
    LayoutFolder,
    LayoutRun,
    log_head_config,
    read_config_files,
    split_metadata,
)

from ..common import Meta
from ..lazy import pd


def claim(folder: LayoutFolder) -> Claimed | None:
    return None  # the `files` layout sniffs text logs with the tables it reads


def meta(spec: LayoutRun) -> Meta:
    from ..log_config import printed_config

    out = Meta()
    log = _log(spec)
    out.config, out.notes = read_config_files(os.path.dirname(log))
    printed, printed_meta, notes = log_head_config(log)
    out.notes += notes
    config, metadata = split_metadata(printed)
    differ = sorted(k for k in config if k in out.config and out.config[k] != config[k])
    if differ:
        out.notes.append(f"{os.path.basename(log)}: its printed "
                         f"{', '.join(differ[:4])} kept over the config file's")
    out.config.update(config)
    out.meta.update(metadata)
    out.meta.update(printed_meta)
    block, where = printed_config(log)
    if block:  # the files and the log's head name their settings; the printed block adds
        added = {k: v for k, v in block.items() if k not in out.config}
        out.config.update(added)
        out.notes.append(f"{os.path.basename(log)} {where}: the config it printed (its last"
                         f" launch's) → {len(added)} setting(s) to config")
    return out


def _log(spec: LayoutRun) -> str:
    """The log file (a run that owns an events folder is named by the folder holding both)."""
    return spec.files[0] if spec.files else spec.path


def history(spec: LayoutRun) -> tuple[pd.DataFrame, list[str]]:
    from ..textlog import read_text_log  # the grammars compile on import: only to read a log

    log = _log(spec)
    frame, notes = read_text_log(log, spec.sniffs.get(log))
    if spec.sniffs.get("owns_events"):
        from .owned_events import events_history

        frames, more = events_history(spec)
        notes += more
        if frames:
            frame = pd.concat([frame, *frames], ignore_index=True) if len(frame) else \
                pd.concat(frames, ignore_index=True)
    return frame, notes
