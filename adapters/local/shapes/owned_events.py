"""A text log's run and the TensorBoard folder its launches wrote beside it.

A trainer that logs to a text file and to TensorBoard (lufficc/SSD's `log.txt` and `tf_logs/`,
one events file per launch) leaves one run: the folder holding the log. Its one sub-folder that
holds nothing but event files is that run's, not a TensorBoard run of its own — like the events
file Ultralytics writes beside `results.csv`. Each events file is one launch: its tags are kept
apart, named by the file (`<events file>/losses/total_loss`), never joined across launches that
all restart at the same steps.
"""

from __future__ import annotations

import os

import rundiff_core
from rundiff_core import LayoutRun

from ..common import is_events_file
from ..lazy import pd


def events_folder(folder: str, dirs: list[str]) -> tuple[str, list[str]] | None:
    """(the sub-folder's name, its event files) when exactly one sub-folder of `folder` holds
    event files, and nothing but event files (no folders, no other logs); else None — several
    such folders are runs of their own."""
    found = []
    for name in dirs:
        path = os.path.join(folder, name)
        try:
            entries = [e for e in os.scandir(path) if not e.name.startswith(".")]
        except OSError:
            continue
        if entries and all(e.is_file() and is_events_file(e.name) for e in entries):
            found.append((name, sorted(os.path.join(path, e.name) for e in entries)))
    return found[0] if len(found) == 1 else None


def events_history(run: LayoutRun) -> tuple[list[pd.DataFrame], list[str]]:
    """Each owned events file's scalars, keys named by the file; empty files said."""
    frames: list[pd.DataFrame] = []
    empty: list[str] = []
    notes: list[str] = []
    for path in run.sniffs.get("owns_events") or []:
        name = os.path.basename(path)
        try:
            frame = rundiff_core.load_run("tb:" + path).history()
        except Exception as exc:  # noqa: BLE001 - any reader failure is a note, the log stays
            notes.append(f"{name}: not read ({type(exc).__name__}: {str(exc)[:100]})")
            continue
        if not len(frame):
            empty.append(name)
            continue
        frame = frame.copy()
        frame["key"] = [f"{name}/{k}" for k in frame["key"].astype(str)]
        frames.append(frame)
    if frames:
        notes.append(f"{len(frames)} TensorBoard events file(s) of this run's launches: each file's "
                     "tags kept apart, named `<events file>/<tag>` (launches restart their steps)")
    if empty:
        notes.append(f"{len(empty)} events file(s) hold no scalars (a launch that logged none): "
                     + ", ".join(empty[:3]) + (" …" if len(empty) > 3 else ""))
    return frames, notes


def beside_events(path: str) -> bool:
    """`path` sits in a folder that directly holds TensorBoard event files: a training run's
    folder, written while it trained. A one-row table there is the trainer's per-epoch log after
    its first epoch (MixMatch-pytorch's `log.txt` beside its tensorboardX files, the same
    quantities the events hold at that step), a history of one point, not a final-eval file."""
    try:
        return any(is_events_file(e.name) and e.is_file()
                   for e in os.scandir(os.path.dirname(path) or "."))
    except OSError:
        return False
