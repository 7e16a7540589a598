"""Writing the pack (fleet/pack.py): a new segment per export, compaction, and each segment's
stored facts (fleet/facts.py), computed by the same pushdown queries a command would run.

It sits above the queries (fleet/pushdown.py) that read what it writes, so the pack's reader,
the facts' reader and the queries never import the writer.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import RundiffError
from . import facts, layout
from .pack import (
    PACK_META_KEY,
    PACK_SCHEMA,
    Located,
    Segment,
    open_pack,
    pack_dir,
    read_located,
    wanted_entries,
)
from .writer import POINTS_WRITE_OPTIONS, into_place, silent_remove, staged

MAX_SEGMENTS = 8  # more than this after an export: compact into one
READ_BATCH = 64  # runs read per batch while writing a segment (bounded memory)
_KEY_TYPE = PACK_SCHEMA.field("key").type


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
            size = into_place(self._tmp, final)
        self.size, self.path = size + _write_facts(self.root, final), final


def _write_facts(root: str, segment_path: str) -> int:
    """Store the segment's facts (fleet/facts.py): bytes written, 0 when they could not be (the
    queries then answer what they would have; nothing is lost)."""
    try:
        return write_facts(Segment(segment_path), facts.facts_path(segment_path), root)
    except Exception:  # derived data: a failure here must not fail the export
        return 0


def write_facts(segment: Segment, dest: str, root: str) -> int:
    """Compute the facts of every run in `segment` (of the dataset at `root`) with the queries a
    command would run, and store them at `dest` in fleet/facts.py's format; returns bytes written."""
    from ..engines.runset import spike_rule
    from .pushdown import FleetFacts

    ff = FleetFacts(root, {}, list(segment.index), segment=segment, use_stored=False)
    try:
        keys = ff._query_keys()
        tails = ff.query_tails(facts.TAIL)
        spikes = {(uid, key): spike_rule(steps, values)
                  for uid, key, steps, values in ff.loss_series()}
    finally:
        ff.close()
    return facts.store_facts(segment, dest, root, keys, tails, spikes)


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
