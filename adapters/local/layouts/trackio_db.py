"""trackio project databases (`<project>.db`) and their Parquet export (`<project>.parquet` +
`_configs.parquet`): one run per trackio run (adapters/local/trackio.py reads them).

A damaged database (SQLite says "malformed" or "not a database", on its schema or on any later
read) whose pages still show trackio's tables is read from what
`rundiff_adapters.mlflow.sqlite_salvage.recover` brings back of it: a private copy the trackio
reader opens in its place. Every run still there is listed and read; each says "a damaged trackio
store (SQLite's cause at page N)", the hint that fits it and what it lost; a damaged database
none of whose runs reads is one line and a hint (exit 2).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from typing import Any, TypeVar

from rundiff_core import Claimed, InputError, LayoutFolder, LayoutRun

from ..common import Meta, strip_seed
from ..lazy import pd

_T = TypeVar("_T")


def _runs(folder: str, files: list[str]) -> list[LayoutRun]:
    from .. import trackio

    dbs, damaged = [], set()
    for f in files:
        if not f.endswith(".db"):
            continue
        path = os.path.join(folder, f)
        try:
            whole = trackio.is_trackio_db(path)
        except UnicodeDecodeError:  # its schema's text garbled: damaged
            whole = False
        if whole:
            dbs.append(f)
        elif _damaged_trackio(path):
            dbs.append(f)
            damaged.add(f)
    exports = [f for f in files if f.endswith(".parquet") and f[:-8] + ".db" not in dbs
               and trackio.is_trackio_parquet(os.path.join(folder, f))]
    specs = []
    for name in dbs + exports:
        path = os.path.join(folder, name)
        if name.endswith(".db"):
            runs, rec = _read(path, trackio.db_runs)
            if rec is not None:
                runs = runs + _config_only(rec.copy, {rid for rid, _ in runs})
            if rec is not None and not runs:
                specs.append(LayoutRun(path, "trackio", [path], f"{rec.what()} ({rec.cause})",
                                       {"run_id": None, "damaged": True}))
                continue
        else:
            runs = trackio.parquet_runs(path)
        kind = "project database" if name.endswith(".db") else "Parquet export"
        if name in damaged:
            kind = "project database, damaged"
        for run_id, label in runs:
            specs.append(LayoutRun(f"{path}#{label}", "trackio", [path],
                                   f"trackio {kind} {name}", {"run_id": run_id}))
    return specs


# -- a damaged database -------------------------------------------------------------------------


def _damaged_trackio(path: str) -> bool:
    """A database SQLite refuses whose pages still show trackio's tables."""
    from rundiff_adapters.mlflow.sqlite_salvage import damaged_kind

    try:
        return damaged_kind(path) == "trackio"
    except (OSError, ValueError, sqlite3.Error):
        return False


def _read(path: str, fn: Callable[..., _T], *args: Any) -> tuple[_T, Any]:
    """`fn(database, *args)` on the database — or, once it proved damaged, on what can be read of
    it — and what was recovered (None: it is whole)."""
    from rundiff_adapters.mlflow.sqlite_salvage import (
        damage_message,
        is_damage,
        quick_damage,
        recover,
    )

    rec = None
    error = quick_damage(path)  # damage a cheap look finds: every run then says so
    if error is None and not _damaged_trackio(path):
        try:
            return fn(path, *args), None
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            if not is_damage(exc):
                raise
            error = damage_message(exc)
    try:
        rec = recover(path, None, error)
    except (OSError, ValueError, sqlite3.Error) as exc:
        raise InputError(f"{os.path.basename(path)}: a damaged trackio store ({error or exc}); it could "
                         f"not be read page by page either ({exc})",
                         hint="restore it from a backup") from exc
    if rec.copy is None or not ({"metrics", "configs"} & set(rec.rows)):
        raise InputError(f"{os.path.basename(path)}: a damaged trackio store ({rec.cause}); none "
                         "of its runs could be read", hint=rec.hint)
    return fn(rec.copy, *args), rec


def _config_only(copy: str, have: set[str]) -> list[tuple[str, str]]:
    """Runs of a damaged database whose metrics rows are all lost but whose config row is not."""
    from .. import trackio

    try:
        with trackio.open_readonly(copy) as (conn, _):
            rows = conn.execute("SELECT run_id, run_name FROM configs ORDER BY id").fetchall()
    except sqlite3.Error:
        return []
    return [(str(rid), str(name)) for rid, name in rows
            if rid is not None and name is not None and str(rid) not in have]


def _damage_notes(rec: Any, run_id: str) -> list[str]:
    if rec is None:
        return []
    notes = [f"{rec.note(('metrics', 'configs'))} — {rec.hint}"]
    lost = rec.lost_by("metrics", "run_id")[run_id]
    unnamed = rec.lost["metrics"].unnamed if "metrics" in rec.lost else 0
    if lost:
        notes.append(f"this run lost {lost} logged row(s) of metrics to the damage")
    if unnamed:
        notes.append(f"{'it' if lost else 'this run'} may have lost more: about {unnamed} "
                     "logged row(s) lost with the damaged pages name no run")
    if rec.lost_by("configs", "run_id")[run_id] or "configs" not in rec.rows:
        notes.append("its config row is lost to the damage")
    return notes


def claim(folder: LayoutFolder) -> Claimed | None:
    if not any(f.endswith((".db", ".parquet")) for f in folder.files):
        return None
    runs = _runs(folder.path, folder.files)
    # a damaged database none of whose runs reads is said among the files not read, not a run
    unread = {r.path: r.reason for r in runs if r.sniffs.get("damaged")}
    runs = [r for r in runs if not r.sniffs.get("damaged")]
    return Claimed(runs, unread=unread) if runs or unread else None


def claim_file(path: str) -> list[LayoutRun] | None:
    if not path.endswith((".db", ".parquet")):
        return None
    return _runs(os.path.dirname(path), [os.path.basename(path)]) or None


def _trackio_parts(spec: LayoutRun) -> tuple[str, str, bool]:
    path = spec.files[0]
    return path, str(spec.sniffs["run_id"]), path.endswith(".db")


def meta(spec: LayoutRun) -> Meta:
    from .. import trackio

    if spec.sniffs.get("damaged"):
        path = spec.files[0]
        raise InputError(f"{os.path.basename(path)}: {spec.reason}; none of its runs could be "
                         "read", hint=_read(path, trackio.db_runs)[1].hint)
    path, run_id, is_db = _trackio_parts(spec)
    rec = None
    if is_db:
        (config, meta, notes), rec = _read(path, trackio.db_config, run_id)
    else:
        config, meta, notes = trackio.parquet_config(path, run_id)
    out = Meta(config=config, notes=notes + _damage_notes(rec, run_id),
               meta={"trackio_run_id": run_id, **meta})
    label = spec.path.rsplit("#", 1)[1]
    out.arm = strip_seed(label)
    return out


def history(spec: LayoutRun) -> tuple[pd.DataFrame, list[str]]:
    from .. import trackio

    path, run_id, is_db = _trackio_parts(spec)
    if not is_db:
        return trackio.parquet_history(path, run_id)
    (frame, notes), rec = _read(path, trackio.db_history, run_id)
    return frame, notes + _damage_notes(rec, run_id)
