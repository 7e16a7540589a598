"""Writing a fleet dataset so that a reader never sees half a file.

Every file is written under `DATASET/_tmp/` and renamed into place (`os.replace`, atomic on one
filesystem), so an interrupted export leaves each partition either as it was or fully new. One
export at a time: a lock file holds the writer's host and pid, and a lock left by a dead process
on this host is taken over.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import shutil
import socket
import uuid
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import InputError, UsageError
from . import faults, layout
from .schema import FORMAT, POINT_FILE_SCHEMA, SCHEMA_VERSION, with_version

COMPRESSION = "zstd"
WRITE_OPTIONS: dict[str, Any] = {"compression": COMPRESSION, "data_page_version": "2.0"}
# Points files are read far more often than written, one small file per run: LZ4 (Parquet's
# LZ4_RAW) decodes ~2× faster than zstd, and BYTE_STREAM_SPLIT floats shrink it below zstd's
# size (31 vs 37 kB for 6,000 points). Only the key column is dictionary-encoded.
POINTS_WRITE_OPTIONS: dict[str, Any] = {
    "compression": "lz4",
    "data_page_version": "2.0",
    "use_dictionary": ["key"],
    "column_encoding": {c: "BYTE_STREAM_SPLIT" for c in ("step", "value", "wall_time")},
}
LOCK = "_rundiff_fleet.lock"

if TYPE_CHECKING:
    import pandas as pd


def points_table(history: pd.DataFrame) -> pa.Table:
    """A canonical history frame as the points file's table (logged order kept)."""
    import pandas as pd  # here: readers of a pack import this module for its write options
    keys = history["key"]
    cat = keys.array if isinstance(keys.dtype, pd.CategoricalDtype) else None
    if cat is not None and (cat.codes >= 0).all():  # the Categorical's codes: no Series made
        cats = pa.array([str(c) for c in cat.categories], pa.string())
        codes = pa.array(cat.codes.astype("int32"))
        key_arr = pa.DictionaryArray.from_arrays(codes, cats).cast(pa.string())
    else:
        key_arr = pa.array(keys.astype(str).to_numpy(dtype=object), pa.string())
    cols = [key_arr] + [
        pa.array(np.ascontiguousarray(history[c].to_numpy(dtype="float64")), pa.float64())
        for c in ("step", "value", "wall_time")
    ]
    return pa.Table.from_arrays(cols, schema=with_version(POINT_FILE_SCHEMA))


@contextlib.contextmanager
def staged(root: str, suffix: str = ".parquet") -> Iterator[str]:
    """A fresh path in the dataset's `_tmp/` to write a file at before renaming it into place;
    the file is removed when the block raises (a rename inside the block has moved it away)."""
    tmp = os.path.join(layout.tmp_dir(root), f"{uuid.uuid4().hex}{suffix}")
    os.makedirs(os.path.dirname(tmp), exist_ok=True)
    try:
        yield tmp
    except BaseException:
        silent_remove(tmp)
        raise


def into_place(tmp: str, final_path: str) -> int:
    """Rename a staged file to `final_path` (its folder made if missing); returns its bytes."""
    size = os.path.getsize(tmp)
    os.makedirs(os.path.dirname(final_path), exist_ok=True)
    os.replace(tmp, final_path)
    return size


def write_staged(root: str, final_path: str, write: Callable[[str], object], *,
                 suffix: str = ".parquet") -> int:
    """Write `final_path` whole or not at all: `write(tmp)` fills a fresh file in the dataset's
    `_tmp/` (`staged`), which then moves into place; returns bytes. A failure removes the file."""
    with staged(root, suffix) as tmp:
        write(tmp)
        return into_place(tmp, final_path)


def atomic_write_table(table: pa.Table, final_path: str, root: str,
                       options: dict[str, Any] | None = None) -> int:
    """Write `table` to `final_path` through a temp file in the dataset's `_tmp/`; returns bytes."""
    return write_staged(root, final_path,
                        lambda tmp: pq.write_table(table, tmp, **(options or WRITE_OPTIONS)))


def write_points(root: str, source: str, run_uid: str, table: pa.Table | None) -> int:
    """Replace one run's points partition (an empty history removes it); returns bytes written."""
    final = layout.points_file(root, source, run_uid)
    if table is None or table.num_rows == 0:
        remove_points(root, source, run_uid)
        return 0
    size = atomic_write_table(table, final, root, POINTS_WRITE_OPTIONS)
    faults.checkpoint("points-written")
    return size


def remove_points(root: str, source: str, run_uid: str) -> None:
    part = layout.partition_dir(root, source, run_uid)
    silent_remove(os.path.join(part, layout.PART_FILE))
    try:
        os.rmdir(part)
    except OSError:
        pass


def write_manifest(root: str, last_export: dict[str, Any] | None) -> None:
    """Create (`last_export=None`: before the first export's writes, so even an interrupted first
    export leaves a recognisable dataset) or update the manifest, atomically."""
    path = layout.manifest_path(root)
    data: dict[str, Any] = {}
    if os.path.isfile(path):
        try:
            with open(path, encoding="utf-8") as fh:
                data = json.load(fh)
        except (OSError, ValueError):
            data = {}
    now = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    data.update(
        {
            "format": FORMAT,
            "schema_version": SCHEMA_VERSION,
            "created_at": data.get("created_at", now),
            "updated_at": now,
            "exports": int(data.get("exports", 0)) + (last_export is not None),
            "last_export": last_export if last_export is not None else data.get("last_export"),
            "tables": {
                "points": "points/source=*/run_uid=*/part-0.parquet",
                "runs": "runs/part-0.parquet",
                "errors": "errors/part-0.parquet",
            },
        }
    )

    def write(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=2, sort_keys=True)

    write_staged(root, path, write, suffix=".json")


def prepare(root: str) -> None:
    """Make `root` ready for an export: refuse a foreign non-empty folder, clear stale temp files."""
    if os.path.exists(root) and not os.path.isdir(root):
        raise UsageError(f"-o {root} is a file", hint="give a folder for the dataset")
    if os.path.isdir(root) and not layout.is_dataset(root):
        if any(not e.name.startswith(".") for e in os.scandir(root)):
            raise UsageError(
                f"{root} exists and is not a rundiff fleet dataset",
                hint="give an empty or new folder, or an existing dataset to update",
            )
    if layout.is_dataset(root):
        layout.read_manifest(root)  # refuses a newer schema before anything is touched
    os.makedirs(root, exist_ok=True)
    shutil.rmtree(layout.tmp_dir(root), ignore_errors=True)
    if not layout.is_dataset(root):
        write_manifest(root, None)


class DatasetLock:
    """An exclusive lock file for the duration of an export."""

    def __init__(self, root: str) -> None:
        self.path = os.path.join(root, LOCK)
        self.held = False

    def __enter__(self) -> DatasetLock:
        me = {"host": socket.gethostname(), "pid": os.getpid()}
        for _attempt in range(2):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                owner = self._owner()
                if owner and owner.get("host") == me["host"] and not _alive(owner.get("pid")):
                    silent_remove(self.path)  # left by a process that died: take it over
                    continue
                raise InputError(
                    f"another export is writing {os.path.dirname(self.path)} "
                    f"(lock held by {owner or 'an unknown process'})",
                    hint=f"wait for it, or delete {self.path} if that export is gone",
                ) from None
            with os.fdopen(fd, "w") as fh:
                json.dump(me, fh)
            self.held = True
            return self
        raise InputError(f"could not take the export lock {self.path}")

    def _owner(self) -> dict[str, Any] | None:
        try:
            with open(self.path, encoding="utf-8") as fh:
                data = json.load(fh)
            return data if isinstance(data, dict) else None
        except (OSError, ValueError):
            return None

    def __exit__(self, *exc: object) -> None:
        if self.held:
            silent_remove(self.path)
            self.held = False


def _alive(pid: Any) -> bool:
    try:
        os.kill(int(pid), 0)
    except (ProcessLookupError, ValueError, TypeError):
        return False
    except PermissionError:
        return True
    return True


def silent_remove(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass
