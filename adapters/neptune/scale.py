"""Read neptune-scale offline runs: `run_operations.sqlite3` of protobuf operation blobs.

Table `run_operations(sequence_id, timestamp, operation_type, operation, …)`: type 1 is a `Run`
(creation: run id, experiment, fork point, creation time), type 0 an `UpdateRunSnapshot` (one step
and timestamp, `assign` single values, `modify_sets` tags, `append` series points, `preview`).
Table `metadata(version, project, run_id)`. Decoding needs neptune-api's protobuf classes, the
`[neptune]` extra. Steps are `whole + micro·1e-6`, kept as floats.

Preview points are provisional in Neptune: a later point at the same step replaces them. rundiff
keeps what Neptune would show — the final point, else the last preview — and notes both counts.

Read-only: with no write-ahead log the database is opened `immutable` (no lock, no journal file);
a live or crashed run leaves a `-wal` file, and then database and log are copied to a private temp
folder first, because even a read-only SQLite connection writes the `-shm` index of a WAL database.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from typing import Any

import numpy as np
import pandas as pd

from rundiff_core import (
    InputError,
    MissingDependencyError,
    RunEvent,
    empty_history,
    open_sqlite_readonly,
)

from .attributes import RunData, backward_steps

INSTALL_HINT = "pip install 'rundiff[neptune]'"
UPDATE, CREATE = 0, 1


def proto():
    """neptune-api's ingest protobuf module, or a MissingDependencyError naming the extra."""
    try:
        from neptune_api.proto.neptune_pb.ingest.v1 import common_pb2
    except ModuleNotFoundError as exc:
        top = (exc.name or "").split(".")[0]
        if top in ("neptune_api", "google"):
            raise MissingDependencyError(
                "reading neptune-scale offline runs (run_operations.sqlite3) needs the neptune-api package",
                hint=INSTALL_HINT,
            ) from exc
        raise
    return common_pb2


def open_readonly(db: str) -> contextlib.AbstractContextManager[tuple[sqlite3.Connection, list[str]]]:
    """A connection that cannot change anything beside the database, plus notes."""
    return open_sqlite_readonly(db, tmp_prefix="rundiff-neptune-",
                                live_note="write-ahead log present (the run was live or did not close): read from a private copy")


def read_header(db: str) -> tuple[str | None, str | None]:
    """(project, run_id) from the metadata table, without decoding any operation."""
    try:
        with open_readonly(db) as (conn, _notes):
            row = conn.execute("SELECT project, run_id FROM metadata LIMIT 1").fetchone()
    except (sqlite3.Error, OSError):
        return None, None
    return (row[0], row[1]) if row else (None, None)


def _step(msg: Any) -> float:
    return float(msg.whole) + msg.micro / 1e6


def _ts(msg: Any) -> float:
    return msg.seconds + msg.nanos / 1e9


def _value(v: Any) -> tuple[str | None, Any]:
    """(kind, python value) of a protobuf Value."""
    kind = v.WhichOneof("value")
    if kind is None:
        return None, None
    if kind == "timestamp":
        import datetime as dt

        return kind, dt.datetime.fromtimestamp(_ts(v.timestamp), tz=dt.UTC).isoformat()
    if kind == "string_set":
        return kind, sorted(v.string_set.values)
    if kind in ("file_ref", "histogram"):
        return kind, None
    return kind, getattr(v, kind)


def read_sessions(dbs: list[str], run_id: str) -> RunData:
    """One run from one or more sessions (a resumed run writes a new database each time)."""
    pb = proto()
    from google.protobuf.message import DecodeError

    notes: list[str] = []
    events: list[RunEvent] = []
    atoms: dict[str, Any] = {}
    tags: set[str] = set()
    meta: dict[str, Any] = {"paths": dbs}
    keys: list[str] = []
    steps: list[float] = []
    values: list[float] = []
    times: list[float] = []
    preview: list[bool] = []
    skipped: dict[str, int] = {}
    undecodable = 0
    deleted_before = 0
    sessions = []
    for db in dbs:
        try:
            with open_readonly(db) as (conn, more):
                notes += more
                rows = conn.execute(
                    "SELECT sequence_id, timestamp, operation_type, operation FROM run_operations "
                    "ORDER BY sequence_id").fetchall()
                header = conn.execute("SELECT version, project, run_id FROM metadata LIMIT 1").fetchone()
                seq = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'run_operations'").fetchone()
                errors = _errors(conn)
        except (sqlite3.Error, OSError) as exc:
            raise InputError(f"{db} is not a readable neptune-scale database ({exc})",
                             hint="the file may be truncated; neptune-scale writes run_operations.sqlite3") from exc
        first_ts = rows[0][1] if rows else None
        sessions.append((first_ts if first_ts is not None else float("inf"), db, rows, header, seq, errors))
    sessions.sort(key=lambda s: s[0])
    for n, (first_ts, db, rows, header, seq, errors) in enumerate(sessions):
        if header:
            meta.setdefault("storage_version", header[0])
            meta.setdefault("project", header[1])
        if rows and rows[0][0] > 1:
            deleted_before += rows[0][0] - 1
        elif not rows and seq and seq[0]:
            deleted_before += int(seq[0])
        if n > 0 and first_ts != float("inf"):
            events.append(RunEvent("resume", time=first_ts / 1000.0, payload={"session": os.path.dirname(db)}))
        for error_type, count in errors:
            notes.append(f"the client recorded {count} {error_type} error(s) in {os.path.basename(os.path.dirname(db))}")
        for _seq_id, _ts_ms, op_type, blob in rows:
            try:
                if op_type == CREATE:
                    msg = pb.Run()
                    msg.ParseFromString(blob)
                    _create(msg, atoms, meta, n)
                    continue
                msg = pb.UpdateRunSnapshot()
                msg.ParseFromString(blob)
            except (DecodeError, TypeError):
                undecodable += 1
                continue
            for key, value in msg.assign.items():
                kind, py = _value(value)
                if kind is not None and py is not None:
                    atoms[key] = py
            for key, mod in msg.modify_sets.items():
                target = tags if key == "sys/tags" else None
                for item, action in mod.string.values.items():
                    current = target if target is not None else set(atoms.get(key) or [])
                    (current.add if action == pb.ADD else current.discard)(item)
                    if target is None:
                        atoms[key] = sorted(current)
            if not msg.append:
                continue
            step = _step(msg.step) if msg.HasField("step") else np.nan
            wall = _ts(msg.timestamp) if msg.HasField("timestamp") else np.nan
            is_preview = msg.HasField("preview") and msg.preview.is_preview
            for key, value in msg.append.items():
                kind = value.WhichOneof("value")
                if kind in ("float64", "int64"):
                    keys.append(key)
                    steps.append(step)
                    values.append(float(getattr(value, kind)))
                    times.append(wall)
                    preview.append(is_preview)
                else:
                    label = {"string": "string series", "histogram": "histogram series",
                             "file_ref": "file series"}.get(kind or "", f"{kind} series")
                    skipped[label] = skipped.get(label, 0) + 1
    if tags:
        atoms["sys/tags"] = sorted(tags)
    history, more = _history(keys, steps, values, times, preview)
    notes += more
    if undecodable:
        notes.append(f"{undecodable} operation(s) could not be decoded and were skipped")
    if deleted_before:
        notes.append(f"{deleted_before} operation(s) already synced to Neptune were deleted from the local "
                     "database by the client: the history here is only what was not yet synced")
    for label, count in sorted(skipped.items()):
        notes.append(f"not loaded (rundiff compares float series): {count} {label} point(s)")
    if len(sessions) > 1:
        notes.append(f"{len(sessions)} sessions of run {run_id} (resumed) merged in time order")
    return RunData("neptune-scale", run_id, atoms, notes, events, meta, history)


def _errors(conn: sqlite3.Connection) -> list[tuple[str, int]]:
    try:
        return conn.execute(
            "SELECT error_type, COUNT(*) FROM operation_errors GROUP BY error_type ORDER BY error_type").fetchall()
    except sqlite3.Error:
        return []


def _create(msg: Any, atoms: dict[str, Any], meta: dict[str, Any], session: int) -> None:
    """Run creation: id, experiment, creation time, fork point (first session wins)."""
    import datetime as dt

    if session == 0:
        if msg.HasField("creation_time"):
            atoms.setdefault("sys/creation_time",
                             dt.datetime.fromtimestamp(_ts(msg.creation_time), tz=dt.UTC).isoformat())
        if msg.experiment_id:
            atoms.setdefault("sys/experiment/name", msg.experiment_id)
        if msg.HasField("fork_point") and msg.fork_point.parent_run_id:
            meta["fork"] = {
                "parent": msg.fork_point.parent_run_id,
                "step": _step(msg.fork_point.step) if msg.fork_point.HasField("step") else None,
                "parent_project": msg.fork_point.parent_project or None,
            }
    atoms.setdefault("sys/custom_run_id", msg.run_id or msg.family or None)


def _history(keys, steps, values, times, preview) -> tuple[pd.DataFrame, list[str]]:
    if not keys:
        return empty_history(), []
    frame = pd.DataFrame({
        "step": np.asarray(steps, dtype="float64"),
        "key": pd.Categorical(keys),
        "value": np.asarray(values, dtype="float64"),
        "wall_time": np.asarray(times, dtype="float64"),
    })
    notes = []
    flags = np.asarray(preview, dtype=bool)
    if flags.any():
        # Neptune keeps, per key and step, the final point, else the latest preview.
        final_at = set(zip(frame["key"][~flags].astype(str), frame["step"][~flags], strict=True))
        idx = np.flatnonzero(flags)
        superseded = np.array([(str(frame["key"].iat[i]), frame["step"].iat[i]) in final_at for i in idx], dtype=bool)
        drop = set(idx[superseded].tolist())
        later = frame.iloc[idx[~superseded]].duplicated(subset=["key", "step"], keep="last")
        drop.update(idx[~superseded][later.to_numpy()].tolist())
        kept = int(flags.sum()) - len(drop)
        if drop:
            frame = frame.drop(index=sorted(drop)).reset_index(drop=True)
        notes.append(f"{len(drop)} preview point(s) replaced by a later value at the same step dropped; "
                     f"{kept} preview point(s) never finalised kept")
    back, back_keys = backward_steps(frame)
    if back:
        notes.append(f"{back} point(s) in {len(back_keys)} series have a step not above the previous one "
                     f"({', '.join(back_keys[:4])}); Neptune's server rejects those, rundiff keeps them")
    no_step = int(frame["step"].isna().sum())
    if no_step:
        notes.append(f"{no_step} point(s) without a step (step NaN)")
    return frame, notes
