"""Stored fleet facts: what the pushdown asks of every run, answered once per pack segment when the
segment is written, so a many-run command reads a few MB instead of scanning every point.

For each (run, key) of a segment: the per-key facts (`pushdown.KeyFacts`: points, last step,
non-finite values and where the first was, wall-time span, first step), the tail — the last
distinct finite steps, each with the value logged last there — the value of the key's last row,
and, for loss-like keys, the spike rule's episodes. They are computed by the same `FleetFacts` queries and the same spike rule a
command would run, over that segment's rows, so an answer read from here is the answer the query
gives (tests/fleet/test_pushdown.py compares both to the in-memory path).

`_pack/seg-X.facts.arrow` (Arrow IPC) sits beside `_pack/seg-X.parquet`. A row counts only for
the run's current pack entry (same segment, same content hash); stored spikes only for the same
spike rule (`spike_rule_id`). A missing, unreadable or other-version file is ignored: the queries
answer instead. Like the pack, it is derived data: delete it any time.
"""

from __future__ import annotations

import json
import math
import os
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from .writer import write_staged

if TYPE_CHECKING:
    from .pack import Segment

FACTS_VERSION = 2  # 2: the last logged value of every key (what watch reads)
SUFFIX = ".facts.arrow"
TAIL = 8  # rows of the tail query per (run, key): the last distinct steps among the last 8 rows
_META = b"rundiff.fleet.facts"
_FACT_COLUMNS = ("n", "last", "n_bad", "first_bad", "n_wall", "wall_min", "wall_max", "first")


def facts_path(segment_path: str) -> str:
    return segment_path[: -len(".parquet")] + SUFFIX


def spike_rule_id() -> str:
    """What stored spikes were computed with: the rule's text, its constants and its version."""
    from ..engines import stats

    return (f"{stats.SPIKE_RULE}; separation {stats.SPIKE_SEPARATION}; "
            f"v{stats.SPIKE_RULE_VERSION}")


# -- writing ----------------------------------------------------------------------------------------
def store_facts(segment: Segment, dest: str, root: str, keys: Mapping[str, Mapping[str, Any]],
                tails: Mapping[tuple[str, str], Any], spikes: Mapping[tuple[str, str], list[Any]]
                ) -> int:
    """Write the facts of every run in `segment` (of the dataset at `root`) to `dest` (staged in
    the dataset's `_tmp/`, renamed into place); returns bytes written. `keys`, `tails` and
    `spikes` are the pushdown queries' answers (fleet/pack_writer.py asks them)."""
    uids = list(segment.index)
    spike_rows = {pair: json.dumps([_spike_row(s) for s in found]) for pair, found in spikes.items()}
    cols: dict[str, list[Any]] = {c: [] for c in
                                  ("run_uid", "content_hash", "key", *_FACT_COLUMNS,
                                   "n_finite", "last_finite", "tail_step", "tail_value",
                                   "last_logged", "spikes")}
    for uid in uids:
        chash = segment.index[uid][3]
        for key, f in sorted(keys.get(uid, {}).items()):
            cols["run_uid"].append(uid)
            cols["content_hash"].append(chash)
            cols["key"].append(key)
            for name, x in zip(_FACT_COLUMNS, f, strict=True):
                cols[name].append(x)
            n_fin, last_fin, t_steps, t_values, logged = tails[(uid, key)]
            cols["n_finite"].append(n_fin)
            cols["last_finite"].append(last_fin)
            cols["tail_step"].append(t_steps)
            cols["tail_value"].append(t_values)
            cols["last_logged"].append(logged)
            cols["spikes"].append(spike_rows.get((uid, key)))
    ints = {"n", "n_bad", "n_wall", "n_finite"}
    arrays = []
    for name, values in cols.items():
        if name in ("run_uid", "content_hash", "key", "spikes"):
            arrays.append(pa.array(values, pa.string()))
        elif name in ("tail_step", "tail_value"):
            arrays.append(pa.array(values, pa.list_(pa.float64())))
        else:
            arrays.append(pa.array(values, pa.int64() if name in ints else pa.float64()))
    table = pa.Table.from_arrays(arrays, names=list(cols)).replace_schema_metadata({_META: json.dumps({
        "version": FACTS_VERSION, "segment": os.path.basename(segment.path),
        "spike_rule": spike_rule_id(), "tail": TAIL}).encode()})

    def write(tmp: str) -> None:
        with pa.OSFile(tmp, "wb") as sink, pa.ipc.new_file(sink, table.schema) as out:
            out.write_table(table)

    return write_staged(root, dest, write, suffix=SUFFIX)


def _spike_row(s: Any) -> list[float | int]:
    return [s.step, s.value, s.score, s.level, s.first, s.last, s.points]


# -- reading ----------------------------------------------------------------------------------------
class StoredFacts:
    """One segment's stored facts, by run."""

    def __init__(self, path: str, segment: Segment) -> None:
        with pa.memory_map(path) as src:
            table = pa.ipc.open_file(src).read_all()
        meta = json.loads((table.schema.metadata or {}).get(_META, b"{}"))
        if meta.get("version") != FACTS_VERSION:
            raise ValueError("stored facts of another version")
        if meta.get("segment") != os.path.basename(segment.path):
            raise ValueError("stored facts of another segment")
        self.spike_rule = meta.get("spike_rule")
        uid = table.column("run_uid").to_pylist()
        self._hash = table.column("content_hash").to_pylist()
        self._key = table.column("key").to_pylist()
        self._facts = list(zip(*(_plain(table.column(c)) for c in _FACT_COLUMNS), strict=True))
        self._n_finite = table.column("n_finite").to_pylist()
        self._last_finite = _plain(table.column("last_finite"))
        steps = table.column("tail_step").combine_chunks()
        values = table.column("tail_value").combine_chunks()
        self._offsets = _numbers(steps.offsets, np.int32)
        self._tail_step = _numbers(steps.flatten(), np.float64)
        self._tail_value = _numbers(values.flatten(), np.float64)
        self._last_logged = _plain(table.column("last_logged"))
        self._spikes = table.column("spikes").to_pylist()
        self._rows: dict[str, tuple[int, int]] = {}
        start = 0
        for i in range(1, len(uid) + 1):
            if i == len(uid) or uid[i] != uid[start]:
                self._rows[uid[start]] = (start, i)
                start = i

    def covers(self, uid: str, content_hash: str) -> bool:
        """True when this file holds the facts of the run's points with this content hash."""
        got = self._rows.get(uid)
        return got is not None and self._hash[got[0]] == content_hash

    def key_facts(self, uid: str) -> dict[str, tuple[Any, ...]]:
        a, b = self._rows[uid]
        return {self._key[i]: self._facts[i] for i in range(a, b)}

    def tails(self, uid: str) -> dict[str, tuple[int, float, np.ndarray, np.ndarray]]:
        """{key: (finite steps, last finite step, tail steps ascending, their values)}."""
        a, b = self._rows[uid]
        return {self._key[i]: self._tail(i) for i in range(a, b)}

    def tail(self, uid: str, key: str) -> tuple[int, float, np.ndarray, np.ndarray] | None:
        """`tails(uid)[key]` without building the others (asked once per run and metric)."""
        a, b = self._rows[uid]
        for i in range(a, b):
            if self._key[i] == key:
                return self._tail(i)
        return None

    def _tail(self, i: int) -> tuple[int, float, np.ndarray, np.ndarray]:
        lo, hi = self._offsets[i], self._offsets[i + 1]
        return (self._n_finite[i], self._last_finite[i], self._tail_step[lo:hi],
                self._tail_value[lo:hi])

    def last_logged(self, uid: str) -> dict[str, float]:
        """{key: the value of its last row in logged order} (NaN for a null value)."""
        a, b = self._rows[uid]
        return {self._key[i]: self._last_logged[i] for i in range(a, b)}

    def spikes(self, uid: str, rule_id: str) -> dict[str, list[Any]] | None:
        """{loss-like key: its spikes} under `rule_id`, or None when stored under another rule."""
        if rule_id != self.spike_rule:
            return None
        from ..engines.stats import Spike

        a, b = self._rows[uid]
        return {self._key[i]: [Spike(*row) for row in json.loads(self._spikes[i])]
                for i in range(a, b) if self._spikes[i] is not None}


def _numbers(arr: Any, dtype: Any) -> np.ndarray:
    """A null-free numeric Arrow array as numpy, straight from its buffer (`to_numpy` makes
    pyarrow import pandas, ~0.4 s a command that otherwise needs none)."""
    if arr.null_count:
        raise ValueError("stored facts with nulls in a numeric column")
    size = np.dtype(dtype).itemsize
    return np.frombuffer(arr.buffers()[1], dtype=dtype, count=len(arr), offset=arr.offset * size)


def _plain(col: Any) -> list[Any]:
    """Column values as Python numbers, NaN where null (DuckDB's None for "no value")."""
    return [math.nan if x is None else x for x in col.to_pylist()]


_OPEN: dict[str, tuple[tuple[int, int, int], StoredFacts | None]] = {}
_LOCK = threading.Lock()


def open_facts(segment: Segment) -> StoredFacts | None:
    """The segment's stored facts (read once per process while the file is unchanged), or None."""
    path = facts_path(segment.path)
    try:
        st = os.stat(path)
    except OSError:
        return None
    stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
    with _LOCK:
        hit = _OPEN.get(path)
        if hit is None or hit[0] != stamp:
            try:
                got: StoredFacts | None = StoredFacts(path, segment)
            except (pa.ArrowException, OSError, ValueError, KeyError, TypeError, IndexError):
                got = None  # unreadable: the queries answer
            if len(_OPEN) > 64:
                _OPEN.clear()
            hit = _OPEN[path] = (stamp, got)
        return hit[1]


def stored_for(entries: Mapping[Any, Mapping[str, Any]]) -> dict[str, StoredFacts]:
    """{uid: its segment's StoredFacts} for the runs (by segment → {uid: entry}) covered."""
    out: dict[str, StoredFacts] = {}
    for seg, by_uid in entries.items():
        stored = open_facts(seg)
        if stored is None:
            continue
        for uid, entry in by_uid.items():
            if stored.covers(uid, entry[3]):
                out[uid] = stored
    return out
