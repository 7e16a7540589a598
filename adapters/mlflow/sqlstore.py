"""Read an MLflow sqlite database store directly: read-only SQL, no mlflow package, no writes.

The database is opened through a `file:…?mode=ro` URI, so sqlite can neither create nor change a
file (MLflow's own client would run its schema checks and may create the Default experiment).
MLflow keeps a logged NaN as `value=0, is_nan=1` and clamps ±inf to ±max-float; both are turned
back into what the user logged. Points come in MLflow's own order for a key — timestamp, then
step, then value — exactly what `MlflowClient.get_metric_history` returns.
"""

from __future__ import annotations

import math
import os
import sqlite3
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np

from rundiff_core import HistoryColumns, InputError

from .layout import sqlite_ro_uri
from .records import (
    RUN_NAME_TAG,
    ExperimentRecord,
    RunDetails,
    RunRecord,
    inf_note,
    restore_inf,
    status_name,
)
from .sqlite_salvage import damage_message, is_damage, quick_damage

_ROW = np.dtype([("value", "f8"), ("ts", "i8"), ("step", "i8"), ("is_nan", "i8")])
_RUN_COLUMNS = ("run_uuid", "experiment_id", "name", "status", "start_time", "end_time",
                "lifecycle_stage", "artifact_uri", "user_id")
_T = TypeVar("_T")
# what a recovered copy must hold for the queries below, when the damage took a table whole
_MINIMAL = {
    "experiments": "experiment_id, name, lifecycle_stage, artifact_location",
    "runs": ", ".join(_RUN_COLUMNS),
    "metrics": "key, value, timestamp, run_uuid, step, is_nan",
    "params": "key, value, run_uuid",
    "tags": "key, value, run_uuid",
}


# the tables this reader reads: all a damaged store's recovery needs to bring back
READ_TABLES = ("experiments", "runs", "metrics", "params", "tags", "latest_metrics")
_LOST = (("metrics", "metric point(s)"), ("params", "param(s)"), ("tags", "tag(s)"),
         ("latest_metrics", "latest value(s)"))


class SqliteReader:
    """Experiments, runs and full metric histories of one MLflow sqlite database.

    A damaged database (SQLite says "malformed" or "not a database", on opening or on any later
    query) is read from what `sqlite_salvage.recover` brings back of it: the queries run again on
    that private copy, every run and point still there is read, and each run says what the damage
    cost it (docs/adapters/mlflow.md, "A damaged database")."""

    kind = "sqlite"

    def __init__(self, path: str) -> None:
        self.path = path
        self.recovered: Any = None  # sqlite_salvage.Recovered once the file proved damaged
        self._switch = threading.Lock()
        try:
            self.conn = sqlite3.connect(sqlite_ro_uri(path), uri=True, check_same_thread=False)
            self._describe()
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            if not is_damage(exc):
                raise InputError(f"cannot open {path} as an sqlite database: {exc}") from exc
            self._salvage(damage_message(exc))
        if self.recovered is None:
            # damage a cheap look finds now: every run then says so, not only those read after
            # a query met it (a larger store's damage is met where its pages are read)
            said = quick_damage(path)
            if said is not None:
                self._salvage(said)
        missing = {"runs", "metrics", "experiments", "params", "tags"} - self.tables
        if self.recovered is None and (missing or "run_uuid" not in self.run_columns):
            raise InputError(
                f"{path} is not an MLflow database (missing: {', '.join(sorted(missing)) or 'runs.run_uuid'})",
                hint="give the sqlite file an MLflow tracking server or client wrote "
                "(--backend-store-uri sqlite:///…)",
            )

    def _describe(self) -> None:
        """The tables, the runs' columns and the metrics index to use, read from the schema."""
        self.tables = {r[0] for r in self.conn.execute(
            "SELECT name FROM sqlite_master WHERE type='table'")}
        indexes = {r[0] for r in self.conn.execute(
            "SELECT name FROM sqlite_master WHERE type='index' AND tbl_name='metrics'")}
        self.run_columns = {r[1] for r in self.conn.execute("PRAGMA table_info(runs)")}
        self.has_latest = "latest_metrics" in self.tables
        # sqlite's planner (no ANALYZE statistics) picks the primary key, which starts with `key`
        # and so scans that key across every run; MLflow's run_uuid indexes are far better
        if "index_metrics_run_uuid_key_step" in indexes:
            self._by_run = " INDEXED BY index_metrics_run_uuid_key_step"
        elif "index_metrics_run_uuid" in indexes:
            self._by_run = " INDEXED BY index_metrics_run_uuid"
        else:
            self._by_run = ""

    def _salvage(self, error: str) -> None:
        """Read from here on what can be read of the damaged file (a private copy)."""
        from .sqlite_salvage import recover

        name = os.path.basename(self.path)
        try:
            rec = recover(self.path, READ_TABLES, error)
        except (OSError, ValueError, sqlite3.Error) as exc:
            raise InputError(f"{name}: a damaged sqlite database ({error}); it could not be "
                             f"read page by page either ({exc})",
                             hint="restore it from a backup") from exc
        if rec.kind not in (None, "MLflow"):
            raise InputError(f"{name}: {rec.what()} ({rec.cause}), not an MLflow store",
                             hint=f"read it as what it is: rundiff ls local:{self.path}")
        what = "a damaged MLflow store"
        if rec.copy is None or not ({"runs", "metrics"} & set(rec.rows)):
            raise InputError(f"{name}: {what} ({rec.cause}); none of its runs could be read",
                             hint=rec.hint)
        missing = [t for t in _MINIMAL if t not in rec.rows]
        if missing:  # lost whole (its schema entry too): empty, so every query still runs
            conn = sqlite3.connect(rec.copy)
            try:
                for t in missing:
                    conn.execute(f"CREATE TABLE IF NOT EXISTS {t} ({_MINIMAL[t]})")
                conn.commit()
            finally:
                conn.close()
        conn = sqlite3.connect(sqlite_ro_uri(rec.copy), uri=True, check_same_thread=False)
        old, self.conn, self.recovered = getattr(self, "conn", None), conn, rec
        if old is not None:
            old.close()
        self._describe()
        if not self._orphan_ids() and not conn.execute("SELECT count(*) FROM runs").fetchone()[0]:
            raise InputError(f"{name}: {what} ({rec.cause}); none of its runs could be read",
                             hint=rec.hint)

    def close(self) -> None:
        self.conn.close()

    def _query(self, fn: Callable[[sqlite3.Connection], _T]) -> _T:
        """`fn(connection)`; a damaged file met on the way: again on what can be read of it."""
        try:
            return fn(self.conn)
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            if self.recovered is None and is_damage(exc):
                with self._switch:
                    if self.recovered is None:
                        self._salvage(damage_message(exc))
                try:
                    return fn(self.conn)
                except sqlite3.Error as again:
                    exc = again
            raise InputError(f"cannot read the MLflow database {self.path}: {exc}",
                             hint="the file may be damaged or not an MLflow database") from exc

    def _rows(self, sql: str, args: Sequence[object] = ()) -> list[tuple]:
        return self._query(lambda conn: conn.execute(sql, tuple(args)).fetchall())

    # -- a damaged store --------------------------------------------------------------------------
    def _orphan_ids(self) -> list[str]:
        """Run ids a damaged store still names (in metrics, params, tags, or by the runs index)
        whose row in `runs` is lost."""
        ids: set[str] = set()
        for table in ("metrics", "params", "tags", "latest_metrics"):
            if table in self.tables:
                ids |= {str(r[0]) for r in self.conn.execute(
                    f"SELECT DISTINCT run_uuid FROM {table} WHERE run_uuid IS NOT NULL")}
        if self.recovered is not None:
            ids |= {str(v) for v in self.recovered.lost_by("runs", "run_uuid")}
        have = {str(r[0]) for r in self.conn.execute("SELECT run_uuid FROM runs")}
        return sorted(ids - have)

    def _damage_notes(self, run_id: str, orphan: bool) -> list[str]:
        rec = self.recovered
        if rec is None:
            return []
        notes = [rec.note(READ_TABLES) + f" — {rec.hint}"]
        if orphan:
            notes.append("its row in the runs table is lost to the damage: status, times and "
                         "experiment unknown (its name from its tags); params, tags and points "
                         "as found")
        lost = [f"{rec.lost_by(t, 'run_uuid')[run_id]} {what}" for t, what in _LOST
                if rec.lost_by(t, "run_uuid")[run_id]]
        unnamed = [f"about {rec.lost[t].unnamed} {what}" for t, what in _LOST
                   if t in rec.lost and rec.lost[t].unnamed]
        if lost and unnamed:
            notes.append(f"this run lost at least {', '.join(lost)} to the damage (and may have "
                         f"lost more: {', '.join(unnamed)} lost with the damaged pages name no run)")
        elif lost:
            notes.append(f"this run lost {', '.join(lost)} to the damage")
        elif unnamed:
            notes.append(f"this run may have lost points to the damage: {', '.join(unnamed)} "
                         "lost with the damaged pages name no run")
        return notes

    # -- experiments and runs ---------------------------------------------------------------
    def experiments(self) -> list[ExperimentRecord]:
        rows = self._rows("SELECT experiment_id, name, lifecycle_stage, artifact_location "
                          "FROM experiments ORDER BY experiment_id")
        return [ExperimentRecord(str(i), str(n), str(s or "active"), a) for i, n, s, a in rows]

    def _select_runs(self, where: str, args: Sequence[object]) -> list[RunRecord]:
        cols = [c if c in self.run_columns else "NULL" for c in _RUN_COLUMNS]
        rows = self._rows(f"SELECT {', '.join(cols)} FROM runs {where}", args)
        out = []
        for rid, exp, name, status, start, end, stage, art, user in rows:
            out.append(RunRecord(
                run_id=str(rid), experiment_id=str(exp), name=name, status=status_name(status),
                start_time=start, end_time=end, lifecycle_stage=str(stage or "active"),
                artifact_uri=art, user_id=user,
            ))
        missing = [r for r in out if not r.name]
        if missing:  # very old databases kept the name only as a tag
            names = dict(self._rows(
                f"SELECT run_uuid, value FROM tags WHERE key=? AND run_uuid IN "
                f"({','.join('?' * len(missing))})", [RUN_NAME_TAG, *[r.run_id for r in missing]]))
            for r in missing:
                r.name = names.get(r.run_id)
        out.sort(key=lambda r: (r.start_time if r.start_time is not None else math.inf, r.run_id))
        return out

    def runs(self, experiment_ids: Sequence[str] | None = None) -> list[RunRecord]:
        if experiment_ids is None:
            return self._select_runs("", ()) + self._orphans(None)
        if not experiment_ids:
            return []
        ids = list(experiment_ids)
        return self._select_runs(f"WHERE experiment_id IN ({','.join('?' * len(ids))})", ids)

    def run(self, run_id: str) -> RunRecord | None:
        found = self._select_runs("WHERE run_uuid = ?", [run_id]) or self._orphans(run_id)
        return found[0] if found else None

    def _orphans(self, run_id: str | None) -> list[RunRecord]:
        """The runs of a damaged store whose row in `runs` is lost (named by what else holds
        them): no experiment, status unknown."""
        if self.recovered is None:
            return []
        ids = [i for i in self._query(lambda conn: self._orphan_ids())
               if run_id is None or i == run_id]
        if not ids:
            return []
        names = dict(self._rows(
            f"SELECT run_uuid, value FROM tags WHERE key=? AND run_uuid IN "
            f"({','.join('?' * len(ids))})", [RUN_NAME_TAG, *ids]))
        return [RunRecord(run_id=i, experiment_id="", name=names.get(i), status="UNKNOWN",
                          handle="orphan") for i in ids]

    def details(self, rec: RunRecord) -> RunDetails:
        params = dict(self._rows("SELECT key, value FROM params WHERE run_uuid = ?", [rec.run_id]))
        tags = dict(self._rows("SELECT key, value FROM tags WHERE run_uuid = ?", [rec.run_id]))
        if self.has_latest:
            rows = self._rows("SELECT key, value, is_nan FROM latest_metrics WHERE run_uuid = ?",
                              [rec.run_id])
        else:  # MLflow's rule: the point with the largest (step, timestamp, value)
            rows = self._rows(
                "SELECT key, value, is_nan FROM (SELECT key, value, is_nan, ROW_NUMBER() OVER "
                "(PARTITION BY key ORDER BY step DESC, timestamp DESC, value DESC) AS rn "
                f"FROM metrics{self._by_run} WHERE run_uuid = ?) WHERE rn = 1", [rec.run_id])
        latest: dict[str, float] = {}
        for key, value, is_nan in rows:
            try:
                v = math.nan if is_nan else float(value)
            except (TypeError, ValueError):  # a damaged store's garbled value
                continue
            latest[key] = math.copysign(math.inf, v) if abs(v) == np.finfo("float64").max else v
        return RunDetails({k: "" if v is None else str(v) for k, v in params.items()},
                          {k: "" if v is None else str(v) for k, v in tags.items()}, latest,
                          notes=self._damage_notes(rec.run_id, rec.handle == "orphan"))

    # -- history --------------------------------------------------------------------------------
    def history(self, rec: RunRecord, keys: Sequence[str] | None
                ) -> tuple[HistoryColumns, list[str]]:
        if keys is None:
            # a set: an index whose order damage broke hands DISTINCT a key twice
            names = sorted({r[0] for r in self._rows(
                f"SELECT DISTINCT key FROM metrics{self._by_run} WHERE run_uuid = ?", [rec.run_id])})
        else:
            names = sorted(set(keys))
        sql = (f"SELECT value, timestamp, step, is_nan FROM metrics{self._by_run} "
               "WHERE run_uuid = ? AND key = ?")
        garbled = [0]

        def read(conn: sqlite3.Connection) -> tuple[list[np.ndarray], list[str]]:
            arrays, used = [], []
            for key in names:
                got = conn.execute(sql, (rec.run_id, key)).fetchall()
                try:
                    rows = np.fromiter(got, dtype=_ROW, count=len(got))
                except (TypeError, ValueError):  # a damaged store's garbled row: that row only
                    ok = [r for r in got if _numeric(r)]
                    garbled[0] += len(got) - len(ok)
                    rows = np.fromiter(ok, dtype=_ROW, count=len(ok))
                if len(rows):
                    # MLflow's order for a key: timestamp, step, value (NaN sorts as its stored 0)
                    rows = rows[np.lexsort((rows["value"], rows["step"], rows["ts"]))]
                    arrays.append(rows)
                    used.append(key)
            return arrays, used

        arrays, used = self._query(read)
        notes = self._damage_notes(rec.run_id, rec.handle == "orphan")
        if garbled[0]:
            notes.append(f"{garbled[0]} point(s) whose stored values are garbled by the damage "
                         "skipped")
        if not arrays:
            return HistoryColumns.empty(), notes
        rows = arrays[0] if len(arrays) == 1 else np.concatenate(arrays)
        value = rows["value"].copy()
        value[rows["is_nan"] != 0] = np.nan
        restored = restore_inf(value)
        if restored:
            notes.append(inf_note(restored, "sqlite store"))
        codes = np.repeat(np.arange(len(used), dtype=np.int32), [len(a) for a in arrays])
        cols = HistoryColumns(rows["step"].astype("float64"), codes, used, value,
                              rows["ts"].astype("float64") / 1000.0)
        return cols, notes




def _numeric(row: tuple[Any, ...]) -> bool:
    value, ts, step, is_nan = row
    return (isinstance(value, int | float) and isinstance(ts, int) and isinstance(step, int)
            and isinstance(is_nan, int))
