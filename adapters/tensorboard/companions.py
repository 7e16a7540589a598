"""The logs a trainer wrote beside its event files: files of the same run.

A folder is a run (TensorBoard's convention), and every file in it belongs to that run — the
config files beside the events (source._run_config) and the table or text log the same script
wrote each epoch (MixMatch-pytorch's `Logger` writes `log.txt` beside its tensorboardX files).
Their series are read by the local adapter, through its front door (`local:FOLDER`), and join
the run's history: a log key that an event tag also names is kept apart, named by its file
(`log/loss`), never joined to the tag's points. An event file with no records adds nothing; it
never hides the log beside it.
"""

from __future__ import annotations

import os
from contextvars import ContextVar
from typing import Any

import numpy as np

from . import is_event_file
from .reader import RunData

#: Files beside event files that are never a log: the run's config (read by source._run_config),
#: weights, images. A folder holding only these needs no look by the local reader (which loads
#: pandas: `ls` of a plain TensorBoard folder must not).
NEVER_LOGS = (".yaml", ".yml", ".toml", ".ini", ".cfg", ".pt", ".pth", ".ckpt", ".bin",
              ".safetensors", ".pkl", ".npy", ".npz", ".h5", ".png", ".jpg", ".jpeg", ".gif",
              ".pb", ".onnx", ".md")


def _beside(run_dir: str) -> list[str]:
    """The folder's other files that may be a log (not event files, not hidden, not a config,
    weights or an image): none means nothing to read."""
    try:
        return sorted(e.name for e in os.scandir(run_dir)
                      if e.is_file() and not e.name.startswith(".") and not is_event_file(e.name)
                      and not e.name.lower().endswith(NEVER_LOGS) and e.name != "LICENSE")
    except OSError:
        return []


def _local_run(run_dir: str, notes: list[str]) -> tuple[object, object] | None:
    """(source, ref) of the one run the local reader finds in `run_dir` itself (the folder's
    tables, or its one text log); None when it finds none, or several (each a run of its own:
    said, never merged into this one)."""
    import rundiff_core

    try:
        source = rundiff_core.open_source(f"local:{run_dir}")
        refs = source.list_runs()
    except Exception:  # noqa: BLE001 - nothing the local reader understands: the events alone
        return None
    mine = [r for r in refs if _in_folder(r.address.split(":", 1)[1], run_dir)]
    if len(mine) > 1:
        notes.append(f"{len(mine)} runs of the logs beside the event files ("
                     + ", ".join(r.name or r.run_id for r in mine[:3])
                     + "): not merged into this run; `rundiff ls local:FOLDER` reads them")
        return None
    return (source, mine[0]) if mine else None


def _in_folder(path: str, run_dir: str) -> bool:
    path = os.path.abspath(path.split("#", 1)[0])
    return path == run_dir or os.path.dirname(path) == run_dir


#: Folders whose companions are being read: a layout that owns the event files beside its
#: own log (Ultralytics' results.csv, read with `tb:FOLDER`) reads them back without companions.
_READING: ContextVar[frozenset[str]] = ContextVar("tb_companions_reading", default=frozenset())
#: The local reader's layouts for files it knows only by shape; a named layout (Ultralytics, HF
#: Trainer) that holds event files reads them itself, as its own run.
SHAPE_LAYOUTS = ("files", "text")


def with_companions(data: RunData, run_dir: str) -> RunData:
    """`data` with the series of the log beside its event files appended (see the module)."""
    run_dir = os.path.abspath(run_dir)
    if run_dir in _READING.get() or not _beside(run_dir):
        return data
    token = _READING.set(_READING.get() | {run_dir})
    try:
        got = _companion_frame(run_dir, data.notes)
    finally:
        _READING.reset(token)
    if got is None:
        return data
    frame, read, label = got
    keys = [str(k) for k in frame["key"].astype(str)]

    files = frame.attrs.get("key_files") or {}
    taken = {data.keys[c] for c in np.unique(data.key)} if len(data.key) else set()

    def named(k: str) -> str:
        if k not in taken:
            return k
        return f"{os.path.splitext(files.get(k, label))[0]}/{k}"

    names = list(data.keys)
    index = {n: i for i, n in enumerate(names)}
    codes = []
    for k in keys:
        n = named(k)
        if n not in index:
            index[n] = len(names)
            names.append(n)
        codes.append(index[n])
    shared = sorted({k for k in keys if k in taken})
    data.step = np.concatenate([data.step, frame["step"].to_numpy(dtype=np.float64)])
    data.key = np.concatenate([data.key, np.asarray(codes, dtype=data.key.dtype)])
    data.value = np.concatenate([data.value, frame["value"].to_numpy(dtype=np.float64)])
    data.wall_time = np.concatenate([data.wall_time, frame["wall_time"].to_numpy(dtype=np.float64)])
    data.keys = names
    got = sorted(set(keys))
    data.notes.append(f"{', '.join(read) or label}: the log beside the event files, a file of this run "
                      f"→ history ({len(got)} series: {', '.join(got[:5])}{' …' if len(got) > 5 else ''})"
                      + (f"; {', '.join(shared[:4])} also an event tag: named by the log's file"
                         if shared else ""))
    data.meta["companion_files"] = read
    return data


def _companion_frame(run_dir: str, notes: list[str]) -> tuple[Any, list[str], str] | None:
    """(history frame, files read, label) of the shape-read run beside the event files."""
    found = _local_run(run_dir, notes)
    if found is None:
        return None
    source, ref = found
    try:
        run = source.load_run(ref)  # type: ignore[attr-defined]
        if run.meta.get("layout") not in SHAPE_LAYOUTS:
            return None
        read = [str(f) for f in run.meta.get("files") or []]
        hist = source.load_history(ref)  # type: ignore[attr-defined]
        frame = hist.to_frame() if hasattr(hist, "to_frame") else hist
    except Exception as exc:  # noqa: BLE001 - the events stay the run's history
        notes.append(f"the log beside the event files not read ({type(exc).__name__})")
        return None
    finally:
        source.close()  # type: ignore[attr-defined]
    if not len(frame):
        return None
    path = read[0] if len(read) == 1 else ref.address.split(":", 1)[1].split("#")[0]  # type: ignore[attr-defined]
    return frame, read, os.path.splitext(os.path.basename(path))[0]
