"""Fleet queries pushed down: what many-run engines ask of a `parquet:` dataset, answered by DuckDB
SQL over its pack instead of loading every history into Python.

A many-run command needs little of each run: the metric keys, the last step per metric (for the
common step), the value at one step per run, NaN/inf counts with the first bad step, the
wall-time span, and loss-like series for the spike rule. `FleetFacts` answers the first five
with one GROUP BY (run, key) over every row and one scan of the rows near the common steps (with
an exact fallback for runs the window cannot prove), and streams the loss-like series through the
spike rule in bounded batches on a worker thread meanwhile. `PushedRun` is a
`Run` whose fact methods read those answers (and, for compare, `Near`: the rows near the
student's steps); everything else it is asked (a history, a series)
it loads through the adapter as usual, so an engine that needs more is still right, just slower.

Semantics are `engines/align.py`'s exactly: non-finite steps are dropped, a duplicated step
keeps its last logged value (logged order = the row position in the Parquet file), nearest ties
go to the earlier step, a step past a run's end is "not reached". Which rows belong to a run is
the adapter's rule: its current pack entry, else its own partition file (a stale entry is never
read). Datasets without a pack, and every other source, use the in-memory path. With
`--engine dask`, fleet/pushdown_dask.py answers the same `_query_*` questions and spike scan over
the same files.

Turn it off with `--no-pushdown` or RUNDIFF_PUSHDOWN=0 (docs/fleet.md).
"""

from __future__ import annotations

import dataclasses
import math
import os
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import InputError
from ..model import Run
from . import layout
from . import pack as packing
from .facts import TAIL, spike_rule_id, stored_for

ENV = "RUNDIFF_PUSHDOWN"  # also read by commands/_pushdown.py
BATCH_KEYS = 16  # a values-at scan answers up to this many keys at their common steps at once
SPIKE_BATCH = 64  # runs whose loss-like series are in memory at once during a spike scan
# n, last, n_bad, first_bad, n_wall, wall min, wall max, min step (plain: -inf/NaN as DuckDB has them)
KeyFacts = tuple[int, float, int, float, int, float, float, float]
# finite steps (> 0 is what matters), last finite step, x_lo, y_lo, x_hi, y_hi
Candidates = tuple[int, float, float, float, float, float]


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
    prefetch: Callable[[np.ndarray, np.ndarray], list[Any]] | None = None  # spike rule to start
    engine: Any = None  # None: DuckDB; a pushdown_dask.DaskQueries answers the _query_* instead
    segment: Any = None  # a pack Segment: its runs, nothing else (fleet/facts.py computes them)
    use_stored: bool = True  # answer from fleet/facts.py's stored facts where they hold
    _pack: Any = None
    _stored: dict[str, Any] | None = None
    _con: Any = None
    _keys: dict[str, dict[str, KeyFacts]] | None = None
    _at: dict[tuple[str, float], dict[str, Candidates]] = field(default_factory=dict)
    _spikes: dict[Any, Any] = field(default_factory=dict)  # spike rule → Future of its results
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # -- where each run's rows are ---------------------------------------------------------------
    def _sources(self) -> tuple[dict[Any, dict[str, Any]], list[tuple[str, str]]]:
        """({segment: {uid: its entry}}, [(partition file, uid)]): the adapter's rule per run."""
        if self.segment is not None:
            return {self.segment: dict(self.segment.index)}, []
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
            # spills (never expected: the answers are per run) go to the system temp dir, never
            # the working directory, which may be a run folder
            "temp_directory": os.path.join(tempfile.gettempdir(), f"rundiff-duckdb-{os.getpid()}"),
            "threads": max(1, min(4, os.cpu_count() or 1)),
        })
        con.execute("SET enable_progress_bar = false")  # never draw on the user's stderr
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
                "file_row_number = true, hive_partitioning = false) p "
                "JOIN _partitions m USING (filename)")
        if not parts:
            parts.append("SELECT NULL::VARCHAR AS run_uid, NULL::VARCHAR AS key, NULL::DOUBLE AS "
                         "step, NULL::DOUBLE AS value, NULL::DOUBLE AS wall_time, "
                         "NULL::BIGINT AS pos WHERE false")
        con.execute("CREATE VIEW pts AS " + " UNION ALL ".join(parts))
        self._con = con
        return con

    # -- per (run, key) facts -------------------------------------------------------------------
    def key_facts(self, uid: str) -> dict[str, KeyFacts]:
        """{key: facts} of one run, from one GROUP BY over every selected run (asked once; the
        spike scan of `prefetch`'s rule starts beside it)."""
        if self._keys is None:
            if self.prefetch is not None:
                self.prefetch_spikes(self.prefetch)
            with self._lock:
                if self._keys is None:
                    stored = self._stored_facts()
                    keys = {u: f.key_facts(u) for u, f in stored.items()}
                    rest = self._without(stored)
                    if rest is not None:
                        keys.update(rest._query_keys())
                        if rest is not self:
                            rest.close()
                    self._keys = keys
        return self._keys.get(uid, {})

    def _stored_facts(self) -> dict[str, Any]:
        """{uid: StoredFacts} of the selected runs whose current pack entry has stored facts."""
        if self._stored is None:
            self._stored = stored_for(self._sources()[0]) if self.use_stored else {}
        return self._stored

    def _without(self, covered: Mapping[str, Any]) -> FleetFacts | None:
        """The FleetFacts that answers the runs `covered` does not: self when it covers none,
        None when it covers all."""
        if not covered:
            return self
        rest = [u for u in dict.fromkeys(self.uids)
                if u not in covered and self.rows[u].get("n_points")]
        if not rest:
            return None
        return FleetFacts(self.root, self.rows, rest, engine=self.engine, use_stored=False,
                          _pack=self._pack)

    def _query_keys(self) -> dict[str, dict[str, KeyFacts]]:
        """Plain aggregates first (a third cheaper than filtered ones); where they show a
        non-finite step, value or wall time, a filtered query over just those rows says exactly
        how many and where (DuckDB's max() is NaN when a NaN is present, ±inf pass through)."""
        if self.engine is not None:
            return self.engine.query_keys(self)
        con = self._connect()
        plain = con.execute("""
            SELECT run_uid, key, count(*), max(step), count(value), min(value), max(value),
                   count(wall_time), min(wall_time), max(wall_time), min(step)
            FROM pts GROUP BY run_uid, key""").fetchall()
        finite = math.isfinite
        out: dict[str, dict[str, list[Any]]] = {}
        nan_steps = bad_values = bad_walls = False
        for uid, key, n, smax, nv, vmin, vmax, nw, wmin, wmax, smin in plain:
            last = _f(smax)
            nan_steps |= smax is not None and math.isnan(smax)
            values_ok = nv == n and (not n or (finite(vmin) and finite(vmax)))
            bad_values |= not values_ok
            walls_ok = not nw or (finite(wmin) and finite(wmax))
            bad_walls |= not walls_ok
            out.setdefault(uid, {})[key] = [
                int(n), last, 0, math.nan,
                int(nw) if walls_ok else 0, _f(wmin) if walls_ok and nw else math.nan,
                _f(wmax) if walls_ok and nw else math.nan, _f(smin)]
        if nan_steps:  # the last step ignores NaN steps (±inf count)
            for uid, key, last in con.execute(
                    "SELECT run_uid, key, max(step) FROM pts WHERE NOT isnan(step) "
                    "GROUP BY run_uid, key").fetchall():
                out[uid][key][1] = _f(last)  # keys with only NaN steps keep NaN
        if bad_values:
            for uid, key, n_bad, first in con.execute(
                    "SELECT run_uid, key, count(*), arg_min(coalesce(step, 'NaN'::DOUBLE), pos) "
                    "FROM pts WHERE value IS NULL OR NOT isfinite(value) "
                    "GROUP BY run_uid, key").fetchall():
                out[uid][key][2:4] = [int(n_bad), _f(first)]
        if bad_walls:
            for uid, key, nw, wmin, wmax in con.execute(
                    "SELECT run_uid, key, count(*), min(wall_time), max(wall_time) FROM pts "
                    "WHERE isfinite(wall_time) GROUP BY run_uid, key").fetchall():
                out[uid][key][4:7] = [int(nw), _f(wmin), _f(wmax)]
        return {u: {k: tuple(f) for k, f in facts.items()} for u, facts in out.items()}

    # -- values at a step ------------------------------------------------------------------------
    def candidates(self, uid: str, key: str, target: float) -> Candidates | None:
        """The points `slice_sorted` chooses from at `target`: the last finite step below it and
        the first at or above it, each with the value logged last at that step.

        One scan answers every selected run. When `target` is this fleet's common step of `key`
        (what `rank` asks), the same scan also answers every other key at its common step (up
        to BATCH_KEYS keys): a scan costs about the same for one key as for all."""
        t = math.inf if math.isnan(target) else float(target)
        stored = self._stored_facts().get(uid)
        if stored is not None:
            tail = stored.tail(uid, key)
            got = _from_tail(tail, t) if tail is not None else None
            if got is not _UNSURE:
                return got  # type: ignore[return-value]
        with self._lock:
            hit = self._at.get((key, t))
            if hit is None:
                ask = {key: t}
                guesses = self._common_steps()
                if guesses.get(key) == t and len(guesses) <= BATCH_KEYS:
                    ask.update((k, g) for k, g in guesses.items() if (k, g) not in self._at)
                self._at.update(self._query_near(ask))
                hit = self._at[(key, t)]
        return hit.get(uid)

    def _common_steps(self) -> dict[str, float]:
        """{key: the step `rank` compares it at} (`runset.reach_step` of the runs' last steps)."""
        from ..engines.runset import reach_step

        lasts: dict[str, list[float]] = {}
        for facts in (self._keys or {}).values():
            for k, f in facts.items():
                lasts.setdefault(k, []).append(f[1])
        out = {k: reach_step(v) for k, v in lasts.items()}
        return {k: (math.inf if math.isnan(v) else v) for k, v in out.items()}

    def _query_near(self, targets: Mapping[str, float]
                    ) -> dict[tuple[str, float], dict[str, Candidates]]:
        """`_query_at`'s answers from one cheap scan of the rows near the targets.

        The window is the targets ± the widest mean step spacing of any (run, key) (from the
        per-key facts; a sparse run widens it: more rows read, same answers); DuckDB filters it
        while reading. A (run, key) whose answer the window
        cannot prove — no candidate below the target in it while the run has steps before it, no
        candidate at or above while it has steps after it, or ±inf steps — is answered by
        `_query_at` instead, so every answer is exact."""
        if self.engine is not None:
            return self.engine.query_near(self, targets)
        import pyarrow as pa

        keys = self._keys
        finite = math.isfinite
        if keys is None or not all(finite(t) for t in targets.values()):
            return self._query_at(targets)
        widths = [0.0]
        pairs = []
        for uid, facts in keys.items():
            for k in targets:
                f = facts.get(k)
                if f is None or math.isnan(f[1]):
                    continue  # no such key, or no finite step: empty either way
                pairs.append((uid, k, f))
                if f[0] > 1 and finite(f[1]) and finite(f[7]):
                    widths.append((f[1] - f[7]) / (f[0] - 1))
        width = max(widths)
        a = min(targets.values()) - width
        b = max(targets.values()) + width
        con = self._connect()
        con.register("_keys", pa.table({"key": pa.array(list(targets), pa.string())}))
        near: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for uid, k, step, value in con.execute("""
                SELECT run_uid, key, step, arg_max(coalesce(value, 'NaN'::DOUBLE), pos)
                FROM pts WHERE step >= $a AND step <= $b AND key IN (SELECT key FROM _keys)
                GROUP BY run_uid, key, step""", {"a": a, "b": b}).fetchall():
            near.setdefault((uid, k), []).append((step, value))
        con.unregister("_keys")
        out: dict[tuple[str, float], dict[str, Candidates]] = {
            (k, t): {} for k, t in targets.items()}
        unsure: set[tuple[str, str]] = set()
        for uid, k, f in pairs:
            t, last, first = targets[k], f[1], f[7]
            if not (finite(last) and finite(first)):
                unsure.add((uid, k))
                continue
            rows = near.get((uid, k), [])
            below = [r for r in rows if r[0] < t]
            above = [r for r in rows if r[0] >= t]
            lo = max(below) if below else None
            hi = min(above) if above else None
            if (lo is None and first < a) or (hi is None and last > b):
                unsure.add((uid, k))
                continue
            out[(k, t)][uid] = (1, last, *(lo or (math.nan, math.nan)),
                                *(hi or (math.nan, math.nan)))
        if unsure:
            exact = self._query_at({k: targets[k] for _u, k in unsure})
            for uid, k in unsure:
                got = exact[(k, targets[k])].get(uid)
                if got is not None:
                    out[(k, targets[k])][uid] = got
        return out

    def _query_at(self, targets: Mapping[str, float]) -> dict[tuple[str, float], dict[str, Candidates]]:
        """Two scans: the candidate steps of every (run, key) from the step column alone, then
        the last-logged value at those steps from the few rows between the lowest and highest
        candidate (a constant range DuckDB filters while reading)."""
        if self.engine is not None:
            return self.engine.query_at(self, targets)
        import pyarrow as pa

        con = self._connect()
        con.register("_targets", pa.table({"key": pa.array(list(targets), pa.string()),
                                           "t": pa.array(list(targets.values()), pa.float64())}))
        steps = con.execute("""
            SELECT run_uid, key, count(*), max(step), max(step) FILTER (step < t),
                   min(step) FILTER (step >= t)
            FROM pts JOIN _targets USING (key) WHERE isfinite(step)
            GROUP BY run_uid, key""").fetchall()
        con.unregister("_targets")
        cand = [(u, k, lo, hi) for u, k, _n, _l, lo, hi in steps
                if lo is not None or hi is not None]
        values: dict[tuple[str, str, float], float] = {}
        bounds = [x for _u, _k, lo, hi in cand for x in (lo, hi) if x is not None]
        if bounds:
            con.register("_cand", pa.table({
                "run_uid": pa.array([c[0] for c in cand], pa.string()),
                "key": pa.array([c[1] for c in cand], pa.string()),
                "lo": pa.array([c[2] for c in cand], pa.float64()),
                "hi": pa.array([c[3] for c in cand], pa.float64())}))
            rows = con.execute("""
                SELECT p.run_uid, p.key, p.step, arg_max(coalesce(p.value, 'NaN'::DOUBLE), p.pos)
                FROM (SELECT * FROM pts WHERE step >= $a AND step <= $b) p
                JOIN _cand c ON p.run_uid = c.run_uid AND p.key = c.key
                    AND (p.step = c.lo OR p.step = c.hi)
                GROUP BY p.run_uid, p.key, p.step""",
                {"a": min(bounds), "b": max(bounds)}).fetchall()
            con.unregister("_cand")
            values = {(u, k, x): v for u, k, x, v in rows}
        out: dict[tuple[str, float], dict[str, Candidates]] = {
            (k, t): {} for k, t in targets.items()}
        for u, k, n, last, lo, hi in steps:
            out[(k, targets[k])][u] = (
                int(n), _f(last), _f(lo), _f(values.get((u, k, lo))) if lo is not None else
                math.nan, _f(hi), _f(values.get((u, k, hi))) if hi is not None else math.nan)
        return out

    # -- spike scans -----------------------------------------------------------------------------
    def spikes(self, uid: str, key: str, rule: Callable[[np.ndarray, np.ndarray], list[Any]],
               load: Callable[[], tuple[np.ndarray, np.ndarray]]) -> list[Any]:
        """`rule(steps, values)` of one run's `key`. Loss-like keys of every selected run are
        streamed through `rule` in one pass (SPIKE_BATCH runs in memory at a time) the first time
        one is asked; any other key is loaded through `load` for this run alone."""
        if not is_loss_like(key):
            return rule(*load())
        return self._scan(rule).result().get(uid, {}).get(key, [])

    def prefetch_spikes(self, rule: Callable[[np.ndarray, np.ndarray], list[Any]]) -> None:
        """Start the spike scan on a worker thread, so it runs while DuckDB answers the rest
        (its reads and numpy release the GIL); `spikes` with the same rule waits for it."""
        self._scan(rule, start=True)

    def _scan(self, rule: Callable[[np.ndarray, np.ndarray], list[Any]], start: bool = False
              ) -> Any:
        from concurrent.futures import Future

        with self._lock:
            fut = self._spikes.get(rule)
            if fut is not None:
                return fut
            fut = self._spikes[rule] = Future()

        def work() -> None:
            try:
                out, rest = self._stored_spikes(rule)
                if rest is not None:
                    if rest.engine is not None:
                        out.update(rest.engine.query_spikes(rest, rule))
                    else:
                        for uid, key, steps, values in rest.loss_series():
                            out.setdefault(uid, {})[key] = rule(steps, values)
                    if rest is not self:
                        rest.close()
                fut.set_result(out)
            except BaseException as exc:  # raised where the result is asked for
                fut.set_exception(exc)

        if start:
            threading.Thread(target=work, name="rundiff-spike-scan").start()
        else:
            work()
        return fut

    def _stored_spikes(self, rule: Callable[[np.ndarray, np.ndarray], list[Any]]
                       ) -> tuple[dict[str, dict[str, list[Any]]], FleetFacts | None]:
        """(the spikes stored for `rule`, by run; the FleetFacts of the runs left to scan)."""
        from ..engines.runset import spike_rule

        out: dict[str, dict[str, list[Any]]] = {}
        if rule is spike_rule:
            for uid in self._stored_facts():
                got = self.stored_spikes(uid)
                if got is not None:
                    out[uid] = got
        return out, self._without(out)

    def stored_spikes(self, uid: str) -> dict[str, list[Any]] | None:
        """{loss-like key: `spike_rule`'s episodes} stored for the run (fleet/facts.py), or None
        when its stored facts do not hold or were computed under another spike rule."""
        stored = self._stored_facts().get(uid)
        return stored.spikes(uid, spike_rule_id()) if stored is not None else None

    def query_tails(self, k: int) -> dict[tuple[str, str], tuple[int, float, list[float],
                                                                  list[float], float]]:
        """{(uid, key): (finite steps, last finite step, tail steps, their values, last logged
        value)}: the tail is the distinct steps among each key's last `k` rows by (step, logged
        order), ascending, each with the value logged last there (every step above the tail's
        first is in it); the last logged value is the key's last row's, whatever its step."""
        con = self._connect()
        out = {}
        for uid, key, n, last, top, logged in con.execute(f"""
                SELECT run_uid, key, count(*) FILTER (WHERE isfinite(step)),
                       max(step) FILTER (WHERE isfinite(step)),
                       max(struct_pack(s := step, p := pos,
                                       v := coalesce(value, 'NaN'::DOUBLE)), {int(k)})
                           FILTER (WHERE isfinite(step)),
                       arg_max(coalesce(value, 'NaN'::DOUBLE), pos)
                FROM pts GROUP BY run_uid, key""").fetchall():
            steps: list[float] = []
            values: list[float] = []
            for row in top or ():  # (step, pos) descending: a step's first row is its last logged
                if not steps or row["s"] != steps[-1]:
                    steps.append(float(row["s"]))
                    values.append(float(row["v"]))
            out[(uid, key)] = (int(n), _f(last), steps[::-1], values[::-1], _f(logged))
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
                table = seg.read_joined([entries[u] for u in batch], ["key", "step", "value"])
                yield from _loss_of(batch, [entries[u][2] for u in batch], table)
        for path, uid in partitions:
            table = layout.read_table(path, read_dictionary=["key"])
            yield from _loss_of([uid], [table.num_rows], table)

    def close(self) -> None:
        if self._con is not None:
            self._con.close()
            self._con = None


_UNSURE = object()  # a tail that cannot prove the answer: ask the query


def _from_tail(tail: tuple[int, float, np.ndarray, np.ndarray], t: float) -> Any:
    """`candidates` from a stored tail (see `query_tails`), or _UNSURE when the answer may lie
    before it. Same answers as `_query_at`: (finite steps, last finite step, lo, y_lo, hi, y_hi)."""
    n, last, steps, values = tail
    if not n:
        return None  # no finite step: the query has no row for it either
    if t > steps[-1]:
        return (n, last, float(steps[-1]), float(values[-1]), math.nan, math.nan)
    if not (t > steps[0] or n <= TAIL):  # the tail holds every row when n <= TAIL
        return _UNSURE
    i = int(np.searchsorted(steps, t, side="left"))
    lo = (float(steps[i - 1]), float(values[i - 1])) if i > 0 else (math.nan, math.nan)
    return (n, last, *lo, float(steps[i]), float(values[i]))


def _loss_of(uids: Sequence[str], counts: Sequence[int], table: Any
             ) -> Iterator[tuple[str, str, np.ndarray, np.ndarray]]:
    """(uid, key, steps, values) of the loss-like keys in `table`, which holds `counts[i]` rows
    of `uids[i]` in turn (logged order kept within each)."""
    import pyarrow as pa

    key = table.column("key")
    if not pa.types.is_dictionary(key.type):
        key = key.dictionary_encode()
    key = key.unify_dictionaries() if key.num_chunks > 1 else key
    if not key.num_chunks:
        return
    names = key.chunk(0).dictionary.to_pylist()
    wanted = sorted((k, i) for i, k in enumerate(names) if k is not None and is_loss_like(k))
    if not wanted:
        return
    codes = np.concatenate([c.indices.to_numpy(zero_copy_only=False) for c in key.chunks])
    step = _floats(table.column("step"))
    value = _floats(table.column("value"))
    masks = [(k, codes == i) for k, i in wanted]
    offset = 0
    for uid, n in zip(uids, counts, strict=True):
        for k, mask in masks:
            rows = np.flatnonzero(mask[offset:offset + n]) + offset
            if len(rows):
                yield uid, k, step[rows], value[rows]
        offset += n


def _floats(col: Any) -> np.ndarray:
    arr = col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()
    return np.asarray(arr.to_numpy(zero_copy_only=False), dtype=np.float64)


def _f(x: Any) -> float:
    return math.nan if x is None else float(x)


# -- compare: rows near the student's steps ------------------------------------------------------


class Near:
    """Each (run, key)'s rows near a few target steps, for every run of one `FleetFacts`.

    `want` collects targets; the first `part` asks DuckDB for all of them in one scan. A part is
    the run's sorted, de-duplicated (last logged value wins) finite steps inside the key's window
    [min target − w, max target + w] (w: the widest mean step spacing of any run of the key),
    plus the run's last step when it ended before the window and its first when it starts after
    it — exactly the neighbours `slice_sorted` / `values_at` use at each target."""

    def __init__(self, facts: FleetFacts) -> None:
        self.facts = facts
        self.pending: dict[str, set[float]] = {}
        self.asked: dict[str, frozenset[float]] = {}
        self.bounds: dict[str, tuple[float, float]] = {}
        self.rows: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = {}
        self.queries = 0

    def want(self, key: str, targets: Iterable[float]) -> None:
        ts = {float(t) for t in targets if math.isfinite(t)}
        if not ts <= self.asked.get(key, frozenset()):
            self.pending.setdefault(key, set()).update(ts)

    def part(self, uid: str, key: str, targets: Sequence[float]
             ) -> tuple[np.ndarray, np.ndarray] | None:
        """The part of `uid`'s `key` that slices like the whole series at every target, or None
        when the facts cannot prove one (load the series)."""
        ts = [float(t) for t in targets]
        if not ts or not all(math.isfinite(t) for t in ts):
            return None
        self.want(key, ts)
        if self.pending:
            self._query()
        f = self.facts.key_facts(uid).get(key)
        if f is None or not (math.isfinite(f[1]) and math.isfinite(f[7])):
            return None
        first, last = f[7], f[1]
        a, b = self.bounds[key]
        x, y = self.rows.get((uid, key), (np.array([]), np.array([])))
        for t in ts:
            i = int(np.searchsorted(x, t))  # x[i-1] < t <= x[i]
            lo = x[i - 1] if i > 0 else None
            hi = x[i] if i < len(x) else None
            if not (lo is not None and (lo >= a or lo == last) or lo is None and first >= t):
                return None
            if not (hi is not None and (hi <= b or hi == first) or hi is None and last < t):
                return None
        return x, y

    def _query(self) -> None:
        import pyarrow as pa

        for key, ts in self.pending.items():
            self.asked[key] = frozenset(ts | self.asked.get(key, frozenset()))
        keys = list(self.pending)
        self.pending = {}
        widths = dict.fromkeys(keys, 0.0)
        pairs: list[tuple[str, str, float, float]] = []
        for uid in dict.fromkeys(self.facts.uids):
            for k, f in self.facts.key_facts(uid).items():
                if k not in widths:
                    continue
                n, last, first = f[0], f[1], f[7]
                if math.isfinite(last) and math.isfinite(first):
                    pairs.append((uid, k, first, last))
                    if n > 1:
                        widths[k] = max(widths[k], (last - first) / (n - 1))
        for k in keys:
            ts = self.asked[k]
            self.bounds[k] = (min(ts) - widths[k], max(ts) + widths[k])
        for uid, k, _first, _last in pairs:
            self.rows.pop((uid, k), None)
        con = self.facts._connect()
        con.register("_near_win", pa.table({
            "key": pa.array(keys, pa.string()),
            "a": pa.array([self.bounds[k][0] for k in keys], pa.float64()),
            "b": pa.array([self.bounds[k][1] for k in keys], pa.float64())}))
        got: dict[tuple[str, str], list[tuple[float, float]]] = {}
        lo = min(self.bounds[k][0] for k in keys)
        hi = max(self.bounds[k][1] for k in keys)
        for uid, k, step, value in con.execute("""
                SELECT p.run_uid, p.key, p.step, arg_max(coalesce(p.value, 'NaN'::DOUBLE), p.pos)
                FROM pts p JOIN _near_win w ON p.key = w.key
                WHERE p.step >= $lo AND p.step <= $hi AND p.step >= w.a AND p.step <= w.b
                GROUP BY p.run_uid, p.key, p.step""", {"lo": lo, "hi": hi}).fetchall():
            got.setdefault((uid, k), []).append((step, value))
        con.unregister("_near_win")
        # a run that ended before the window (or starts after it): its last (first) point
        ends = [(uid, k, s) for uid, k, first, last in pairs
                for s in ((last,) if last < self.bounds[k][0] else ())
                + ((first,) if first > self.bounds[k][1] else ())]
        if ends:
            con.register("_near_ends", pa.table({
                "run_uid": pa.array([e[0] for e in ends], pa.string()),
                "key": pa.array([e[1] for e in ends], pa.string()),
                "s": pa.array([e[2] for e in ends], pa.float64())}))
            for uid, k, step, value in con.execute("""
                    SELECT p.run_uid, p.key, p.step, arg_max(coalesce(p.value, 'NaN'::DOUBLE), p.pos)
                    FROM pts p JOIN _near_ends e
                        ON p.run_uid = e.run_uid AND p.key = e.key AND p.step = e.s
                    WHERE p.step >= $lo AND p.step <= $hi
                    GROUP BY p.run_uid, p.key, p.step""",
                    {"lo": min(e[2] for e in ends), "hi": max(e[2] for e in ends)}).fetchall():
                got.setdefault((uid, k), []).append((step, value))
            con.unregister("_near_ends")
        for pair, points in got.items():
            points.sort()
            self.rows[pair] = (np.array([p[0] for p in points], dtype=np.float64),
                               np.array([p[1] for p in points], dtype=np.float64))
        self.queries += 1


def near_of(facts: FleetFacts) -> Near:
    """The one `Near` of a FleetFacts (shared by all its runs, so one scan answers them all)."""
    got = facts.__dict__.get("_near")
    if got is None:
        got = facts.__dict__["_near"] = Near(facts)
    return got


def finite_steps(facts: FleetFacts, uid: str, key: str) -> tuple[bool, float] | None:
    """(the key has a finite step, its last finite step) when the per-key facts prove them:
    None when the run logged a ±inf step (its last finite step is then not known)."""
    f = facts.key_facts(uid).get(key)
    if f is None or math.isnan(f[1]) or f[1] == -math.inf:  # no step, or only NaN/−inf ones
        return False, math.nan
    if f[1] == math.inf:
        return None
    return True, f[1]


def complete(facts: FleetFacts, uid: str) -> bool:
    """True when the rows the facts read are as many as the runs table says (an interrupted
    export leaves fewer: the adapter then notes it when it loads the run, so load it)."""
    n = sum(f[0] for f in facts.key_facts(uid).values())
    return n == (facts.rows[uid].get("n_points") or 0)


@dataclass
class PushedRun(Run):
    """A run of a fleet dataset whose many-run facts come from `FleetFacts` (see module doc)."""

    facts: FleetFacts | None = field(default=None, repr=False, compare=False)
    fleet_uid: str = ""

    def _facts(self) -> dict[str, KeyFacts]:
        got = self.__dict__.get("_key_facts")
        if got is None:  # asked many times per run: keep this run's answer
            assert self.facts is not None
            got = self.__dict__["_key_facts"] = self.facts.key_facts(self.fleet_uid)
        return got

    def metric_keys(self) -> list[str]:
        keys = self.__dict__.get("_metric_keys")
        if keys is None:  # many-run engines ask every run this many times
            keys = self.__dict__["_metric_keys"] = tuple(sorted(self._facts()))
        return list(keys)

    def last_step(self, key: str) -> float:
        got = self._facts().get(key)
        return got[1] if got else math.nan

    def point_count(self, key: str) -> int:
        got = self._facts().get(key)
        return int(got[0]) if got else 0

    def tail_values(self, key: str, n: int = 8) -> np.ndarray | None:
        assert self.facts is not None
        stored = self.facts._stored_facts().get(self.fleet_uid)
        tail = stored.tail(self.fleet_uid, key) if stored is not None else None
        return None if tail is None else tail[3][-n:]

    def last_value(self, key: str) -> float:
        last = self.last_step(key)
        if math.isnan(last):
            return math.nan
        if math.isinf(last):  # the value logged at a ±inf step: slicing drops such steps, and
            return Run.last_value(self, key)  # the facts keep none of them (rare: load it)
        return self.pushed_slice(key, last, "nearest").value

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

    # -- compare's seams (`Near` and the facts above answer them) -----------------------------------
    def pushed_complete(self) -> bool:
        """The facts count every point the runs table says the run has (else load it: the
        adapter notes the difference when it does)."""
        assert self.facts is not None
        return complete(self.facts, self.fleet_uid)

    def pushed_steps(self, key: str) -> tuple[bool, float] | None:
        """(any finite step, the last finite step) of `key`; None when a ±inf step hides it."""
        assert self.facts is not None
        return finite_steps(self.facts, self.fleet_uid, key)

    def pushed_want(self, key: str, targets: Sequence[float]) -> None:
        """Targets a later `pushed_near` asks: one scan reads them for every run of the fleet."""
        assert self.facts is not None
        near_of(self.facts).want(key, targets)

    def pushed_near(self, key: str, targets: Sequence[float]) -> tuple[np.ndarray, np.ndarray] | None:
        """(x, y): the sorted, de-duplicated part of `key`'s finite steps that slices exactly as
        the whole series at every target (`slice_sorted`, `values_at`); None: load the series."""
        assert self.facts is not None
        return near_of(self.facts).part(self.fleet_uid, key, targets)


_RUN_FIELDS = [f.name for f in dataclasses.fields(Run) if f.init]


def pushed(run: Run, facts: FleetFacts, uid: str) -> PushedRun:
    """`run` (metadata and a bound loader, no history read) as a PushedRun answering from facts."""
    return PushedRun(**{name: getattr(run, name) for name in _RUN_FIELDS}, facts=facts,
                     fleet_uid=uid)


def load_pushed(sources: Sequence[str], spike_rule: Callable[[np.ndarray, np.ndarray], list[Any]]
                | None = None, engine: Any = None) -> list[Run] | None:
    """The runs of `sources` as PushedRuns, or None when any source cannot push down (not a fleet
    dataset, no pack, no duckdb): the caller then loads every history in memory. With
    `spike_rule`, its scan starts when the first fact is asked (see `FleetFacts.spikes`); with
    `engine` (a fleet/pushdown_dask.py DaskQueries), Dask answers the queries instead of DuckDB."""
    from ..engines.arms import attach
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
        facts = FleetFacts(root, rows, [r.run_id for r in refs], prefetch=spike_rule,
                           engine=engine)
        for ref in refs:  # with where its seeds are (engines.arms.attach), as load_sources does
            runs.append(attach(src, ref, pushed(src.load_run(ref), facts, ref.run_id)))
    return runs
