"""Open a tracker's SQLite database without ever writing beside it.

SQLite writes a `-shm` file even for a read-only connection when a write-ahead log is present,
and an `immutable` connection would silently ignore that log's rows. So: no log, the file is
opened `immutable`; a log (a run still writing, or one that did not close), database and log are
read from a private copy. Shared by the readers of neptune-scale and trackio databases.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def open_sqlite_readonly(db: str, *, live_note: str, tmp_prefix: str = "rundiff-sqlite-"
                         ) -> Iterator[tuple[sqlite3.Connection, list[str]]]:
    """(connection, notes); `live_note` is the note recorded when the log forces a copy."""
    notes: list[str] = []
    wal = db + "-wal"
    tmp = None
    try:
        if os.path.exists(wal) and os.path.getsize(wal) > 0:
            tmp = tempfile.mkdtemp(prefix=tmp_prefix)
            copy = os.path.join(tmp, os.path.basename(db))
            shutil.copyfile(db, copy)
            shutil.copyfile(wal, copy + "-wal")
            notes.append(live_note)
            conn = sqlite3.connect(copy)
        else:
            conn = sqlite3.connect(Path(db).absolute().as_uri() + "?immutable=1", uri=True)
        try:
            yield conn, notes
        finally:
            conn.close()
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
