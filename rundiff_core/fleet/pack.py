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

This module reads the pack; fleet/pack_writer.py writes it (and each segment's facts, which it
computes with the pushdown's queries, so the writer sits above them and the reader below).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import RundiffError
from . import layout
from .schema import PARQUET_META_KEY, POINT_FILE_SCHEMA, SCHEMA_VERSION

PACK_META_KEY = b"rundiff.fleet.pack"
PACK_VERSION_KEY = b"rundiff.fleet.pack_version"
PACK_VERSION = 2  # 2: every row carries run_uid (v1 had no run_uid column)
PACK_DIR = "_pack"
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
