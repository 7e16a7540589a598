"""Read an MLflow sqlite database store directly: read-only SQL, no mlflow package, no writes.

The database is opened through a `file:…?mode=ro` URI, so sqlite can neither create nor change a
file (MLflow's own client would run its schema checks and may create the Default experiment).
MLflow keeps a logged NaN as `value=0, is_nan=1` and clamps ±inf to ±max-float; both are turned
back into what the user logged. Points come in MLflow's own order for a key — timestamp, then
step, then value — exactly what `MlflowClient.get_metric_history` returns.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

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

_ROW = np.dtype([("value", "f8"), ("ts", "i8"), ("step", "i8"), ("is_nan", "i8")])
_RUN_COLUMNS = ("run_uuid", "experiment_id", "name", "status", "start_time", "end_time",
                "lifecycle_stage", "artifact_uri", "user_id")


class SqliteReader:
    """Experiments, runs and full metric histories of one MLflow sqlite database."""

    kind = "sqlite"

    def __init__(self, path: str) -> None:
        self.path = path
        try:
            self.conn = sqlite3.connect(sqlite_ro_uri(path), uri=True, check_same_thread=False)
            with self._errors():
                tables = {r[0] for r in self.conn.execute(
                    "SELECT name FROM sqlite_master WHERE type='table'")}
                indexes = {r[0] for r in self.conn.execute(
                    "SELECT name FROM sqlite_master WHERE type='index' AND tbl_name='metrics'")}
                self.run_columns = {r[1] for r in self.conn.execute("PRAGMA table_info(runs)")}
        except sqlite3.Error as exc:
            raise InputError(f"cannot open {path} as an sqlite database: {exc}") from exc
        missing = {"runs", "metrics", "experiments", "params", "tags"} - tables
        if missing or "run_uuid" not in self.run_columns:
            raise InputError(
                f"{path} is not an MLflow database (missing: {', '.join(sorted(missing)) or 'runs.run_uuid'})",
                hint="give the sqlite file an MLflow tracking server or client wrote "
                "(--backend-store-uri sqlite:///…)",
            )
        self.has_latest = "latest_metrics" in tables
        # sqlite's planner (no ANALYZE statistics) picks the primary key, which starts with `key`
        # and so scans that key across every run; MLflow's run_uuid indexes are far better
        if "index_metrics_run_uuid_key_step" in indexes:
            self._by_run = " INDEXED BY index_metrics_run_uuid_key_step"
        elif "index_metrics_run_uuid" in indexes:
            self._by_run = " INDEXED BY index_metrics_run_uuid"
        else:
            self._by_run = ""

    def close(self) -> None:
        self.conn.close()

    @contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as exc:
            raise InputError(f"cannot read the MLflow database {self.path}: {exc}",
                             hint="the file may be damaged or not an MLflow database") from exc

    def _rows(self, sql: str, args: Sequence[object] = ()) -> list[tuple]:
        with self._errors():
            return self.conn.execute(sql, tuple(args)).fetchall()

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
            return self._select_runs("", ())
        if not experiment_ids:
            return []
        ids = list(experiment_ids)
        return self._select_runs(f"WHERE experiment_id IN ({','.join('?' * len(ids))})", ids)

    def run(self, run_id: str) -> RunRecord | None:
        found = self._select_runs("WHERE run_uuid = ?", [run_id])
        return found[0] if found else None

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
            v = math.nan if is_nan else float(value)
            latest[key] = math.copysign(math.inf, v) if abs(v) == np.finfo("float64").max else v
        return RunDetails({k: "" if v is None else str(v) for k, v in params.items()},
                          {k: "" if v is None else str(v) for k, v in tags.items()}, latest)

    # -- history --------------------------------------------------------------------------------
    def history(self, rec: RunRecord, keys: Sequence[str] | None
                ) -> tuple[HistoryColumns, list[str]]:
        if keys is None:
            names = sorted(r[0] for r in self._rows(
                f"SELECT DISTINCT key FROM metrics{self._by_run} WHERE run_uuid = ?", [rec.run_id]))
        else:
            names = sorted(set(keys))
        sql = (f"SELECT value, timestamp, step, is_nan FROM metrics{self._by_run} "
               "WHERE run_uuid = ? AND key = ?")
        arrays, used = [], []
        with self._errors():
            for key in names:
                rows = np.fromiter(self.conn.execute(sql, (rec.run_id, key)), dtype=_ROW)
                if len(rows):
                    # MLflow's order for a key: timestamp, step, value (NaN sorts as its stored 0)
                    rows = rows[np.lexsort((rows["value"], rows["step"], rows["ts"]))]
                    arrays.append(rows)
                    used.append(key)
        if not arrays:
            return HistoryColumns.empty(), []
        rows = arrays[0] if len(arrays) == 1 else np.concatenate(arrays)
        value = rows["value"].copy()
        value[rows["is_nan"] != 0] = np.nan
        notes = []
        restored = restore_inf(value)
        if restored:
            notes.append(inf_note(restored, "sqlite store"))
        codes = np.repeat(np.arange(len(used), dtype=np.int32), [len(a) for a in arrays])
        cols = HistoryColumns(rows["step"].astype("float64"), codes, used, value,
                              rows["ts"].astype("float64") / 1000.0)
        return cols, notes
