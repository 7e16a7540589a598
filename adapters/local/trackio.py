"""trackio projects: the project's SQLite database (`<project>.db`) and its Parquet export.

trackio keeps one database per project (`TRACKIO_DIR`, default `~/.cache/huggingface/trackio`):
table `metrics(run_id, timestamp, run_name, step, metrics)` with each log call's metrics as a JSON
object, and `configs(run_id, run_name, config)`. Its Parquet export (`export_to_parquet`, what a
Space syncs) writes `<project>.parquet` — the same rows with the JSON flattened into columns — and
`<project>_configs.parquet`. A run is addressed as `local:PROJECT.db#RUN_NAME`.

Read-only: without a write-ahead log the database is opened `immutable`; with one (a live run),
database and log are read from a private copy, since SQLite writes a `-shm` file even read-only.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from typing import Any

from rundiff_core import flatten, footer_has_columns, open_sqlite_readonly

from .common import iso_seconds
from .lazy import np, pd  # imported on first use: sniffing a project needs neither
from .sniff import _arrow_columns, points_frame, to_long

SQLITE_MAGIC = b"SQLite format 3\x00"
META_KEYS = ("_Username", "_Created", "_Group")
_NONFINITE = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}


def open_readonly(db: str) -> contextlib.AbstractContextManager[tuple[sqlite3.Connection, list[str]]]:
    """A connection that cannot change anything beside the database, plus notes."""
    return open_sqlite_readonly(db, tmp_prefix="rundiff-trackio-",
                                live_note="write-ahead log present (a live run): read from a private copy")


def is_trackio_db(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            if fh.read(16) != SQLITE_MAGIC:
                return False
        with open_readonly(path) as (conn, _):
            cols = {r[1] for r in conn.execute("PRAGMA table_info(metrics)")}
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    except (OSError, sqlite3.Error):
        return False
    return {"run_name", "step", "metrics", "timestamp"} <= cols and "configs" in tables


def is_trackio_parquet(path: str) -> bool:
    if not path.endswith(".parquet") or path.endswith(("_configs.parquet", "_system.parquet",
                                                       "_traces.parquet")):
        return False
    # the footer alone, with the standard library: sniffing imports no pyarrow
    return footer_has_columns(path, ("run_name", "step", "timestamp", "log_id")) is True


def _unique_names(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """(run_id, label): the run name, or the run id where two runs share a name."""
    counts: dict[str, int] = {}
    for _, name in pairs:
        counts[name] = counts.get(name, 0) + 1
    return [(rid, name if counts[name] == 1 else rid) for rid, name in pairs]


def db_runs(path: str) -> list[tuple[str, str]]:
    with open_readonly(path) as (conn, _):
        rows = conn.execute("SELECT run_id, run_name, MIN(id) FROM metrics GROUP BY run_id "
                            "ORDER BY MIN(id)").fetchall()
    return _unique_names([(str(r[0]), str(r[1])) for r in rows])


def parquet_runs(path: str) -> list[tuple[str, str]]:
    import pyarrow.parquet as pq

    t = pq.read_table(path, columns=["run_id", "run_name"] if "run_id" in pq.read_schema(path).names
                      else ["run_name"])
    names = t.column("run_name").to_pylist()
    ids = t.column("run_id").to_pylist() if "run_id" in t.column_names else names
    seen: dict[str, str] = {}
    for rid, name in zip(ids, names, strict=True):
        seen.setdefault(str(rid), str(name))
    return _unique_names(list(seen.items()))


def _split_config(cfg: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    meta = {k.lstrip("_").lower(): cfg[k] for k in META_KEYS if cfg.get(k) is not None}
    return {k: v for k, v in cfg.items() if k not in META_KEYS}, meta


def db_config(path: str, run_id: str) -> tuple[dict, dict, list[str]]:
    with open_readonly(path) as (conn, notes):
        row = conn.execute("SELECT config FROM configs WHERE run_id = ?", (run_id,)).fetchone()
    if row is None:
        return {}, {}, notes + ["no config row for this run"]
    try:
        cfg = json.loads(row[0])
    except (ValueError, TypeError):
        return {}, {}, notes + ["config row is not JSON; ignored"]
    config, meta = _split_config(cfg if isinstance(cfg, dict) else {})
    return config, meta, notes


def parquet_config(path: str, run_id: str) -> tuple[dict, dict, list[str]]:
    cfg_path = path[: -len(".parquet")] + "_configs.parquet"
    if not os.path.isfile(cfg_path):
        return {}, {}, [f"no {os.path.basename(cfg_path)} beside the export: config unknown"]
    import pyarrow.parquet as pq

    rows = pq.read_table(cfg_path).to_pylist()
    hit = next((r for r in rows if str(r.get("run_id")) == run_id or r.get("run_name") == run_id), None)
    if hit is None:
        return {}, {}, [f"{os.path.basename(cfg_path)} has no row for this run"]
    skip = {"id", "run_id", "run_name", "created_at"}
    config, meta = _split_config({k: v for k, v in hit.items() if k not in skip})
    return config, meta, [f"{os.path.basename(cfg_path)} → config"]


def db_history(path: str, run_id: str) -> tuple[pd.DataFrame, list[str]]:
    steps, keys, values, wall = [], [], [], []
    bad = media = 0
    with open_readonly(path) as (conn, notes):
        cur = conn.execute("SELECT step, timestamp, metrics FROM metrics WHERE run_id = ? "
                           "ORDER BY id", (run_id,))
        for step, ts, blob in cur:
            try:
                row = json.loads(blob)
            except (ValueError, TypeError):
                bad += 1
                continue
            if not isinstance(row, dict):
                bad += 1
                continue
            t = iso_seconds(ts)
            for k, v in flatten(row, sep="/").items():
                if isinstance(v, str) and v in _NONFINITE:  # trackio writes NaN/inf as strings
                    v = _NONFINITE[v]
                if isinstance(v, bool | int | float):
                    steps.append(float(step))
                    keys.append(k)
                    values.append(float(v))
                    wall.append(t)
                elif isinstance(v, dict | list) or (isinstance(v, str) and v):
                    media += 1
    if bad:
        notes.append(f"{bad} metrics row(s) whose JSON did not parse skipped")
    if media:
        notes.append(f"{media} non-numeric value(s) (media, tables, text) not loaded")
    notes.insert(0, f"trackio database {os.path.basename(path)}: metrics rows (JSON) → history, "
                    "x = step")
    return points_frame(steps, keys, values, wall, notes, os.path.basename(path))


def parquet_history(path: str, run_id: str) -> tuple[pd.DataFrame, list[str]]:
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    col = "run_id" if "run_id" in table.column_names else "run_name"
    mask = pc.equal(table.column(col), run_id)
    if col == "run_id" and not pc.any(mask).as_py():
        mask = pc.equal(table.column("run_name"), run_id)
    table = table.filter(mask)

    skip = {"id", "run_id", "run_name", "log_id", "space_id"}
    wall = np.array([iso_seconds(t) for t in table.column("timestamp").to_pylist()], dtype="float64")
    cols = _arrow_columns(table.select([c for c in table.column_names if c not in skip
                                        and c != "timestamp"]))
    frame, notes = to_long(cols, os.path.basename(path), step="step", described="trackio's "
                           "Parquet export")
    if len(frame):
        # each point's wall time: the row it came from (every key's rows are in file order)
        j = cols.names.index("step")
        step_ok = cols.valid[j]
        walls = [wall[cols.valid[i] & step_ok] for i, n in enumerate(cols.names) if n != "step"]
        frame["wall_time"] = np.concatenate(walls) if walls else frame["wall_time"]
    return frame, notes
