"""The pack: a read-optimised copy of a fleet dataset's points, a row group per run.

The Hive partitions (one small file per run) are the dataset: tools read them and exports rewrite
them run by run. But opening a small Parquet file costs pyarrow ~0.25 ms however few rows it holds,
which is most of what loading a run costs. So `rundiff export` also keeps `_pack/`: Parquet
*segments* holding the same rows, one row group per run, each indexed in its key-value metadata by
{run_uid: [first row group, row groups, n_points, content_hash]}. Each row also carries its
`run_uid` (dictionary-encoded: one value per row group, nearly free) so SQL engines (DuckDB, see
fleet/pushdown.py) can group a segment's rows by run.

- The `parquet:` adapter reads a run from a segment only when that entry's `n_points` and
  `content_hash` equal the runs table's; anything else (no pack, a stale entry after an interrupted
  export, a run added since, an unreadable segment) reads the run's own partition.
- An export writes one new segment holding just the runs whose points are in no segment yet, so
  its cost follows what changed. When segments pile up (more than MAX_SEGMENTS) or most of the
  pack's rows are stale, it compacts everything into one segment. Segments with nothing current
  are deleted.
- A segment carries PACK_VERSION in its metadata; a segment of another version is ignored like
  an unreadable one (its runs read their partitions; the next export replaces it), never misread.
- The pack is derived data: delete `_pack/` any time, or export with `--no-pack`; nothing is lost.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import threading
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import RundiffError
from . import facts, layout
from .schema import PARQUET_META_KEY, POINT_FILE_SCHEMA, SCHEMA_VERSION
from .writer import POINTS_WRITE_OPTIONS, silent_remove, staged

PACK_META_KEY = b"rundiff.fleet.pack"
PACK_VERSION_KEY = b"rundiff.fleet.pack_version"
PACK_VERSION = 2  # 2: every row carries run_uid (v1 had no run_uid column)
PACK_DIR = "_pack"
MAX_SEGMENTS = 8  # more than this after an export: compact into one
READ_BATCH = 64  # runs read per batch while writing a segment (bounded memory)
_KEY_TYPE = pa.dictionary(pa.int32(), pa.string())
PACK_SCHEMA = pa.schema(
    [pa.field("key", _KEY_TYPE, nullable=False)] + list(POINT_FILE_SCHEMA)[1:]
    + [pa.field("run_uid", _KEY_TYPE, nullable=False)],
    metadata={PARQUET_META_KEY: str(SCHEMA_VERSION).encode(),
              PACK_VERSION_KEY: str(PACK_VERSION).encode()},
)
POINT_COLUMNS = ["key", "step", "value", "wall_time"]  # what a run's history is read from

Entry = tuple[int, int, int, str]  # first row group, row groups, n_points, content_hash


def pack_dir(root: str) -> str:
    return os.path.join(root, PACK_DIR)


def wanted_entries(rows: Iterable[Mapping[str, Any]]) -> dict[str, tuple[int, str]]:
    """{run_uid: (n_points, content_hash)} of the runs table rows a pack should hold."""
    return {r["run_uid"]: (int(r["n_points"]), str(r["content_hash"])) for r in rows
            if r.get("n_points") and r.get("content_hash")}


class Segment:
    """One pack file: its index and a reader (pyarrow readers are not thread-safe: one lock)."""

    def __init__(self, path: str) -> None:
        self.path = path
        # one run is a few small column chunks: read them plainly (pre-buffering and Arrow's
        # thread pool cost more than they save at this size — measured in bench/bench_fleet.py)
        self._reader = pq.ParquetFile(path, read_dictionary=["key"], pre_buffer=False)
        meta = self._reader.metadata
        kv = meta.metadata or {}
        if PACK_META_KEY not in kv:
            raise ValueError("no pack index")
        if kv.get(PACK_VERSION_KEY) != str(PACK_VERSION).encode():
            raise ValueError("a pack segment of another version")
        layout.check_version(kv.get(PARQUET_META_KEY, b"?").decode(), path)
        self.index: dict[str, Entry] = {
            uid: (int(e[0]), int(e[1]), int(e[2]), str(e[3]))
            for uid, e in json.loads(kv[PACK_META_KEY]).items()}
        n_groups = meta.num_row_groups
        if any(e[0] < 0 or e[1] < 1 or e[0] + e[1] > n_groups for e in self.index.values()):
            raise ValueError("pack index points past its row groups")
        self.rows = sum(e[2] for e in self.index.values())
        self._lock = threading.Lock()

    def read(self, entries: Sequence[Entry], columns: Sequence[str] = POINT_COLUMNS
             ) -> list[pa.Table]:
        """The tables of these runs, in order, read in one call."""
        table = self.read_joined(entries, columns)
        if len(entries) == 1 and table.num_rows == entries[0][2]:
            return [table]
        out, offset = [], 0
        for e in entries:
            out.append(table.slice(offset, e[2]))
            offset += e[2]
        if offset != table.num_rows:
            raise ValueError(f"pack row groups hold {table.num_rows} rows, its index says {offset}")
        return out


    def read_joined(self, entries: Sequence[Entry], columns: Sequence[str] = POINT_COLUMNS
                    ) -> pa.Table:
        """These runs' rows as one table, run after run (each run's `n_points` rows in turn)."""
        groups = [g for e in entries for g in range(e[0], e[0] + e[1])]
        cols = list(columns)
        with self._lock:
            if len(groups) == 1:
                table = self._reader.read_row_group(groups[0], columns=cols, use_threads=False)
            else:
                table = self._reader.read_row_groups(groups, columns=cols, use_threads=False)
        if table.num_rows != sum(e[2] for e in entries):
            raise ValueError(f"pack row groups hold {table.num_rows} rows, its index says "
                             f"{sum(e[2] for e in entries)}")
        return table


Located = tuple[Segment, Entry]


class Pack:
    """Every readable segment of a dataset's pack."""

    def __init__(self, segments: Sequence[Segment]) -> None:
        self.segments = list(segments)
        self._by_uid: dict[str, list[Located]] = {}
        for seg in self.segments:
            for uid, e in seg.index.items():
                self._by_uid.setdefault(uid, []).append((seg, e))

    def entry(self, uid: str, n_points: Any, content_hash: Any) -> Located | None:
        """Where the run's points are, when some segment holds exactly what the runs table says."""
        for seg, e in self._by_uid.get(uid, ()):
            if e[2] == n_points and e[3] == content_hash:
                return seg, e
        return None

    def uids(self) -> set[str]:
        return set(self._by_uid)

    def read(self, located: Sequence[Located]) -> list[pa.Table]:
        return read_located(located)


def read_located(located: Sequence[Located]) -> list[pa.Table]:
    """The tables of these runs, in the order given: one read call per segment."""
    out: list[Any] = [None] * len(located)
    by_segment: dict[int, list[int]] = {}
    for i, (seg, _e) in enumerate(located):
        by_segment.setdefault(id(seg), []).append(i)
    for positions in by_segment.values():
        seg = located[positions[0]][0]
        for i, table in zip(positions, seg.read([located[i][1] for i in positions]), strict=True):
            out[i] = table
    return out


# segment path → ((mtime_ns, size, inode), Segment or None when unreadable)
_SEGMENTS: dict[str, tuple[tuple[int, int, int], Segment | None]] = {}
# dataset root → ((folder stamp, ((segment path, stamp), …)), Pack): rebuilt when one changed
_PACKS: dict[str, tuple[tuple[Any, ...], Pack | None]] = {}
_LOCK = threading.Lock()


def open_pack(root: str) -> Pack | None:
    """The dataset's pack: its segments, each opened once per process while its file is
    unchanged. None when there is no readable segment (the partitions are then read).

    Cheap when nothing changed (a query opens one source per address): a stat of `_pack/` (its
    mtime moves when a segment is added or removed) and one per segment (a file rewritten in
    place)."""
    folder = pack_dir(root)
    try:
        dst = os.stat(folder)
    except OSError:
        return None
    with _LOCK:
        cached = _PACKS.get(root)
        if cached is not None and cached[0][0] == (dst.st_mtime_ns, dst.st_ino):
            try:
                if all(_stamp(os.stat(path)) == stamp for path, stamp in cached[0][1]):
                    return cached[1]
            except OSError:
                pass
        try:
            with os.scandir(folder) as it:
                paths = sorted(e.path for e in it
                               if e.name.endswith(".parquet") and not e.name.startswith("."))
            files = [(path, _stamp(os.stat(path))) for path in paths]
        except OSError:
            return None
        segments = []
        for path, stamp in files:
            hit = _SEGMENTS.get(path)
            if hit is None or hit[0] != stamp:
                try:
                    seg: Segment | None = Segment(path)
                except (pa.ArrowException, OSError, ValueError, KeyError, TypeError, IndexError,
                        RundiffError):  # a bad or newer-version segment: partitions say the rest
                    seg = None
                if len(_SEGMENTS) > 256:
                    _SEGMENTS.clear()
                hit = _SEGMENTS[path] = (stamp, seg)
            if hit[1] is not None:
                segments.append(hit[1])
        pack = Pack(segments) if segments else None
        if len(_PACKS) > 16:
            _PACKS.clear()
        _PACKS[root] = (((dst.st_mtime_ns, dst.st_ino), tuple(files)), pack)
        return pack


def _stamp(st: os.stat_result) -> tuple[int, int, int]:
    return st.st_mtime_ns, st.st_size, st.st_ino


# -- writing ----------------------------------------------------------------------------------------
def update_pack(root: str, rows: Mapping[str, Mapping[str, Any]], *,
                enabled: bool = True) -> tuple[int, str | None]:
    """Bring the pack in line with the runs table (`rows` by uid): (bytes written, problem).

    Writes one segment with the runs no segment holds yet (or, past MAX_SEGMENTS or when most
    rows are stale, one compacted segment with everything) and deletes segments with nothing
    current. A run whose partition cannot be read is left out: reading it falls back to the
    partition, which reports the problem. A pack that cannot be written is removed and the
    problem returned: the dataset stays complete."""
    if not enabled:
        remove_pack(root)
        return 0, None
    wanted = wanted_entries(rows.values())
    pack = open_pack(root)
    segments = pack.segments if pack else []
    live: dict[str, Located] = {}
    live_rows: dict[str, int] = {s.path: 0 for s in segments}
    for uid, (n, chash) in wanted.items():
        hit = pack.entry(uid, n, chash) if pack else None
        if hit is not None:
            live[uid] = hit
            live_rows[hit[0].path] += n
    missing = [u for u in wanted if u not in live]
    keep = [s for s in segments if live_rows[s.path]]
    stale_rows = sum(s.rows for s in segments) - sum(live_rows.values())
    compact = len(keep) + bool(missing) > MAX_SEGMENTS or stale_rows > sum(live_rows.values())
    try:
        written, new = 0, None
        if compact:
            written, new = _write_segment(root, sorted(wanted), rows, live)
            keep = []
        elif missing:
            written, new = _write_segment(root, missing, rows, {})
        for seg in keep:  # a segment without readable facts of this version gets them now
            if facts.open_facts(seg) is None:
                written += _write_facts(root, seg.path)
        kept = [s.path for s in keep] + ([new] if new else [])
        _drop(root, keep=kept + [facts.facts_path(p) for p in kept])
        return written, None
    except (OSError, ValueError, pa.ArrowException) as exc:
        remove_pack(root)
        return 0, f"{type(exc).__name__}: {exc}"


def _write_segment(root: str, uids: Sequence[str], rows: Mapping[str, Mapping[str, Any]],
                   live: Mapping[str, Located]) -> tuple[int, str | None]:
    """Write one segment with these runs (copied from `live` entries, else read from their
    partitions) through `_tmp/`: (size, path), or (0, None) when no run could be read."""
    order = sorted(uids, key=lambda u: (str(rows[u].get("source") or ""), u))
    with SegmentWriter(root) as out:
        for start in range(0, len(order), READ_BATCH):
            for uid, table in _tables(root, order[start:start + READ_BATCH], rows, live):
                out.add(uid, table, str(rows[uid]["content_hash"]))
    return out.size, out.path


class SegmentWriter:
    """One new pack segment, written run by run (a row group each) under `_tmp/`; on a clean
    exit it is checked, renamed into `_pack/` and its facts are stored beside it
    (`size`, `path`: the bytes written with the facts, and where; 0 and None when no run was
    added). An exception removes the staged file. `export` writes a segment through this from
    the runs' partitions; bench/fleetgen100k.py streams the runs it exports straight into one."""

    # the partitions' encoding; no statistics: nothing prunes row groups of a pack by value
    OPTIONS: dict[str, Any] = {**POINTS_WRITE_OPTIONS, "write_statistics": False,
                               "use_dictionary": ["key", "run_uid"]}

    def __init__(self, root: str) -> None:
        self.root = root
        self.index: dict[str, list[Any]] = {}
        self.size = 0
        self.path: str | None = None
        self._stack = contextlib.ExitStack()
        self._tmp = ""
        self._out: Any = None

    def __enter__(self) -> SegmentWriter:
        self._tmp = self._stack.enter_context(staged(self.root))
        self._out = self._stack.enter_context(
            pq.ParquetWriter(self._tmp, PACK_SCHEMA, **self.OPTIONS))
        return self

    def add(self, uid: str, table: pa.Table, content_hash: str) -> None:
        """Append one run's points (a points table in logged order) as its own row group."""
        n = table.num_rows
        if not n:
            return  # an empty history is in no segment (the runs table says 0 points)
        self._out.write_table(_as_pack_table(table, uid), row_group_size=n)  # a group a run
        self.index[uid] = [len(self.index), 1, n, str(content_hash)]

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is not None:
            self._stack.__exit__(exc_type, exc, tb)  # staged() removes the file
            return
        with self._stack:  # on any failure below, the staged file goes
            self._out.add_key_value_metadata(
                {PACK_META_KEY: json.dumps(self.index, separators=(",", ":"))})
            self._out.close()
            meta = pq.read_metadata(self._tmp)
            if meta.num_row_groups != len(self.index) or any(
                    meta.row_group(e[0]).num_rows != e[2] for e in self.index.values()):
                raise ValueError("the writer split a run over several row groups")
            if not self.index:
                os.remove(self._tmp)
                return
            final = os.path.join(pack_dir(self.root), f"seg-{uuid.uuid4().hex}.parquet")
            os.makedirs(pack_dir(self.root), exist_ok=True)
            size = os.path.getsize(self._tmp)
            os.replace(self._tmp, final)
        self.size, self.path = size + _write_facts(self.root, final), final


def _write_facts(root: str, segment_path: str) -> int:
    """Store the segment's facts (fleet/facts.py): bytes written, 0 when they could not be (the
    queries then answer what they would have; nothing is lost)."""
    try:
        return facts.write_facts(Segment(segment_path), facts.facts_path(segment_path), root)
    except Exception:  # derived data: a failure here must not fail the export
        return 0


def _tables(root: str, uids: list[str], rows: Mapping[str, Mapping[str, Any]],
            live: Mapping[str, Located]) -> Iterable[tuple[str, pa.Table]]:
    """(uid, points table) for each run of `uids` that can be read: from its live pack entry when
    it has one, else from its partition (when that holds the runs table's point count)."""
    from_pack = [u for u in uids if u in live]
    tables: dict[str, pa.Table] = {}
    if from_pack:
        try:
            tables = dict(zip(from_pack, read_located([live[u] for u in from_pack]),
                              strict=True))
        except (pa.ArrowException, OSError, ValueError):
            tables = {}
    for uid in uids:
        table = tables.get(uid)
        if table is None:
            row = rows[uid]
            try:
                table = layout.read_table(
                    layout.points_file(root, str(row.get("source") or ""), uid),
                    read_dictionary=["key"])
            except (OSError, ValueError, RundiffError):
                continue
            if table.num_rows != int(row["n_points"]):
                continue  # the partition disagrees with the runs table: leave it to the reader
        yield uid, table


def _as_pack_table(table: pa.Table, uid: str) -> pa.Table:
    """A points table with the key as one dictionary chunk, the run's uid on every row and the
    pack's schema."""
    key = table.column("key")
    if not pa.types.is_dictionary(key.type):
        key = key.dictionary_encode()
    key = key.combine_chunks() if key.num_chunks != 1 else key.chunk(0)
    if key.type != _KEY_TYPE:
        key = key.cast(_KEY_TYPE)
    cols = [key] + [table.column(c).combine_chunks() for c in ("step", "value", "wall_time")]
    n = table.num_rows
    cols.append(pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, dtype=np.int32)),
                                               pa.array([uid], pa.string())))
    return pa.Table.from_arrays(cols, schema=PACK_SCHEMA)


def _drop(root: str, keep: Sequence[str]) -> None:
    """Delete every file in `_pack/` but the segments in `keep`: segments with nothing current,
    compacted ones, and unreadable leftovers."""
    try:
        with os.scandir(pack_dir(root)) as it:
            gone = [e.path for e in it if e.is_file() and e.path not in keep]
    except OSError:
        return
    for path in gone:
        silent_remove(path)


def remove_pack(root: str) -> None:
    shutil.rmtree(pack_dir(root), ignore_errors=True)
