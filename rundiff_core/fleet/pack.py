"""The packed copy of a fleet dataset's points: one Parquet file, one row group per run.

The Hive partitions (one small file per run) are the dataset: tools read them and exports rewrite
them run by run. But opening a small Parquet file costs pyarrow ~0.25 ms however few rows it holds,
which is most of what loading a run costs. So `rundiff export` also writes `_pack/points.parquet`:
the same rows, one row group per run, indexed in its key-value metadata by
{run_uid: [first row group, row groups, n_points, content_hash]}. The `parquet:` adapter opens it
once per process and reads a run from it only when that entry's `n_points` and `content_hash`
equal the runs table's — anything else (no pack, a stale entry after an interrupted export, a run
added since) reads the run's own partition. The pack is derived data: delete it any time, or export
with `--no-pack`; nothing is lost.
"""

from __future__ import annotations

import json
import os
import threading
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import RundiffError
from . import layout
from .schema import PARQUET_META_KEY, POINT_FILE_SCHEMA, SCHEMA_VERSION
from .writer import POINTS_WRITE_OPTIONS

PACK_META_KEY = b"rundiff.fleet.pack"
PACK_DIR = "_pack"
PACK_FILE = "points.parquet"
READ_BATCH = 64  # runs read per batch while rebuilding (bounded memory)
_KEY_TYPE = pa.dictionary(pa.int32(), pa.string())
PACK_SCHEMA = pa.schema(
    [pa.field("key", _KEY_TYPE, nullable=False)] + list(POINT_FILE_SCHEMA)[1:],
    metadata={PARQUET_META_KEY: str(SCHEMA_VERSION).encode()},
)


def pack_path(root: str) -> str:
    return os.path.join(root, PACK_DIR, PACK_FILE)


Entry = tuple[int, int, int, str]  # first row group, row groups, n_points, content_hash


def wanted_entries(rows: Iterable[Mapping[str, Any]]) -> dict[str, tuple[int, str]]:
    """{run_uid: (n_points, content_hash)} of the runs table rows a pack should hold."""
    return {r["run_uid"]: (int(r["n_points"]), str(r["content_hash"])) for r in rows
            if r.get("n_points") and r.get("content_hash")}


class Pack:
    """An open pack: its index and a reader (pyarrow readers are not thread-safe: one lock)."""

    def __init__(self, path: str) -> None:
        self.path = path
        # one run is a few small column chunks: read them plainly (pre-buffering and Arrow's
        # thread pool cost more than they save at this size — measured in bench/bench_fleet.py)
        self._reader = pq.ParquetFile(path, read_dictionary=["key"], pre_buffer=False)
        meta = self._reader.metadata
        raw = (meta.metadata or {}).get(PACK_META_KEY)
        if raw is None:
            raise ValueError("no pack index")
        layout.check_version((meta.metadata or {}).get(PARQUET_META_KEY, b"?").decode(), path)
        index = json.loads(raw)
        self.index: dict[str, Entry] = {
            uid: (int(e[0]), int(e[1]), int(e[2]), str(e[3])) for uid, e in index.items()}
        n_groups = meta.num_row_groups
        if any(e[0] < 0 or e[1] < 1 or e[0] + e[1] > n_groups for e in self.index.values()):
            raise ValueError("pack index points past its row groups")
        self._lock = threading.Lock()

    def entry(self, uid: str, n_points: Any, content_hash: Any) -> Entry | None:
        """The run's entry when the pack holds exactly what the runs table describes."""
        e = self.index.get(uid)
        if e is None or e[2] != n_points or e[3] != content_hash:
            return None
        return e

    def read(self, entries: Sequence[Entry]) -> list[pa.Table]:
        """The tables of these runs, in order, read in one call."""
        groups = [g for e in entries for g in range(e[0], e[0] + e[1])]
        with self._lock:
            if len(groups) == 1:
                table = self._reader.read_row_group(groups[0], use_threads=False)
            else:
                table = self._reader.read_row_groups(groups, use_threads=False)
        if len(entries) == 1 and table.num_rows == entries[0][2]:
            return [table]
        out, offset = [], 0
        for e in entries:
            out.append(table.slice(offset, e[2]))
            offset += e[2]
        if offset != table.num_rows:
            raise ValueError(f"pack row groups hold {table.num_rows} rows, its index says {offset}")
        return out


# dataset root → (pack file stamp, Pack or None when unreadable)
_OPEN: dict[str, tuple[tuple[int, int, int], Pack | None]] = {}
_OPEN_LOCK = threading.Lock()


def open_pack(root: str) -> Pack | None:
    """The dataset's pack, opened once per process while the file is unchanged; None when there
    is none or it cannot be read (the partitions are then read instead)."""
    path = pack_path(root)
    try:
        st = os.stat(path)
    except OSError:
        return None
    stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
    with _OPEN_LOCK:
        hit = _OPEN.get(root)
        if hit is not None and hit[0] == stamp:
            return hit[1]
        try:
            pack: Pack | None = Pack(path)
        except (pa.ArrowException, OSError, ValueError, KeyError, TypeError, IndexError,
                RundiffError):  # a bad or newer-version pack: the partitions say the rest
            pack = None
        if len(_OPEN) > 16:
            _OPEN.clear()
        _OPEN[root] = (stamp, pack)
        return pack


def forget(root: str) -> None:
    with _OPEN_LOCK:
        _OPEN.pop(root, None)


# -- writing ----------------------------------------------------------------------------------------
def update_pack(root: str, rows: Mapping[str, Mapping[str, Any]], *,
                enabled: bool = True) -> tuple[int, str | None]:
    """Bring the pack in line with the runs table (`rows` by uid): (bytes written, problem).

    Unchanged entries are copied from the old pack, the others read from their partitions; a run
    whose partition cannot be read is left out (reading it falls back to the partition, which
    reports the problem). Written through `_tmp/` and renamed, like every dataset file. A pack
    that cannot be written is removed and the problem returned: the dataset stays complete."""
    if not enabled:
        _remove(root)
        return 0, None
    wanted = wanted_entries(rows.values())
    old = open_pack(root)
    if old is not None and {u: (e[2], e[3]) for u, e in old.index.items()} == wanted:
        return 0, None
    if not wanted:
        _remove(root)
        return 0, None
    try:
        return _write(root, rows, wanted, old), None
    except (OSError, ValueError, pa.ArrowException) as exc:
        _remove(root)
        return 0, f"{type(exc).__name__}: {exc}"


def _write(root: str, rows: Mapping[str, Mapping[str, Any]], wanted: Mapping[str, tuple[int, str]],
           old: Pack | None) -> int:
    path = pack_path(root)
    options = dict(POINTS_WRITE_OPTIONS)  # the partitions' encoding: the same read speed
    tmp = os.path.join(layout.tmp_dir(root), f"{uuid.uuid4().hex}.parquet")
    os.makedirs(os.path.dirname(tmp), exist_ok=True)
    index: dict[str, list[Any]] = {}
    groups = 0
    uids = sorted(wanted, key=lambda u: (str(rows[u].get("source") or ""), u))
    try:
        with pq.ParquetWriter(tmp, PACK_SCHEMA, **options) as out:
            for start in range(0, len(uids), READ_BATCH):
                batch = uids[start:start + READ_BATCH]
                for uid, table in _tables(root, batch, rows, wanted, old):
                    n = table.num_rows
                    table = _as_pack_table(table)
                    out.write_table(table, row_group_size=n)  # one row group per run
                    index[uid] = [groups, 1, n, wanted[uid][1]]
                    groups += 1
            out.add_key_value_metadata({PACK_META_KEY: json.dumps(index, separators=(",", ":"))})
        meta = pq.read_metadata(tmp)
        if meta.num_row_groups != groups or any(
                meta.row_group(e[0]).num_rows != e[2] for e in index.values()):
            raise ValueError("the writer split a run over several row groups")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        size = os.path.getsize(tmp)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise
    forget(root)
    return size


def _tables(root: str, uids: list[str], rows: Mapping[str, Mapping[str, Any]],
            wanted: Mapping[str, tuple[int, str]], old: Pack | None) -> Iterable[tuple[str, pa.Table]]:
    """(uid, points table) for each run of `uids` that can be read, from the old pack when it
    holds the same content, else from the run's partition."""
    reuse = [(u, old.entry(u, *wanted[u])) for u in uids] if old is not None else []
    from_old = {u: e for u, e in reuse if e is not None}
    if from_old:
        try:
            tables = dict(zip(from_old, old.read(list(from_old.values())), strict=True))
        except (pa.ArrowException, OSError, ValueError):
            tables = {}
    else:
        tables = {}
    for uid in uids:
        table = tables.get(uid)
        if table is None:
            row = rows[uid]
            try:
                table = layout.read_points_table(
                    layout.points_file(root, str(row.get("source") or ""), uid))
            except (OSError, ValueError):
                continue
            if table.num_rows != wanted[uid][0]:
                continue  # the partition disagrees with the runs table: leave it to the reader
        yield uid, table


def _as_pack_table(table: pa.Table) -> pa.Table:
    """A points table with the key as one dictionary chunk and the pack's schema."""
    key = table.column("key")
    if not pa.types.is_dictionary(key.type):
        key = key.dictionary_encode()
    key = key.combine_chunks() if key.num_chunks != 1 else key.chunk(0)
    if key.type != _KEY_TYPE:
        key = key.cast(_KEY_TYPE)
    cols = [key] + [table.column(c).combine_chunks() for c in ("step", "value", "wall_time")]
    return pa.Table.from_arrays(cols, schema=PACK_SCHEMA)


def _remove(root: str) -> None:
    forget(root)
    try:
        os.remove(pack_path(root))
    except OSError:
        pass
    try:
        os.rmdir(os.path.join(root, PACK_DIR))
    except OSError:
        pass
