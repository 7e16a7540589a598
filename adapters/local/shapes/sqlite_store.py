"""SQLite stores recognised by their schema, never by their name: an Optuna study store (every
trial a run, `local:PATH#<study>/<trial number>`) or any table of key/step/value rows (each run id
a run, or the file one run). A SQLite file that is neither — and is not a store another reader
owns (MLflow, trackio, neptune-scale) — is, given alone, one run with no points whose note says
"not understood: SQLite store with tables …"; in a folder walk it is left alone.

The decision is the 16-byte header (`SQLite format 3\\0`) and `sqlite_master` (plus `PRAGMA
table_info` of its tables): the layout's name globs (`*.db`, `*.sqlite`, …) only keep the walk
from opening every file. The database is opened `mode=ro&immutable=1` (nothing written, no lock,
no `-shm`); with a non-empty `-wal` (a live store) database and log are read from a private copy.

Optuna schemas read (optuna/storages/_rdb/alembic/versions): the current one (trial_values with
`objective` and `value_type`, trial_intermediate_values with `intermediate_value_type`,
study_directions), 2.4–2.x (no value types: ±3.4028e38, float32's limits, were the infinities),
and < 2.4 (`studies.direction`, `trials.value`, and `trial_values(step, value)` holding the
intermediate values; < 1.3 keeps the trial number in trial_system_attributes `_number`).

A damaged file (SQLite says "malformed" or "not a database", at its schema or at any later
query) is read from what `rundiff_adapters.mlflow.sqlite_salvage.recover` brings back of it — a
private copy of every table SQLite or its pages still read, which `connect` then opens in the
file's place: what reads is read, each run's notes say "a damaged Optuna store (SQLite's cause at
page N)" and what was lost (counted per table, and per trial where an index names the lost rows).
A damaged file none of whose runs reads is one line and a hint (`rundiff ls` exits 2).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sqlite3
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rundiff_core import Claimed, LayoutFolder, LayoutRun, SignatureNames

from ..common import Meta
from ..lazy import pd

LAYOUT = "sqlite-store"
SQLITE_MAGIC = b"SQLite format 3\x00"
# The cheap pre-filter (LayoutSpec.signature): which names are worth reading 16 bytes of.
SIGNATURE = ("*.db", "*.sqlite", "*.sqlite3", "*.db3", "*.sdb", "*.s3db", "*.sl3", "*.sqlitedb")
MAX_TABLES = 256  # schema rows looked at: a hostile file's thousands of tables are not walked
MAX_SHOWN = 8  # table names a "not understood" note lists
F32_MAX = 3.4028234663852886e38  # Optuna 2.x stored ±inf as float32's limits (no value_type)

# -- opening and the schema -----------------------------------------------------------------------


def is_sqlite(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(16) == SQLITE_MAGIC
    except OSError:
        return False


@contextlib.contextmanager
def connect(path: str) -> Iterator[tuple[sqlite3.Connection, list[str]]]:
    """A read-only connection that writes nothing beside the database, plus notes (a damaged
    file's: what was read of it, from a private copy)."""
    rec = _recovered(path)
    if rec is not None and rec.copy is not None:
        conn = sqlite3.connect(Path(rec.copy).absolute().as_uri() + "?mode=ro&immutable=1",
                               uri=True)
        try:
            yield conn, [_damage_note(rec)]
        finally:
            conn.close()
        return
    wal = path + "-wal"
    if os.path.exists(wal) and os.path.getsize(wal) > 0:
        from rundiff_core import open_sqlite_readonly

        with open_sqlite_readonly(path, tmp_prefix="rundiff-sqlite-",
                                  live_note="write-ahead log present (a live store): read from a "
                                  "private copy") as got:
            yield got
        return
    conn = sqlite3.connect(Path(path).absolute().as_uri() + "?mode=ro&immutable=1", uri=True)
    try:
        yield conn, []
    finally:
        conn.close()


class Schema:
    """A store's tables and their columns ({table: {column: declared type, upper-cased}})."""

    __slots__ = ("tables", "error", "more", "damaged")

    def __init__(self, tables: dict[str, dict[str, str]], error: str | None = None,
                 more: int = 0, damaged: Any = None) -> None:
        self.tables = tables
        self.error = error
        self.more = more  # tables beyond MAX_TABLES, not looked at
        self.damaged = damaged  # a damaged file: what sqlite_salvage.recover read of it

    def cols(self, table: str) -> dict[str, str]:
        return self.tables.get(table, {})

    def has(self, table: str, *cols: str) -> bool:
        got = self.tables.get(table)
        return got is not None and all(c in got for c in cols)

    def listing(self) -> str:
        names = sorted(self.tables)
        shown = ", ".join(names[:MAX_SHOWN])
        rest = len(names) - MAX_SHOWN + self.more
        return (shown or "none") + (f" and {rest} more" if rest > 0 else "")


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def read_schema(path: str) -> Schema | None:
    """The schema of a SQLite file (None: not one); an unreadable one has `error` set, a damaged
    one is read from what can be read of it (`damaged` set)."""
    if not is_sqlite(path) and _recovered(path) is None:
        return _damaged_header(path)
    try:
        got = _read_schema(path)
        got.damaged = _recovered(path)
        if got.damaged is None and owner(got) is None:  # another reader's store: its business
            from rundiff_adapters.mlflow.sqlite_salvage import quick_damage

            said = quick_damage(path)  # damage a cheap look finds: every run then says so
            if said is not None:
                return _damaged_schema(path, said)
        return got
    except (sqlite3.Error, OSError, ValueError) as exc:
        rec = _recovered(path)
        if rec is not None:  # damaged, and not even its schema could be read
            return Schema({}, error=f"{rec.what()} ({rec.cause})", damaged=rec)
        if _is_damage(exc):
            from rundiff_adapters.mlflow.sqlite_salvage import damage_message

            return _damaged_schema(path, damage_message(exc))
        return Schema({}, error=f"{type(exc).__name__}: {exc}".splitlines()[0][:200])


def _damaged_header(path: str) -> Schema | None:
    """A file whose first bytes are not SQLite's: a damaged SQLite file when its pages still hold
    a schema (None: not SQLite at all)."""
    try:
        if os.path.getsize(path) < 1024:
            return None
        from rundiff_adapters.mlflow.sqlite_salvage import table_names

        names, error = table_names(path)
    except (OSError, ValueError, sqlite3.Error):
        return None
    if not names or error is None:
        return None
    return _damaged_schema(path, error)


def _damaged_schema(path: str, error: str) -> Schema:
    """The schema of what could be read of a damaged file (`damaged` set; `error` when nothing).
    A damaged store another reader owns (MLflow, trackio, neptune-scale) is left to it unread."""
    from rundiff_adapters.mlflow.sqlite_salvage import Recovered, damaged_kind

    kind = None
    with contextlib.suppress(OSError, ValueError, sqlite3.Error):
        kind = damaged_kind(path)
    if kind in OWNED and _recovered(path) is None:
        return Schema({}, error=f"a damaged {kind} store ({error})",
                      damaged=Recovered(path, None, kind, error, "", {}, {}, 0, 0, []))
    rec = _recovered(path) or _salvage(path, error)
    if rec is not None and rec.copy is not None:
        with contextlib.suppress(sqlite3.Error, OSError, ValueError):
            got = _read_schema(path)
            got.damaged = rec
            return got
    why = f"{rec.what()} ({rec.cause})" if rec is not None else error
    return Schema({}, error=why, damaged=rec)


def _read_schema(path: str) -> Schema:
    with connect(path) as (conn, _):
        where = "WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        rows = conn.execute(f"SELECT name FROM sqlite_master {where} ORDER BY rowid LIMIT ?",
                            (MAX_TABLES,)).fetchall()
        more = 0
        if len(rows) == MAX_TABLES:
            more = conn.execute(f"SELECT count(*) FROM sqlite_master {where}").fetchone()[0] - MAX_TABLES
        tables: dict[str, dict[str, str]] = {}
        for (name,) in rows:
            if not isinstance(name, str):
                continue
            info = conn.execute(f"PRAGMA table_info({_quote(name)})").fetchall()
            tables[name] = {str(r[1]).lower(): str(r[2] or "").upper() for r in info}
    return Schema(tables, more=more)


# -- a damaged file: read from what can be read of it ----------------------------------------------
def _is_damage(exc: BaseException) -> bool:
    from rundiff_adapters.mlflow.sqlite_salvage import is_damage

    return is_damage(exc)


def _recovered(path: str) -> Any:
    """What was read of `path` once it proved damaged (None: it has not, or it changed since)."""
    from rundiff_adapters.mlflow.sqlite_salvage import recovered

    return recovered(path)


def _salvage(path: str, error: str) -> Any:
    from rundiff_adapters.mlflow.sqlite_salvage import recover

    try:
        return recover(path, None, error)
    except (OSError, ValueError, sqlite3.Error):
        return None


def _damage_note(rec: Any) -> str:
    return f"{rec.note()} — {rec.hint}"


def _retry_damaged(path: str, exc: BaseException) -> bool:
    """True when `exc` is damage first met now: the file is recovered, the caller reads again."""
    if not _is_damage(exc) or _recovered(path) is not None:
        return False
    from rundiff_adapters.mlflow.sqlite_salvage import damage_message

    rec = _salvage(path, damage_message(exc))
    return rec is not None and rec.copy is not None


# -- what a schema is ------------------------------------------------------------------------------
MLFLOW_TABLES = {"experiments", "runs", "metrics", "params", "tags"}
KEY_COLS = ("key", "metric", "metric_name", "metric_key", "name", "tag", "series")
STEP_COLS = ("step", "global_step", "iteration", "iter", "epoch", "timestep", "_step")
VALUE_COLS = ("value", "metric_value", "scalar_value", "simple_value", "val")
RUN_COLS = ("run_id", "run_uuid", "run", "run_name", "run_key", "trial_id", "trial", "job_id")
WALL_COLS = ("wall_time", "timestamp", "time", "ts", "logged_at", "created_at")


OWNED = ("MLflow", "trackio", "neptune-scale")  # damaged stores of these kinds: their readers'


def owner(schema: Schema) -> str | None:
    """The reader that owns a store this layout must leave alone (their readers win)."""
    names = set(schema.tables)
    if MLFLOW_TABLES <= names:
        return "an MLflow tracking database (the mlflow: adapter reads it)"
    if schema.has("metrics", "run_name", "step", "metrics") and "configs" in names:
        return "a trackio project database (the trackio layout reads it)"
    if "run_operations" in names:
        return "a neptune-scale run_operations database (the neptune: adapter reads it)"
    return None


def is_optuna(schema: Schema) -> bool:
    return (schema.has("studies", "study_id", "study_name")
            and schema.has("trials", "trial_id", "study_id", "state")
            and schema.has("trial_params", "trial_id", "param_name", "param_value", "distribution_json")
            and ("trial_values" in schema.tables or "trial_intermediate_values" in schema.tables))


def _affinity(decl: str) -> str:
    """SQLite's type affinity of a declared column type (https://sqlite.org/datatype3.html)."""
    if "INT" in decl:
        return "integer"
    if any(t in decl for t in ("CHAR", "CLOB", "TEXT")):
        return "text"
    if "BLOB" in decl:
        return "blob"
    if not decl:
        return "none"
    if any(t in decl for t in ("REAL", "FLOA", "DOUB")):
        return "real"
    return "numeric"


def _first(cols: dict[str, str], names: tuple[str, ...], ok: set[str]) -> str | None:
    return next((c for c in names if c in cols and _affinity(cols[c]) in ok), None)


def kv_tables(schema: Schema) -> list[dict[str, str | None]]:
    """Tables whose columns have a key/step/value shape: a text key column, a numeric step-like
    column and a numeric value column (declared types, or none), optionally a run id and a wall
    time. Each as {"table", "key", "step", "value", "run", "wall"}."""
    out: list[dict[str, str | None]] = []
    for table, cols in sorted(schema.tables.items()):
        key = _first(cols, KEY_COLS, {"text", "none"})
        step = _first(cols, STEP_COLS, {"integer", "numeric", "real", "none"})
        value = _first(cols, VALUE_COLS, {"integer", "numeric", "real", "none"})
        if not (key and step and value) or len({key, step, value}) < 3:
            continue
        run = next((c for c in RUN_COLS if c in cols and c not in (key, step, value)), None)
        wall = next((c for c in WALL_COLS if c in cols and c not in (key, step, value, run)
                     and _affinity(cols[c]) != "blob"), None)
        out.append({"table": table, "key": key, "step": step, "value": value, "run": run,
                    "wall": wall})
    return out


# -- claiming --------------------------------------------------------------------------------------


def _named(name: str) -> bool:
    return SignatureNames((name,)).match(SIGNATURE)


def file_runs(path: str, alone: bool) -> list[LayoutRun]:
    """The runs of one SQLite file; `alone` (the file was named by itself): a file that is no
    store this layout reads is one run whose note says so, instead of nothing."""
    schema = read_schema(path)
    if schema is None:
        return []
    if schema.error is not None:
        if schema.damaged is not None:
            if schema.damaged.kind in OWNED:
                return []  # its own reader says what is left of it
            return [_damaged(path, schema.damaged)] if alone else []
        why = f"SQLite header but the schema is unreadable ({schema.error})"
        return [_unknown(path, why)] if alone else []
    if owner(schema) is not None:
        return []
    try:
        if is_optuna(schema):
            runs = _optuna_runs(path, schema)
            if runs or not alone:
                return runs
            if schema.damaged is not None:
                return [_damaged(path, schema.damaged)]
            return [_empty(path, "Optuna study store with no trial")]
        found = kv_tables(schema)
        if found:
            runs = _kv_runs(path, found)
            if runs or not alone:
                return runs
            if schema.damaged is not None:
                return [_damaged(path, schema.damaged)]
            return [_empty(path, "key/step/value table(s) "
                           f"{', '.join(str(t['table']) for t in found)} with no run id")]
    except (sqlite3.Error, OSError, ValueError) as exc:
        if _retry_damaged(path, exc):
            return file_runs(path, alone)
        rec = _recovered(path)
        if rec is not None:
            return [_damaged(path, rec)] if alone else []
        why = f"SQLite store unreadable ({type(exc).__name__}: {exc})".splitlines()[0]
        return [_unknown(path, why)] if alone else []
    if schema.damaged is not None:
        return [_damaged(path, schema.damaged)] if alone else []
    if not alone:
        return []
    return [_unknown(path, f"SQLite store with tables {schema.listing()} "
                     "(neither an Optuna study store nor a key/step/value table)")]


def _empty(path: str, what: str) -> LayoutRun:
    """A store this layout reads, named alone, that holds no run yet: one run with no points."""
    return LayoutRun(path, LAYOUT, [path], f"{what} (nothing to read yet)", {"kind": "empty"})


def _damaged(path: str, rec: Any) -> LayoutRun:
    """A damaged SQLite file named alone none of whose runs reads: reading it is one line and a
    hint (its kind, SQLite's cause and where)."""
    why = f"{rec.what()} ({rec.cause})"
    return LayoutRun(path, LAYOUT, [path], why, {"kind": "damaged", "detail": why})


def _unknown(path: str, why: str) -> LayoutRun:
    """A SQLite file named alone that no reader here understands: one run with no points, whose
    reason and note say what the file is ("not understood: …")."""
    return LayoutRun(path, LAYOUT, [path], f"not understood: {why}", {"kind": "unknown", "detail": why})


def claim(folder: LayoutFolder) -> Claimed | None:
    stores = [f for f in folder.files if _named(f)]
    if not stores:
        return None
    runs: list[LayoutRun] = []
    read: set[str] = set()
    unread: dict[str, str] = {}
    for name in stores:
        path = folder.join(name)
        got = file_runs(path, alone=True)
        if got and got[0].sniffs.get("kind") in ("optuna", "kv"):
            runs += got
            read.add(name)
        elif got and got[0].sniffs.get("kind") in ("unknown", "damaged"):
            unread[path] = got[0].sniffs["detail"]
    if runs:
        # the logs beside a study store are still the folder's runs (what `files` would find)
        from .files import sniff_files

        runs += sniff_files(folder.path, [f for f in folder.files if f not in read])
    # without runs the folder goes on to the next layout; the files not understood are said
    return Claimed(runs, unread=unread) if runs or unread else None


def claim_file(path: str) -> list[LayoutRun] | None:
    if not _named(os.path.basename(path)):
        return None
    return file_runs(path, alone=True) or None


def meta(run: LayoutRun) -> Meta:
    kind = run.sniffs.get("kind")
    if kind == "damaged":
        _nothing_read(run)
    for attempt in (0, 1):
        try:
            if kind == "optuna":
                return _optuna_meta(run)
            if kind == "kv":
                return _kv_meta(run)
        except (sqlite3.Error, OSError, ValueError) as exc:  # damaged past its schema, or changed
            if attempt == 0 and _retry_damaged(run.files[0], exc):
                continue
            return Meta(notes=[_unreadable(run, exc)])
        break
    return Meta(notes=[f"{os.path.basename(run.files[0])}: {run.reason}; nothing read"])


def history(run: LayoutRun) -> tuple[pd.DataFrame, list[str]]:
    import rundiff_core

    kind = run.sniffs.get("kind")
    for attempt in (0, 1):
        try:
            if kind == "optuna":
                return _optuna_history(run)
            if kind == "kv":
                return _kv_history(run)
        except (sqlite3.Error, OSError, ValueError) as exc:
            if attempt == 0 and _retry_damaged(run.files[0], exc):
                continue
            return rundiff_core.empty_history(), [_unreadable(run, exc)]
        break
    return rundiff_core.empty_history(), []


def _nothing_read(run: LayoutRun) -> None:
    """A damaged file none of whose runs reads: one line and the hint that fits its damage."""
    from rundiff_core import InputError

    path = run.files[0]
    rec = _recovered(path)
    what = run.sniffs.get("detail") or "a damaged SQLite file"
    lost = [n for n in (rec.table_note(t) for t in sorted(rec.lost)) if n] if rec else []
    said = f" ({'; '.join(lost[:2])})" if lost else ""
    raise InputError(f"{os.path.basename(path)}: {what}; none of its runs could be read{said}",
                     hint=rec.hint if rec is not None and rec.hint else
                     "restore it from a backup, or let `sqlite3 FILE .recover` rebuild a copy")


def _unreadable(run: LayoutRun, exc: BaseException) -> str:
    said = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
    return f"{os.path.basename(run.files[0])}: unreadable past its schema ({said}); nothing read"


# -- a per-database cache: a store is read once per command, whatever number of runs it holds -----
_LOCK = threading.Lock()
_CACHE: dict[tuple[Any, ...], Any] = {}
_CACHE_SIZE = 8


def _stat_key(path: str, *more: Any) -> tuple[Any, ...]:
    st = os.stat(path)
    return (os.path.abspath(path), st.st_size, st.st_mtime_ns, *more)


def _cached(key: tuple[Any, ...], build: Any) -> Any:
    with _LOCK:
        if key in _CACHE:
            return _CACHE[key]
    value = build()
    with _LOCK:
        if len(_CACHE) >= _CACHE_SIZE:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[key] = value
    return value


class _Grouped:
    """Rows of one table grouped by run: the first run asked is read alone (an index, or one
    scan), a second run of the same table reads the whole table once for every run after it
    (`ls` and `rank` read every trial; `local:DB#study/3` reads one)."""

    def __init__(self) -> None:
        self.asked: set[Any] = set()
        self.groups: dict[Any, list[tuple[Any, ...]]] | None = None


def _grouped_rows(path: str, table_key: tuple[Any, ...], run_value: Any, one: Any,
                  every: Any) -> tuple[list[tuple[Any, ...]], list[str]]:
    """`one(conn, run_value)` → that run's rows; `every(conn)` → (run value, *row) for all."""
    state = _cached(_stat_key(path, "grouped", *table_key), _Grouped)
    with _LOCK:
        state.asked.add(run_value)
        groups, whole = state.groups, len(state.asked) > 1
    if groups is not None:
        return groups.get(run_value, []), []
    with connect(path) as (conn, notes):
        if not whole:
            return one(conn, run_value), notes
        built: dict[Any, list[tuple[Any, ...]]] = {}
        for row in every(conn):
            built.setdefault(row[0], []).append(row[1:])
    with _LOCK:
        state.groups = built
    return built.get(run_value, []), notes


# -- Optuna ----------------------------------------------------------------------------------------
STATUS = {"COMPLETE": "finished", "FAIL": "crashed", "RUNNING": "running", "PRUNED": "finished",
          "WAITING": "unknown"}
GOALS = {"MINIMIZE": "min", "MAXIMIZE": "max"}
INT_DISTRIBUTIONS = {"IntDistribution", "IntUniformDistribution", "IntLogUniformDistribution"}
FLOAT_DISTRIBUTIONS = {"FloatDistribution", "UniformDistribution", "LogUniformDistribution",
                       "DiscreteUniformDistribution"}


def _trial_index(conn: sqlite3.Connection, schema: Schema) -> list[tuple[int, str, int, int]]:
    """(study_id, study_name, trial_id, number) of every trial, by study then number. Optuna <
    1.3 kept the number in trial_system_attributes `_number`; without either, the trial's order
    in its study (what Optuna numbers it)."""
    studies = dict(conn.execute("SELECT study_id, study_name FROM studies"))
    if schema.has("trials", "number"):
        rows = conn.execute("SELECT trial_id, study_id, number FROM trials ORDER BY trial_id").fetchall()
    else:
        numbers: dict[int, Any] = {}
        if schema.has("trial_system_attributes", "trial_id", "key", "value_json"):
            for tid, raw in conn.execute("SELECT trial_id, value_json FROM trial_system_attributes "
                                         "WHERE key = '_number'"):
                with contextlib.suppress(ValueError, TypeError):
                    numbers[tid] = int(json.loads(raw))
        rows = [(tid, sid, numbers.get(tid)) for tid, sid in
                conn.execute("SELECT trial_id, study_id FROM trials ORDER BY trial_id")]
    seen: dict[int, int] = {}
    out = []
    for tid, sid, number in rows:
        if sid not in studies:
            continue  # a trial of no study (deleted study): not a run of any
        order = seen.get(sid, 0)
        seen[sid] = order + 1
        n = number if isinstance(number, int) else order
        out.append((sid, str(studies[sid]), tid, n))
    out.sort(key=lambda r: (r[0], r[3], r[2]))
    return out


def _optuna_version(conn: sqlite3.Connection, schema: Schema) -> tuple[str | None, int | None]:
    if not schema.has("version_info", "library_version", "schema_version"):
        return None, None
    row = conn.execute("SELECT library_version, schema_version FROM version_info LIMIT 1").fetchone()
    return (str(row[0]) if row and row[0] is not None else None,
            row[1] if row and isinstance(row[1], int) else None)


def _optuna_runs(path: str, schema: Schema) -> list[LayoutRun]:
    with connect(path) as (conn, _):
        index = _trial_index(conn, schema)
        version, _ = _optuna_version(conn, schema)
    n_studies = len({sid for sid, *_ in index})
    reason = (f"Optuna study store ({n_studies} stud{'y' if n_studies == 1 else 'ies'}, "
              f"{len(index)} trial(s){f'; Optuna {version}' if version else ''})")
    if not index:
        return []
    return [LayoutRun(f"{path}#{name}/{number}", LAYOUT, [path], reason,
                      {"kind": "optuna", "study_id": sid, "study": name, "trial_id": tid,
                       "number": number, "run_id": f"{name}/{number}"})
            for sid, name, tid, number in index]


def _json(raw: Any) -> Any:
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except (ValueError, TypeError):
        return raw


def _clip_inf(v: float) -> float:
    """Optuna 2.x's stored ±inf (float32's limits; its 3.0 migration reads them back so)."""
    if math.isclose(abs(v), F32_MAX, rel_tol=1e-5):
        return math.copysign(math.inf, v)
    return v


def _stored_value(value: Any, kind: Any, typed: bool) -> float:
    """A stored objective or intermediate value: `value_type` INF_POS/INF_NEG/NAN, else the
    number (None: NaN); without a type column, Optuna 2.x's clipped infinities."""
    if typed:
        if kind == "INF_POS":
            return math.inf
        if kind == "INF_NEG":
            return -math.inf
        if kind == "NAN":
            return math.nan
    if value is None:
        return math.nan
    try:
        v = float(value)
    except (TypeError, ValueError):
        return math.nan
    return v if typed else _clip_inf(v)


def decode_param(value: Any, distribution_json: Any) -> tuple[Any, str]:
    """A trial_params row as the trial saw it: a categorical's choice (the stored float is its
    index into `choices`), an int distribution's int, a float's float; with the kind said."""
    dist = _json(distribution_json)
    if not isinstance(dist, dict):
        return _number(value), "unknown distribution"
    if "name" in dist:
        name, attrs = dist.get("name"), dist.get("attributes") or {}
    else:  # the abbreviated format: {"type": "categorical" | "int" | "float", ...}
        kind = dist.get("type")
        name = {"categorical": "CategoricalDistribution", "int": "IntDistribution",
                "float": "FloatDistribution"}.get(kind)
        attrs = dist
    if name == "CategoricalDistribution":
        choices = attrs.get("choices") if isinstance(attrs, dict) else None
        f = _number(value)
        if isinstance(choices, list) and isinstance(f, float) and f.is_integer() and \
                0 <= int(f) < len(choices):
            return choices[int(f)], "categorical"
        return f, "categorical (index out of its choices: kept as stored)"
    if name in INT_DISTRIBUTIONS:
        f = _number(value)
        return (int(f) if isinstance(f, float) and math.isfinite(f) else f), "int"
    if name in FLOAT_DISTRIBUTIONS:
        return _number(value), "float"
    return _number(value), f"unknown distribution {name!r}"


def _number(value: Any) -> Any:
    if value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return value


def _is_scalar(v: Any) -> bool:
    return v is None or isinstance(v, str | int | float | bool)


class _Study:
    __slots__ = ("name", "directions", "direction_source", "names", "names_source", "user_attrs")

    def __init__(self, name: str) -> None:
        self.name = name
        self.directions: list[str] = []
        self.direction_source = ""
        self.names: list[str] | None = None
        self.names_source = ""
        self.user_attrs: dict[str, Any] = {}

    def keys(self, n: int | None = None) -> list[str]:
        """The summary/history key of each objective: the names the study gives, else `value`
        (one objective) or `value_0`, `value_1`, …"""
        n = max(n or 0, len(self.directions), 1)
        if self.names is not None and len(self.names) == n:
            return list(self.names)
        return ["value"] if n == 1 else [f"value_{i}" for i in range(n)]


class _Trial:
    __slots__ = ("study_id", "state", "start", "complete", "values", "params", "param_kinds",
                 "user_attrs", "system_attrs", "heartbeat")

    def __init__(self, study_id: int, state: str, start: Any, complete: Any) -> None:
        self.study_id = study_id
        self.state = state
        self.start = start
        self.complete = complete
        self.values: dict[int, float] = {}
        self.params: dict[str, Any] = {}
        self.param_kinds: dict[str, str] = {}
        self.user_attrs: dict[str, Any] = {}
        self.system_attrs: dict[str, Any] = {}
        self.heartbeat: Any = None


class _Store:
    """Everything of an Optuna store but the intermediate values (read per trial)."""

    def __init__(self) -> None:
        self.studies: dict[int, _Study] = {}
        self.trials: dict[int, _Trial] = {}
        self.version: str | None = None
        self.schema_version: int | None = None
        self.notes: list[str] = []
        self.schema: Schema | None = None
        self.values_from = "trial_values"  # where the final values were read


def _metric_names(attrs: dict[str, Any], n: int) -> tuple[list[str] | None, str]:
    """Objective names the study declares: Optuna ≥ 3.2's `study:metric_names` system attr, else
    a user attr `metric_names` (a list) or, for one objective, `metric_name`/`metric`/`objective`."""
    for where, key in (("system", "study:metric_names"), ("user", "metric_names"),
                       ("user", "metric_name"), ("user", "metric"), ("user", "objective")):
        got = attrs.get((where, key))
        names = [got] if isinstance(got, str) else got
        if isinstance(names, list) and names and all(isinstance(x, str) and x.strip() for x in names) \
                and len(set(names)) == len(names) and (n == 0 or len(names) == n):
            return [x.strip() for x in names], f"study {where} attr {key}"
    return None, ""


def _load_store(path: str) -> _Store:
    schema = read_schema(path)
    if schema is None or schema.error is not None:
        raise ValueError(f"{os.path.basename(path)}: no longer a readable SQLite store")
    store = _Store()
    store.schema = schema
    with connect(path) as (conn, notes):
        store.notes += notes
        store.version, store.schema_version = _optuna_version(conn, schema)
        for sid, name in conn.execute("SELECT study_id, study_name FROM studies"):
            store.studies[sid] = _Study(str(name))
        if schema.has("study_directions", "study_id", "objective", "direction"):
            for sid, _obj, d in conn.execute("SELECT study_id, objective, direction FROM "
                                             "study_directions ORDER BY study_id, objective"):
                if sid in store.studies:
                    store.studies[sid].directions.append(str(d))
                    store.studies[sid].direction_source = "optuna study_directions"
        elif schema.has("studies", "direction"):
            for sid, d in conn.execute("SELECT study_id, direction FROM studies"):
                store.studies[sid].directions = [str(d)]
                store.studies[sid].direction_source = "optuna studies.direction (Optuna < 2.4)"
        attrs: dict[int, dict[tuple[str, str], Any]] = {}
        for where in ("system", "user"):
            table = f"study_{where}_attributes"
            if schema.has(table, "study_id", "key", "value_json"):
                for sid, key, raw in conn.execute(f"SELECT study_id, key, value_json FROM {table}"):
                    attrs.setdefault(sid, {})[(where, str(key))] = _json(raw)
        for sid, study in store.studies.items():
            mine = attrs.get(sid, {})
            study.names, study.names_source = _metric_names(mine, len(study.directions))
            study.user_attrs = {k: v for (w, k), v in mine.items() if w == "user" and _is_scalar(v)}
        cols = schema.cols("trials")
        start = "datetime_start" if "datetime_start" in cols else "NULL"
        complete = "datetime_complete" if "datetime_complete" in cols else "NULL"
        for tid, sid, state, t0, t1 in conn.execute(
                f"SELECT trial_id, study_id, state, {start}, {complete} FROM trials"):
            store.trials[tid] = _Trial(sid, str(state), t0, t1)
        _load_values(conn, schema, store)
        for tid, name, value, dist in conn.execute(
                "SELECT trial_id, param_name, param_value, distribution_json FROM trial_params "
                "ORDER BY param_id"):
            trial = store.trials.get(tid)
            if trial is not None and name is not None:
                trial.params[str(name)], trial.param_kinds[str(name)] = decode_param(value, dist)
        for where in ("user", "system"):
            table = f"trial_{where}_attributes"
            if schema.has(table, "trial_id", "key", "value_json"):
                for tid, key, raw in conn.execute(f"SELECT trial_id, key, value_json FROM {table} "
                                                  "ORDER BY rowid"):
                    trial = store.trials.get(tid)
                    if trial is not None:
                        getattr(trial, f"{where}_attrs")[str(key)] = _json(raw)
        if schema.has("trial_heartbeats", "trial_id", "heartbeat"):
            for tid, beat in conn.execute("SELECT trial_id, heartbeat FROM trial_heartbeats"):
                if tid in store.trials:
                    store.trials[tid].heartbeat = beat
    return store


def _load_values(conn: sqlite3.Connection, schema: Schema, store: _Store) -> None:
    """Each trial's final value(s): trial_values by objective (≥ 2.4), else `trials.value`."""
    if schema.has("trial_values", "trial_id", "objective", "value"):
        typed = "value_type" in schema.cols("trial_values")
        kind = "value_type" if typed else "NULL"
        for tid, obj, value, vt in conn.execute(
                f"SELECT trial_id, objective, value, {kind} FROM trial_values"):
            trial = store.trials.get(tid)
            if trial is not None and isinstance(obj, int):
                trial.values[obj] = _stored_value(value, vt, typed)
    elif schema.has("trials", "value"):
        store.values_from = "trials.value (Optuna < 2.4)"
        for tid, value in conn.execute("SELECT trial_id, value FROM trials"):
            if value is not None and tid in store.trials:
                store.trials[tid].values[0] = _stored_value(value, None, False)


def _store(path: str) -> _Store:
    return _cached(_stat_key(path, "optuna"), lambda: _load_store(path))


def _intermediate_source(schema: Schema) -> tuple[str, str, str, str] | None:
    """(table, step column, value column, value-type column or NULL) of the intermediate values:
    trial_intermediate_values (≥ 2.4), else the old trial_values(step, value)."""
    if schema.has("trial_intermediate_values", "trial_id", "step", "intermediate_value"):
        cols = schema.cols("trial_intermediate_values")
        kind = "intermediate_value_type" if "intermediate_value_type" in cols else "NULL"
        return "trial_intermediate_values", "step", "intermediate_value", kind
    if schema.has("trial_values", "trial_id", "step", "value") and \
            "objective" not in schema.cols("trial_values"):
        return "trial_values", "step", "value", "NULL"
    return None


def _intermediates(path: str, schema: Schema, trial_id: int) -> tuple[list[tuple[Any, ...]],
                                                                      list[str], str | None]:
    src = _intermediate_source(schema)
    if src is None:
        return [], [], None
    table, step, value, kind = src
    select = f"SELECT {step}, {value}, {kind} FROM {table}"

    def one(conn: sqlite3.Connection, tid: int) -> list[tuple[Any, ...]]:
        return conn.execute(f"{select} WHERE trial_id = ? ORDER BY {step}", (tid,)).fetchall()

    def every(conn: sqlite3.Connection) -> Iterator[tuple[Any, ...]]:
        return conn.execute(f"SELECT trial_id, {step}, {value}, {kind} FROM {table} "
                            f"ORDER BY trial_id, {step}")

    rows, notes = _grouped_rows(path, (table,), trial_id, one, every)
    return rows, notes, table


def _trial_of(run: LayoutRun) -> tuple[_Store, _Trial, _Study]:
    store = _store(run.files[0])
    tid = run.sniffs["trial_id"]
    trial = store.trials.get(tid)
    study = store.studies.get(run.sniffs["study_id"])
    if trial is None or study is None:
        raise ValueError(f"trial {run.sniffs['run_id']} is no longer in {run.files[0]}")
    return store, trial, study


def _seconds(a: Any, b: Any) -> float | None:
    try:
        return (datetime.fromisoformat(str(b)) - datetime.fromisoformat(str(a))).total_seconds()
    except (TypeError, ValueError):
        return None


def _optuna_meta(run: LayoutRun) -> Meta:
    store, trial, study = _trial_of(run)
    name, number = run.sniffs["study"], run.sniffs["number"]
    base = os.path.basename(run.files[0])
    out = Meta(notes=list(store.notes))
    version = f"Optuna {store.version}" if store.version else "an Optuna version it does not record"
    out.notes.append(f"{base}: Optuna study store written by {version}; study {name!r}, trial "
                     f"{number} (state {trial.state})")
    out.config = dict(trial.params)
    if trial.params:
        kinds: dict[str, list[str]] = {}
        for p, k in trial.param_kinds.items():
            kinds.setdefault(k, []).append(p)
        said = "; ".join(f"{k}: {', '.join(ps)}" for k, ps in kinds.items())
        out.notes.append(f"trial_params → config ({said}; categorical choices decoded from "
                         "distribution_json, int distributions as ints)")
    scalars = {k: v for k, v in trial.user_attrs.items() if _is_scalar(v)}
    if scalars:
        out.config["user_attrs"] = scalars
        out.notes.append(f"trial user attrs → config user_attrs.* ({', '.join(scalars)})")
    skipped = [k for k in trial.user_attrs if k not in scalars]
    if skipped:
        out.notes.append(f"trial user attrs not scalar, not read: {', '.join(skipped)}")
    keys = study.keys(len(trial.values) if trial.values else None)
    if trial.values:
        out.summary = {keys[i] if i < len(keys) else f"value_{i}": v
                       for i, v in sorted(trial.values.items())}
        out.notes.append(f"{store.values_from} → summary {', '.join(out.summary)} (the final objective "
                         f"value{'s' if len(out.summary) > 1 else ''})")
    if study.names is not None:
        out.notes.append(f"objective name{'s' if len(study.names) > 1 else ''} "
                         f"{', '.join(study.names)} from the {study.names_source}")
    for i, d in enumerate(study.directions):
        if i >= len(keys):
            break
        if d in GOALS:
            out.goals[keys[i]] = GOALS[d]
            out.goal_sources[keys[i]] = study.direction_source
        else:
            out.notes.append(f"objective {keys[i]}: direction {d} declared: no goal")
    if out.goals:
        out.meta["goals"] = {k: {"goal": g, "source": out.goal_sources[k], "headline": k == keys[0]}
                             for k, g in out.goals.items()}
        out.notes.append("direction(s) declared by the study: " + ", ".join(
            f"{k} {g}" for k, g in out.goals.items()) + f" ({study.direction_source})")
    out.status = STATUS.get(trial.state, "unknown")
    _state_notes(out, trial, store, run)
    _trial_losses(out, run)
    out.meta.update({
        "optuna_study": name, "optuna_trial": number, "optuna_trial_id": run.sniffs["trial_id"],
        "optuna_state": trial.state, "optuna_directions": list(study.directions)})
    if store.version:
        out.meta["optuna_version"] = store.version
    if study.user_attrs:
        out.meta["optuna_study_user_attrs"] = dict(study.user_attrs)
    for key, raw in (("datetime_start", trial.start), ("datetime_complete", trial.complete)):
        if raw is not None:
            out.meta[key] = str(raw)
    if trial.start is not None and trial.complete is not None:
        seconds = _seconds(trial.start, trial.complete)
        if seconds is not None:
            out.meta["duration_s"] = seconds
    if trial.start is not None:
        out.notes.append("datetime_start/datetime_complete → meta as stored (naive: UTC in "
                         "current Optuna, local time in old versions)")
    out.arm = name
    return out


_TRIAL_TABLES = (("trial_intermediate_values", "intermediate value(s)"),
                 ("trial_values", "objective value(s)"), ("trial_params", "param(s)"),
                 ("trial_user_attributes", "user attr(s)"))


def _trial_losses(out: Any, run: LayoutRun) -> None:
    """In a damaged store: what this trial lost, where an index names the lost rows' trial."""
    rec = _recovered(run.files[0])
    if rec is None:
        return
    tid = run.sniffs["trial_id"]
    lost = [f"{rec.lost_by(t, 'trial_id')[tid]} {what}" for t, what in _TRIAL_TABLES
            if rec.lost_by(t, "trial_id")[tid]]
    unnamed = [f"about {rec.lost[t].unnamed} {what}" for t, what in _TRIAL_TABLES
               if t in rec.lost and rec.lost[t].unnamed]
    if lost:
        out.notes.append(f"this trial lost {', '.join(lost)} to the damage")
    if unnamed:
        out.notes.append(f"{'it' if lost else 'this trial'} may have lost more: "
                         f"{', '.join(unnamed)} lost with the damaged pages name no trial")


def _state_notes(out: Any, trial: _Trial, store: _Store, run: LayoutRun) -> None:
    if trial.state == "PRUNED":
        rows, _, _ = _intermediates(run.files[0], store.schema, run.sniffs["trial_id"])
        steps = [r[0] for r in rows if r[0] is not None]
        out.notes.append(f"pruned at step {max(steps)} (its last intermediate value); status "
                         "finished: the study stopped it, it did not crash" if steps else
                         "pruned before any intermediate value; status finished: the study "
                         "stopped it, it did not crash")
    elif trial.state == "RUNNING":
        beat = f"; last heartbeat {trial.heartbeat}" if trial.heartbeat is not None else ""
        out.notes.append(f"state RUNNING as stored{beat} (a trial whose process died stays "
                         "RUNNING unless the study fails it by heartbeat)")
    elif trial.state == "WAITING":
        out.notes.append("state WAITING: enqueued, never started")
    elif trial.state == "FAIL":
        reason = trial.system_attrs.get("fail_reason")
        out.notes.append(f"failed: {str(reason).splitlines()[-1][:300]}" if reason else
                         "state FAIL (Optuna keeps no reason in the store since 3.0)")
    elif trial.state not in STATUS:
        out.notes.append(f"state {trial.state}: not an Optuna state this reader knows; status unknown")


def _optuna_history(run: LayoutRun) -> tuple[pd.DataFrame, list[str]]:
    import rundiff_core

    store, trial, study = _trial_of(run)
    rows, notes, table = _intermediates(run.files[0], store.schema, run.sniffs["trial_id"])
    keys = study.keys(len(trial.values) if trial.values else None)
    typed = table is not None and _intermediate_source(store.schema)[3] != "NULL"
    rows = [r for r in rows if r[0] is not None]
    if rows:
        key = keys[0]
        steps = [float(r[0]) for r in rows]
        values = [_stored_value(r[1], r[2], typed) for r in rows]
        notes.append(f"{table}: {len(rows)} intermediate value(s) (trial.report) → {key} at x = "
                     "step; no wall time (Optuna stores none per value)")
        return rundiff_core.make_history(steps, [key] * len(rows), values), notes
    rec = _recovered(run.files[0])
    if rec is not None and table is not None and (
            rec.lost_by(table, "trial_id")[run.sniffs["trial_id"]] or
            (table in rec.lost and rec.lost[table].unnamed)):
        # its intermediate values may be lost, not absent: no final value stands in for them
        notes.append(f"no intermediate value of this trial read from {table} (the damage may "
                     "have taken them); its final value is in its summary")
        return rundiff_core.empty_history(), notes
    if trial.values:
        items = sorted(trial.values.items())
        names = [keys[i] if i < len(keys) else f"value_{i}" for i, _ in items]
        notes.append("no intermediate values: the final objective value(s) as one point at step 0 "
                     f"({', '.join(names)}; x: none)")
        return rundiff_core.make_history([0.0] * len(items), names, [v for _, v in items]), notes
    notes.append(f"no intermediate or final value (state {trial.state})")
    return rundiff_core.empty_history(), notes


# -- key/step/value tables --------------------------------------------------------------------------


def _kv_runs(path: str, tables: list[dict[str, str | None]]) -> list[LayoutRun]:
    runs: list[LayoutRun] = []
    with connect(path) as (conn, _):
        for t in tables:
            shape = ", ".join(f"{r}={t[r]}" for r in ("run", "key", "step", "value", "wall") if t[r])
            reason = f"key/step/value table {t['table']} ({shape})"
            if t["run"] is None:
                label = t["table"] if len(tables) > 1 else None
                runs.append(LayoutRun(f"{path}#{label}" if label else path, LAYOUT, [path], reason,
                                      {"kind": "kv", **t, "run_value": None,
                                       **({"run_id": label} if label else {})}))
                continue
            ids = [r[0] for r in conn.execute(
                f"SELECT DISTINCT {_quote(t['run'])} FROM {_quote(t['table'])} "
                f"WHERE {_quote(t['run'])} IS NOT NULL")]
            for rid in ids:
                label = f"{t['table']}/{rid}" if len(tables) > 1 else str(rid)
                runs.append(LayoutRun(f"{path}#{label}", LAYOUT, [path], reason,
                                      {"kind": "kv", **t, "run_value": rid, "run_id": label}))
    return runs


def _kv_meta(run: LayoutRun) -> Meta:
    s = run.sniffs
    who = f"rows with {s['run']} = {s['run_value']!r}" if s["run"] else "every row"
    wall = f", wall time = {s['wall']}" if s["wall"] else ""
    return Meta(notes=[f"{os.path.basename(run.files[0])}: SQLite table {s['table']} read as "
                       f"key/step/value ({who}: key = {s['key']}, x = {s['step']}, value = "
                       f"{s['value']}{wall}); no config or status in such a table"])


def _wall(v: Any) -> float:
    """Unix seconds from a number that looks like seconds or milliseconds, or an ISO string."""
    if isinstance(v, int | float) and not isinstance(v, bool):
        f = float(v)
        if 1e8 < f < 1e11:
            return f
        if 1e11 <= f < 1e14:
            return f / 1000.0
        return math.nan
    if isinstance(v, str):
        try:

            d = datetime.fromisoformat(v.strip().replace("Z", "+00:00"))
            return (d if d.tzinfo else d.replace(tzinfo=UTC)).timestamp()
        except ValueError:
            return math.nan
    return math.nan


def _kv_history(run: LayoutRun) -> tuple[pd.DataFrame, list[str]]:
    import rundiff_core

    s = run.sniffs
    q = {k: _quote(s[k]) for k in ("table", "key", "step", "value") if s[k]}
    wall = _quote(s["wall"]) if s["wall"] else "NULL"
    cols = f"{q['key']}, {q['step']}, {q['value']}, {wall}"
    path = run.files[0]
    if s["run"] is None:
        with connect(path) as (conn, notes):
            rows = conn.execute(f"SELECT {cols} FROM {q['table']}").fetchall()
    else:
        rcol = _quote(s["run"])

        def one(conn: sqlite3.Connection, rid: Any) -> list[tuple[Any, ...]]:
            return conn.execute(f"SELECT {cols} FROM {q['table']} WHERE {rcol} = ?", (rid,)).fetchall()

        def every(conn: sqlite3.Connection) -> Iterator[tuple[Any, ...]]:
            return conn.execute(f"SELECT {rcol}, {cols} FROM {q['table']}")

        rows, notes = _grouped_rows(path, (s["table"], s["run"]), s["run_value"], one, every)
    steps, keys, values, walls = [], [], [], []
    bad = 0
    for key, step, value, t in rows:
        x, v = _number(step), _number(value)
        if key is None or not isinstance(x, float) or not isinstance(v, float):
            bad += 1
            continue
        steps.append(x)
        keys.append(str(key))
        values.append(v)
        walls.append(_wall(t) if s["wall"] else math.nan)
    notes.append(f"table {s['table']}: {len(steps)} point(s) of {len(set(keys))} key(s) at x = "
                 f"{s['step']}" + (f"; {bad} row(s) without a key or a numeric step and value "
                                   "skipped" if bad else ""))
    if not steps:
        return rundiff_core.empty_history(), notes
    return rundiff_core.make_history(steps, keys, values, walls), notes
