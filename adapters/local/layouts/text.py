"""Text logs: lines of `key:value` / `key=value` / `key value` fields with a step (adapters/local/
textlog.py has the grammar). Each file is a run; they are found by the `files` layout's sniff. A
config the log printed is config (log_config), and the events folder beside it is the run's
(owned_events)."""

from __future__ import annotations

import os

from rundiff_core import Claimed, LayoutFolder, LayoutRun

from ..lazy import pd
from .common import Meta, read_config_files


def claim(folder: LayoutFolder) -> Claimed | None:
    return None  # the `files` layout sniffs text logs with the tables it reads


def meta(spec: LayoutRun) -> Meta:
    from ..log_config import printed_config

    out = Meta()
    log = _log(spec)
    out.config, out.notes = read_config_files(os.path.dirname(log))
    printed, where = printed_config(log)
    if printed:  # a config file beside the log names its settings; the printed block adds
        added = {k: v for k, v in printed.items() if k not in out.config}
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
