"""Recognise MLflow stores on disk without the mlflow package: cheap checks, never a write.

Used by the hooks (sniffing reads a few KiB at most) and by address resolution. A file store is a
folder (`mlruns/`) whose numbered experiment folders hold `meta.yaml`; a database store is a
sqlite file holding MLflow's `runs`, `metrics` and `experiments` tables.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

if TYPE_CHECKING:
    from .found import Found

SQLITE_MAGIC = b"SQLite format 3\x00"
MLFLOW_TABLES = frozenset({"runs", "metrics", "experiments"})
TRASH = ".trash"
# folders inside an experiment folder that are not runs (MLflow's FileStore.RESERVED_EXPERIMENT_FOLDERS)
RESERVED_IN_EXPERIMENT = frozenset({"tags", "datasets", "traces", "models"})
DEFAULT_DIR = "mlruns"
DEFAULT_DB = "mlflow.db"


def _head(path: str, size: int = 2048) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read(size)
    except OSError:
        return b""


def is_experiment_dir(path: str) -> bool:
    """An experiment folder: `meta.yaml` naming an experiment (not a run)."""
    head = _head(os.path.join(path, "meta.yaml"))
    return b"experiment_id:" in head and b"run_uuid:" not in head and b"run_id:" not in head


def is_run_dir(path: str) -> bool:
    """A run folder: `meta.yaml` carrying a run id."""
    head = _head(os.path.join(path, "meta.yaml"))
    return b"run_uuid:" in head or b"run_id:" in head


def is_file_store(path: str) -> bool:
    """An `mlruns/` root: at least one numbered experiment folder with meta.yaml (or a trash)."""
    if not os.path.isdir(path):
        return False
    try:
        with os.scandir(path) as entries:
            for entry in entries:
                if entry.name.isdigit() and entry.is_dir() and is_experiment_dir(entry.path):
                    return True
    except OSError:
        return False
    trash = os.path.join(path, TRASH)
    return os.path.isdir(trash) and any(
        n.isdigit() and is_experiment_dir(os.path.join(trash, n)) for n in _listdir(trash)
    )


def _listdir(path: str) -> list[str]:
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def sqlite_ro_uri(path: str) -> str:
    """A `file:` URI that opens `path` read-only: sqlite never creates or changes a file.

    `mode=ro` alone still writes `-shm` and `-wal` beside a write-ahead-log database (header
    bytes 18–19 = 2; trackio's, for one): such a file with no log waiting beside it is opened
    `immutable` (nothing is written that a log would hold). A rollback-journal file keeps
    `mode=ro`, which writes nothing and takes SQLite's shared lock against a live writer."""
    uri = "file:" + quote(os.path.abspath(path)) + "?mode=ro"
    if _head(path, 20)[18:20] == b"\x02\x02":
        try:
            live = os.path.getsize(path + "-wal") > 0
        except OSError:
            live = False
        if not live:
            uri += "&immutable=1"
    return uri


def is_mlflow_sqlite(path: str) -> bool:
    """A sqlite file with MLflow's tables (opened read-only; reads the schema page only) — or one
    SQLite cannot read whose pages still show MLflow's tables (a damaged MLflow store)."""
    return sqlite_state(path) is not None


def sqlite_state(path: str) -> str | None:
    """"ok" for an MLflow sqlite database, "damaged" for one SQLite refuses whose kind still
    shows (its schema read from its pages), None for anything else."""
    if not os.path.isfile(path):
        return None
    head = _head(path, 16)
    if head != SQLITE_MAGIC:
        # a damaged first page: only a name that says database is worth a look at its pages
        if not path.lower().endswith((".db", ".sqlite", ".sqlite3")) or len(head) < 16:
            return None
        return _damaged(path)
    import sqlite3  # only for a file that starts like a database: start-up stays light

    try:
        conn = sqlite3.connect(sqlite_ro_uri(path), uri=True)
        try:
            names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        finally:
            conn.close()
    except (sqlite3.Error, UnicodeDecodeError):  # text SQLite hands back garbled: damage too
        return _damaged(path)
    return "ok" if MLFLOW_TABLES <= names else None


def _damaged(path: str) -> str | None:
    from .sqlite_salvage import damaged_kind

    try:
        return "damaged" if damaged_kind(path) == "MLflow" else None
    except (OSError, ValueError):
        return None


def _sqlite_stores(folder: str, limit: int = 16) -> list[str]:
    """The MLflow sqlite databases directly in `folder` (`*.db`, `*.sqlite`), `mlflow.db` first."""
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith((".db", ".sqlite", ".sqlite3")))
    except OSError:
        return []
    names.sort(key=lambda n: n != DEFAULT_DB)
    return [p for p in (os.path.join(folder, n) for n in names[:limit]) if is_mlflow_sqlite(p)]


def _run_count(path: str) -> int:
    """How many runs an MLflow sqlite database holds (0 when it cannot say)."""
    import sqlite3

    try:
        conn = sqlite3.connect(sqlite_ro_uri(path), uri=True)
        try:
            return int(conn.execute("SELECT count(*) FROM runs").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.Error:
        return 0


def find_store(path: str) -> Found | None:
    """Classify a path: a store, a folder holding one, an experiment or a run folder of one."""
    found = _classify(path)
    if found is None:
        return None
    from .found import Found  # here: a sniff that finds no store never builds one

    return Found(*found)


def _classify(path: str) -> tuple[str, str, str, str] | None:
    """`find_store`'s answer as (kind, store, selector, reason)."""
    path = os.path.abspath(os.path.expanduser(path))
    if os.path.isfile(path):
        state = sqlite_state(path)
        if state is not None:
            return ("sqlite", path, "", "an MLflow sqlite database" if state == "ok" else
                    "a damaged MLflow sqlite database (read what can be read of it)")
        return None
    if not os.path.isdir(path):
        return None
    if is_file_store(path):
        return ("file", path, "", "an MLflow file store (mlruns/)")
    sub = os.path.join(path, DEFAULT_DIR)
    if is_file_store(sub):  # MLflow's own default: ./mlruns with data wins over ./mlflow.db
        return ("file", sub, "", f"folder holding an MLflow file store ({DEFAULT_DIR}/)")
    dbs = _sqlite_stores(path)
    if dbs:  # several databases side by side: the one with runs, `mlflow.db` first among equals
        best = max(dbs, key=lambda d: (_run_count(d) > 0, os.path.basename(d) == DEFAULT_DB))
        others = [os.path.basename(d) for d in dbs if d != best]
        also = f"; also here: {', '.join(others)}" if others else ""
        return ("sqlite", best, "", f"folder holding an MLflow sqlite database "
                f"({os.path.basename(best)}{also})")
    parent = os.path.dirname(path)
    if is_run_dir(path):
        root = os.path.dirname(parent)
        if os.path.basename(root) == TRASH:  # mlruns/.trash/<exp>/<run>: a deleted experiment
            root = os.path.dirname(root)
        if is_file_store(root):
            return ("file", root, os.path.basename(path), "a run folder of an MLflow file store")
    if is_experiment_dir(path):
        root = os.path.dirname(parent) if os.path.basename(parent) == TRASH else parent
        if is_file_store(root):
            return ("file", root, os.path.basename(path),
                    "an experiment folder of an MLflow file store")
    return None


def __getattr__(name: str) -> Any:  # `from .layout import Found` still works
    if name == "Found":
        from .found import Found

        return Found
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
