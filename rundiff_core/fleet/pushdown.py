"""Fleet queries pushed down: what many-run engines ask of a `parquet:` dataset, answered by DuckDB
SQL over its pack instead of loading every history into Python.

A many-run command needs little of each run: the metric keys, the last step per metric (for the
common step), the value at one step per run, NaN/inf counts with the first bad step, the
wall-time span, and loss-like series for the spike rule. `FleetFacts` answers the first five
with two kinds of aggregate query (one per-(run, key) pass, one pass per (metric, step) asked),
and streams the loss-like series through the spike rule in bounded batches. `PushedRun` is a
`Run` whose fact methods read those answers; everything else it is asked (a history, a series)
it loads through the adapter as usual, so an engine that needs more is still right, just slower.

Semantics are `engines/align.py`'s exactly: non-finite steps are dropped, a duplicated step
keeps its last logged value (logged order = the row position in the Parquet file), nearest ties
go to the earlier step, a step past a run's end is "not reached". Which rows belong to a run is
the adapter's rule: its current pack entry, else its own partition file (a stale entry is never
read). Datasets without a pack, and every other source, use the in-memory path.

Turn it off with `--no-pushdown` or RUNDIFF_PUSHDOWN=0 (docs/fleet.md).
"""

from __future__ import annotations

import dataclasses
import math
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import InputError
from ..model import Run
from . import layout
from . import pack as packing

ENV = "RUNDIFF_PUSHDOWN"  # also read by commands/_pushdown.py
SPIKE_BATCH = 64  # runs whose loss-like series are in memory at once during a spike scan
KeyFacts = tuple[int, float, int, float, int, float, float]  # n, last, n_bad, first_bad, n_wall, wmin, wmax
Candidates = tuple[int, float, float, float, float, float]  # n finite, last, x_lo, y_lo, x_hi, y_hi


def enabled(flag_off: bool = False) -> bool:
    """Pushdown is on unless the command's `--no-pushdown` or RUNDIFF_PUSHDOWN=0 turns it off."""
    return not flag_off and os.environ.get(ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def is_loss_like(key: str) -> bool:
    """Keys whose series a spike scan streams (the spike rule only looks at loss keys)."""
    return "loss" in key.lower()


def _sql_str(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


@dataclass
class FleetFacts:
    """DuckDB answers about a set of runs of one dataset (`rows`: runs-table rows by uid)."""

    root: str
    rows: Mapping[str, Mapping[str, Any]]
    uids: list[str]
    _pack: Any = None
    _con: Any = None
    _keys: dict[str, dict[str, KeyFacts]] | None = None
    _at: dict[tuple[str, float], dict[str, Candidates]] = field(default_factory=dict)
    _spikes: dict[tuple[Any, str], dict[str, list[Any]]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # -- where each run's rows are ---------------------------------------------------------------
    def _sources(self) -> tuple[dict[Any, dict[str, Any]], list[tuple[str, str]]]:
        """({segment: {uid: its entry}}, [(partition file, uid)]): the adapter's rule per run."""
        if self._pack is None:
            self._pack = packing.open_pack(self.root) or False
        by_segment: dict[Any, dict[str, Any]] = {}
        partitions: list[tuple[str, str]] = []
        for uid in dict.fromkeys(self.uids):
            row = self.rows[uid]
            if not row.get("n_points"):
                continue  # no points: an empty history, as the adapter returns
            hit = self._pack.entry(uid, row.get("n_points"), row.get("content_hash")) \
                if self._pack else None
            if hit is not None:
                by_segment.setdefault(hit[0], {})[uid] = hit[1]
                continue
            path = layout.points_file(self.root, row.get("source") or "", uid)
            if not os.path.isfile(path):
                raise InputError(
                    f"run {uid} has {row['n_points']} points in the runs table but its "
                    f"partition {path} is missing",
                    hint="re-run `rundiff export` on this dataset to rewrite it",
                )
            partitions.append((path, uid))
        return by_segment, partitions

    def _connect(self) -> Any:
        if self._con is not None:
            return self._con
        import duckdb
        import pyarrow as pa

        con = duckdb.connect(":memory:", config={
            "autoinstall_known_extensions": False, "autoload_known_extensions": False,
            "memory_limit": os.environ.get("RUNDIFF_DUCKDB_MEMORY", "2GB"),
            "threads": max(1, min(4, os.cpu_count() or 1)),
        })
        by_segment, partitions = self._sources()
        parts = []
        for i, (seg, uids) in enumerate(by_segment.items()):
            scan = (f"SELECT run_uid::VARCHAR AS run_uid, key::VARCHAR AS key, step, value, "
                    f"wall_time, file_row_number AS pos FROM read_parquet({_sql_str(seg.path)}, "
                    f"file_row_number = true)")
            if set(uids) != set(seg.index):  # stale entries or unselected runs share the file
                con.register(f"_want_{i}", pa.table({"uid": pa.array(list(uids), pa.string())}))
                scan += f" WHERE run_uid IN (SELECT uid FROM _want_{i})"
            parts.append(scan)
        if partitions:
            con.register("_partitions", pa.table({
                "filename": pa.array([p for p, _u in partitions], pa.string()),
                "uid": pa.array([u for _p, u in partitions], pa.string())}))
            files = "[" + ", ".join(_sql_str(p) for p, _u in partitions) + "]"
            parts.append(
                "SELECT m.uid AS run_uid, p.key::VARCHAR AS key, p.step, p.value, p.wall_time, "
                f"p.file_row_number AS pos FROM read_parquet({files}, filename = true, "
                "file_row_number = true) p JOIN _partitions m USING (filename)")
        if not parts:
            parts.append("SELECT NULL::VARCHAR AS run_uid, NULL::VARCHAR AS key, NULL::DOUBLE AS "
                         "step, NULL::DOUBLE AS value, NULL::DOUBLE AS wall_time, "
                         "NULL::BIGINT AS pos WHERE false")
        con.execute("CREATE VIEW pts AS " + " UNION ALL ".join(parts))
        self._con = con
        return con

    # -- per (run, key) facts -------------------------------------------------------------------
    def key_facts(self, uid: str) -> dict[str, KeyFacts]:
        """{key: facts} of one run, from one GROUP BY over every selected run (asked once)."""
        with self._lock:
            if self._keys is None:
                self._keys = self._query_keys()
        return self._keys.get(uid, {})

    def _query_keys(self) -> dict[str, dict[str, KeyFacts]]:
        bad = "(value IS NULL OR NOT isfinite(value))"
        sql = f"""
            SELECT run_uid, key, count(*),
                   max(step) FILTER (NOT isnan(step)),
                   count(*) FILTER ({bad}),
                   arg_min(coalesce(step, 'NaN'::DOUBLE), pos) FILTER ({bad}),
                   count(*) FILTER (isfinite(wall_time)),
                   min(wall_time) FILTER (isfinite(wall_time)),
                   max(wall_time) FILTER (isfinite(wall_time))
            FROM pts GROUP BY run_uid, key"""
        out: dict[str, dict[str, KeyFacts]] = {}
        for row in self._connect().execute(sql).fetchall():
            out.setdefault(row[0], {})[row[1]] = (
                int(row[2]), _f(row[3]), int(row[4]), _f(row[5]), int(row[6]), _f(row[7]),
                _f(row[8]))
        return out

    # -- values at a step ------------------------------------------------------------------------
    def candidates(self, uid: str, key: str, target: float) -> Candidates | None:
        """The points `slice_sorted` chooses from at `target`: the last finite step below it and
        the first at or above it, each with the value logged last at that step. One query per
        (key, target) answers every selected run."""
        cache_key = (key, target if not math.isnan(target) else math.inf)
        with self._lock:
            hit = self._at.get(cache_key)
            if hit is None:
                hit = self._at[cache_key] = self._query_at(*cache_key)
        return hit.get(uid)

    def _query_at(self, key: str, target: float) -> dict[str, Candidates]:
        # a NaN target is asked as +inf: numpy's searchsorted puts NaN past every finite step,
        # so the last point is the one chosen, as every finite step is below +inf
        sql = """
            SELECT run_uid, count(*), max(step),
                   max(step) FILTER (step < $t),
                   arg_max(coalesce(value, 'NaN'::DOUBLE), {'s': step, 'p': pos})
                       FILTER (step < $t),
                   min(step) FILTER (step >= $t),
                   arg_min(coalesce(value, 'NaN'::DOUBLE), {'s': step, 'p': -pos})
                       FILTER (step >= $t)
            FROM pts WHERE key = $k AND isfinite(step) GROUP BY run_uid"""
        rows = self._connect().execute(sql, {"t": float(target), "k": key}).fetchall()
        return {r[0]: (int(r[1]), _f(r[2]), _f(r[3]), _f(r[4]), _f(r[5]), _f(r[6])) for r in rows}

    # -- spike scans -----------------------------------------------------------------------------
    def spikes(self, uid: str, key: str, rule: Callable[[np.ndarray, np.ndarray], list[Any]],
               load: Callable[[], tuple[np.ndarray, np.ndarray]]) -> list[Any]:
        """`rule(steps, values)` of one run's `key`. Loss-like keys of every selected run are
        streamed through `rule` in one pass (SPIKE_BATCH runs in memory at a time) the first time
        one is asked; any other key is loaded through `load` for this run alone."""
        if not is_loss_like(key):
            return rule(*load())
        with self._lock:
            done = self._spikes.get((rule, "*"))
            if done is None:
                done = self._spikes[(rule, "*")] = self._scan_spikes(rule)
        return done.get(uid, {}).get(key, [])

    def _scan_spikes(self, rule: Callable[[np.ndarray, np.ndarray], list[Any]]
                     ) -> dict[str, dict[str, list[Any]]]:
        out: dict[str, dict[str, list[Any]]] = {}
        for uid, key, steps, values in self.loss_series():
            out.setdefault(uid, {})[key] = rule(steps, values)
        return out

    def loss_series(self) -> Iterator[tuple[str, str, np.ndarray, np.ndarray]]:
        """(uid, key, steps, values) of every loss-like key of every selected run, logged order.

        Read straight from the pack's row groups (a row group is one run: no sort needed) or the
        run's partition, SPIKE_BATCH runs per read."""
        by_segment, partitions = self._sources()
        for seg, entries in by_segment.items():
            uids = list(entries)
            for start in range(0, len(uids), SPIKE_BATCH):
                batch = uids[start:start + SPIKE_BATCH]
                tables = seg.read([entries[u] for u in batch], columns=["key", "step", "value"])
                for uid, table in zip(batch, tables, strict=True):
                    yield from _loss_of(uid, table)
        for path, uid in partitions:
            yield from _loss_of(uid, layout.read_table(path, read_dictionary=["key"]))

    def close(self) -> None:
        if self._con is not None:
            self._con.close()
            self._con = None


def _loss_of(uid: str, table: Any) -> Iterator[tuple[str, str, np.ndarray, np.ndarray]]:
    import pyarrow as pa
    import pyarrow.compute as pc

    key = table.column("key")
    names = pc.unique(key).to_pylist() if not pa.types.is_dictionary(key.type) else \
        sorted({str(k) for chunk in key.chunks for k in chunk.dictionary.to_pylist()})
    wanted = [k for k in names if k is not None and is_loss_like(k)]
    if not wanted:
        return
    plain = key.cast(pa.string()) if pa.types.is_dictionary(key.type) else key
    step = _floats(table.column("step"))
    value = _floats(table.column("value"))
    for k in sorted(wanted):
        rows = np.flatnonzero(pc.equal(plain, k).to_numpy(zero_copy_only=False))
        if len(rows):
            yield uid, k, step[rows], value[rows]


def _floats(col: Any) -> np.ndarray:
    arr = col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()
    return np.asarray(arr.to_numpy(zero_copy_only=False), dtype=np.float64)


def _f(x: Any) -> float:
    return math.nan if x is None else float(x)


@dataclass
class PushedRun(Run):
    """A run of a fleet dataset whose many-run facts come from `FleetFacts` (see module doc)."""

    facts: FleetFacts | None = field(default=None, repr=False, compare=False)
    fleet_uid: str = ""

    def _facts(self) -> dict[str, KeyFacts]:
        assert self.facts is not None
        return self.facts.key_facts(self.fleet_uid)

    def metric_keys(self) -> list[str]:
        return sorted(self._facts())

    def last_step(self, key: str) -> float:
        got = self._facts().get(key)
        return got[1] if got else math.nan

    def nonfinite(self, key: str) -> tuple[int, float | None]:
        got = self._facts().get(key)
        if not got or not got[2]:
            return 0, None
        return got[2], got[3]

    def wall_span(self) -> tuple[int, float, float]:
        facts = self._facts().values()
        n = sum(f[4] for f in facts)
        if not n:
            return 0, math.nan, math.nan
        return (n, min(f[5] for f in facts if f[4]), max(f[6] for f in facts if f[4]))

    def pushed_slice(self, key: str, target: float, mode: str) -> Any:
        """`slice_at(*self.series(key)[:2], target, mode)`, from the candidates query."""
        from ..engines.align import ALIGN_MODES, Slice

        if mode not in ALIGN_MODES:
            raise ValueError(f"align mode must be one of {ALIGN_MODES}")
        assert self.facts is not None
        got = self.facts.candidates(self.fleet_uid, key, target)
        if not got or not got[0]:
            return Slice(target, math.nan, math.nan, "empty")
        _n, last, x_lo, y_lo, x_hi, y_hi = got
        if target > last:
            return Slice(target, math.nan, last, "not reached")
        if x_hi == target:
            return Slice(target, y_hi, x_hi, "exact")
        if mode == "interpolate" and not math.isnan(x_lo) and not math.isnan(x_hi):
            x0, x1, y0, y1 = (np.float64(v) for v in (x_lo, x_hi, y_lo, y_hi))
            value = y0 + (y1 - y0) * (target - x0) / (x1 - x0)
            return Slice(target, float(value), float(target), "interpolate", (x_lo, x_hi))
        cands = [(x, y) for x, y in ((x_lo, y_lo), (x_hi, y_hi)) if not math.isnan(x)]
        x, y = min(cands, key=lambda c: (abs(c[0] - target), c[0]))
        return Slice(target, y, x, "nearest")

    def pushed_spikes(self, key: str, rule: Callable[[np.ndarray, np.ndarray], list[Any]]
                      ) -> list[Any]:
        assert self.facts is not None

        def load() -> tuple[np.ndarray, np.ndarray]:
            steps, values, _w = Run.series(self, key)
            return steps, values

        return self.facts.spikes(self.fleet_uid, key, rule, load)


_RUN_FIELDS = [f.name for f in dataclasses.fields(Run) if f.init]


def pushed(run: Run, facts: FleetFacts, uid: str) -> PushedRun:
    """`run` (metadata and a bound loader, no history read) as a PushedRun answering from facts."""
    return PushedRun(**{name: getattr(run, name) for name in _RUN_FIELDS}, facts=facts,
                     fleet_uid=uid)


def load_pushed(sources: Sequence[str]) -> list[Run] | None:
    """The runs of `sources` as PushedRuns, or None when any source cannot push down (not a fleet
    dataset, no pack, no duckdb): the caller then loads every history in memory."""
    from ..resolve import open_source

    opened = [open_source(raw) for raw in sources]
    handles = []
    for src in opened:
        hook = getattr(src, "fleet_pushdown", None)
        handle = hook() if callable(hook) else None
        if handle is None:
            return None
        handles.append((src, handle))
    runs: list[Run] = []
    for src, (root, rows) in handles:
        refs = src.list_runs()
        facts = FleetFacts(root, rows, [r.run_id for r in refs])
        for ref in refs:
            runs.append(pushed(src.load_run(ref), facts, ref.run_id))
    return runs
