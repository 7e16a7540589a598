"""Spinning Up / garage / rllab run folders: `progress.txt`/`progress.csv` beside `config.json`
(`variant.json`, `params.json`)."""

from __future__ import annotations

import os

import rundiff_core  # the data model (numpy) loads when a log is read, not to sniff
from rundiff_core import CONFIG_FILES, Claimed, LayoutFolder, LayoutRun, read_config_files

from ..common import Meta
from ..lazy import pd
from ..sniff import one_row, read_table, sniff_table


def claim(folder: LayoutFolder) -> Claimed | None:
    progress = folder.any("progress.txt", "progress.csv")
    config = folder.any("config.json", "variant.json", "params.json")
    if not (progress and config):
        return None
    return Claimed([LayoutRun(folder.path, "spinningup", [folder.join(f) for f in folder.files],
                              f"Spinning Up / garage / rllab: {progress[0]} + {sorted(config)[0]}")])


def _progress(spec: LayoutRun) -> str | None:
    for name in ("progress.txt", "progress.csv"):
        p = os.path.join(spec.path, name)
        if os.path.isfile(p):
            return p
    return None


def meta(spec: LayoutRun) -> Meta:
    out = Meta()
    out.config, out.notes = read_config_files(spec.path, ("config.json", "variant.json",
                                                          "params.json"))
    for f in spec.files:
        base = os.path.basename(f)
        if base in ("progress.txt", "progress.csv") or base in CONFIG_FILES:
            continue
        sniff = sniff_table(f)
        if sniff is not None and (row := one_row(f, sniff)):
            stem = os.path.splitext(base)[0]
            out.summary.update({f"{stem}/{k}": v for k, v in row.items()})
            out.notes.append(f"{base} (one row, no step column) → summary as {stem}/*")
    return out


def history(spec: LayoutRun) -> tuple[pd.DataFrame, list[str]]:
    path = _progress(spec)
    return read_table(path) if path else (rundiff_core.empty_history(), ["no progress file"])
