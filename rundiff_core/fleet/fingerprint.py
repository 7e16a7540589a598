"""Has a run changed since the last export? Two answers, one cheap and one certain.

- `fingerprint(run)` — computed from metadata only, before any history is loaded: the tracker's
  own last-updated stamp when the adapter puts one in `run.meta`, and/or size + mtime of every file
  under the run's `meta["path"]` (or `paths`/`files`/`logdir`/`dir`/`file`), plus a digest of the
  run's metadata. None when the adapter gives neither (then only the content hash decides).
- `content_hash(history)` — a digest of every exported point: a run whose points did not change
  keeps its partition file untouched even when it had to be loaded.

No adapter-specific code: adapters opt in by what they put in `run.meta`.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

import numpy as np
import pandas as pd

from ..model import Run
from .schema import SCHEMA_VERSION, to_json

UPDATED_FIELDS = (
    "updated_at", "last_updated", "last_update", "updated", "heartbeat_at", "last_modified",
    "modified", "end_time", "last_update_time",
)
PATH_FIELDS = ("path", "paths", "files", "file", "logdir", "dir", "run_dir")
MAX_FILES = 5_000  # a folder with more files than this is fingerprinted by its own mtime only


def _paths(meta: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for name in PATH_FIELDS:
        value = meta.get(name)
        items = value if isinstance(value, list | tuple) else [value]
        out.extend(v for v in items if isinstance(v, str | os.PathLike))
    return [os.fspath(p) for p in out]


def _stat_lines(path: str) -> list[str]:
    """`relpath size mtime_ns` for a file, or for every file under a folder (bounded)."""
    try:
        st = os.stat(path)
    except OSError:
        return [f"{path} missing"]
    if not os.path.isdir(path):
        return [f"{path} {st.st_size} {st.st_mtime_ns}"]
    lines: list[str] = []
    for dirpath, dirs, files in os.walk(path):
        dirs.sort()
        for name in sorted(files):
            full = os.path.join(dirpath, name)
            try:
                fst = os.stat(full)
            except OSError:
                continue
            lines.append(f"{os.path.relpath(full, path)} {fst.st_size} {fst.st_mtime_ns}")
            if len(lines) > MAX_FILES:
                return [f"{path} {st.st_mtime_ns} many-files"]
    return lines


def metadata_digest(run: Run) -> str:
    """Digest of what load_run returned (config, summary, status, …), without the history."""
    rec = run.to_record()
    rec.pop("meta", None)
    return hashlib.sha1(to_json(rec).encode()).hexdigest()


def fingerprint(run: Run) -> str | None:
    """A cheap change detector for `run`, or None when its adapter exposes nothing to stat."""
    parts: list[str] = []
    for name in UPDATED_FIELDS:
        if run.meta.get(name) not in (None, ""):
            parts.append(f"{name}={run.meta[name]}")
    for path in _paths(run.meta):
        parts.extend(_stat_lines(path))
    if not parts:
        return None
    parts.insert(0, f"v{SCHEMA_VERSION} {metadata_digest(run)}")
    return hashlib.sha1("\n".join(parts).encode()).hexdigest()


def content_hash(history: pd.DataFrame) -> str:
    """Digest of every point in logged order (keys, steps, values, times; NaN-safe)."""
    h = hashlib.sha1()
    h.update(f"v{SCHEMA_VERSION} {len(history)}".encode())
    if len(history):
        keys = history["key"]
        if isinstance(keys.dtype, pd.CategoricalDtype):
            cat = keys.array  # its codes without a Series in between (same bytes)
            h.update("\x1f".join(map(str, cat.categories)).encode())
            h.update(np.ascontiguousarray(cat.codes).tobytes())
        else:
            h.update("\x1f".join(keys.astype(str).tolist()).encode())
        for col in ("step", "value", "wall_time"):
            h.update(np.ascontiguousarray(history[col].to_numpy(dtype="float64")).tobytes())
    return h.hexdigest()
