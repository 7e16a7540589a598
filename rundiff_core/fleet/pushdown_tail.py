"""Fleet queries for `compare` and `watch`, pushed down to DuckDB beside `fleet/pushdown.py`'s.

`compare` reads every baseline at the student's last K steps; a baseline's rows near those steps
(`Near`) slice exactly as its whole series does there, so only those rows are read — one scan for
every run of the dataset. Where the rows in the window cannot prove the answer (a gap wider than
the window, ±inf steps), the run's series is loaded through the adapter as usual.

`watch` asks of each run what is new since its previous check: per key the points past the step
it saw last, their last value, their NaN/inf count and first bad step, plus the newest wall time
and every key's last step and value (`watch_facts`: from the stored facts for a first check and
for runs with nothing new, else one GROUP BY over the other runs). The spike rule's episodes come
from the stored facts, else the loss series of runs that logged new loss points are scanned
(`loss_spikes`).

Semantics are the in-memory engines' exactly (tests/fleet/test_pushdown.py compares their JSON).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .pushdown import FleetFacts, PushedRun, _f, pushed

if TYPE_CHECKING:
    from ..engines.arms import Arm
    from ..engines.watch import KeyNews, WatchFacts
    from ..model import Run

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


def push_arms(arms: Sequence[Arm]) -> int:
    """Turn every run of `arms` read from a `parquet:` dataset with a pack into a PushedRun (one
    FleetFacts per dataset, over exactly these runs), in place; how many were turned."""
    from ..resolve import open_source

    fleet = [r for a in arms for r in a.seeds if r.adapter == "parquet"
             and isinstance(r.meta.get("dataset"), str) and r.meta.get("run_uid")
             and not isinstance(r, PushedRun)]
    by_root: dict[str, list[Run]] = {}
    for run in fleet:
        by_root.setdefault(run.meta["dataset"], []).append(run)
    turned: dict[str, PushedRun] = {}
    for root, runs in by_root.items():
        hook = getattr(open_source(f"parquet:{root}"), "fleet_pushdown", None)
        handle = hook() if callable(hook) else None
        if handle is None:
            continue
        root_, rows = handle
        uids = [r.meta["run_uid"] for r in runs]
        if not all(u in rows for u in uids):
            continue
        facts = FleetFacts(root_, rows, uids)
        for run in runs:
            turned[run.address] = pushed(run, facts, run.meta["run_uid"])
    for arm in arms:
        arm.seeds = [turned.get(r.address, r) for r in arm.seeds]
        arm.primary = turned.get(arm.primary.address, arm.primary)
    return len(turned)


# -- watch: what is new since the previous check -------------------------------------------------


def watch_facts(runs: Sequence[PushedRun], previous: Mapping[str, float | None]
                ) -> dict[str, WatchFacts]:
    """{address: WatchFacts} of pushed runs, `previous[address]` the last step the previous
    check saw (None: every point is new); stored facts first (`_stored_idle`), then one GROUP BY
    per dataset over the runs they do not answer."""
    from ..engines.watch import KeyNews, WatchFacts

    out: dict[str, WatchFacts] = {}
    groups: dict[int, tuple[FleetFacts, list[PushedRun]]] = {}
    for run in runs:
        assert run.facts is not None
        groups.setdefault(id(run.facts), (run.facts, []))[1].append(run)
    for facts, members in groups.values():
        prev = {r.fleet_uid: previous.get(r.address) for r in members}
        rows = _stored_idle(facts, prev)
        rest = facts._without(rows)
        if rest is not None:
            rows.update(_query_watch(rest, {u: p for u, p in prev.items() if u not in rows}))
            if rest is not facts:
                rest.close()
        for run in members:
            keys = rows.get(run.fleet_uid, {})
            news: dict[str, KeyNews] = {}
            lasts = [v[1] for v in keys.values() if not math.isnan(v[1])]
            walls = [v[2] for v in keys.values() if not math.isnan(v[2])]
            for k in sorted(keys):
                _n, _last, _wall, _value, n_new, v_new, n_bad, first_bad = keys[k]
                if n_new:
                    news[k] = KeyNews(n_new, v_new, n_bad, first_bad if n_bad else None)
            out[run.address] = WatchFacts(
                keys=sorted(keys),
                last_step=(max(lasts) if lasts else math.nan) if keys else None,
                newest_wall=max(walls) if walls else None,
                new_points=sum(n.points for n in news.values()),
                news=news,
                last_steps={k: v[1] for k, v in keys.items() if "loss" in k.lower()},
                last_values={k: v[3] for k, v in keys.items() if "loss" in k.lower()},
            )
    return out


def _stored_idle(facts: FleetFacts, prev: Mapping[str, float | None]
                 ) -> dict[str, dict[str, tuple[Any, ...]]]:
    """`_query_watch`'s rows for the runs the stored facts (fleet/facts.py) answer without a
    scan: a first check (every point is new: the stored counts are the news), and a run whose
    every key ended at or before the previous check's step (nothing is new). Other runs are
    left out, for the query."""
    out: dict[str, dict[str, tuple[Any, ...]]] = {}
    for uid, stored in facts._stored_facts().items():
        if uid not in prev:
            continue
        before = prev[uid]
        keys = stored.key_facts(uid)
        if before is not None and any(f[1] > before for f in keys.values()):
            continue  # points past the previous step: the query counts them (NaN is never past)
        logged = stored.last_logged(uid)
        out[uid] = {}
        for k, f in keys.items():
            wall = f[6] if f[4] else math.nan
            if before is None:  # all new: n points, the last logged, the bad ones
                out[uid][k] = (int(f[0]), f[1], wall, logged[k], int(f[0]), logged[k],
                               int(f[2]), f[3] if f[2] else math.nan)
            else:
                out[uid][k] = (int(f[0]), f[1], wall, logged[k], 0, math.nan, 0, math.nan)
    return out


def _query_watch(facts: FleetFacts, prev: Mapping[str, float | None]
                 ) -> dict[str, dict[str, tuple[Any, ...]]]:
    """{uid: {key: (n, last step, newest finite wall, last value, new points, their last value,
    their NaN/inf count, their first bad step)}}. A point is new when its step is past the run's
    previous step (a NaN step never is, unless there was no previous check). With `--engine
    dask` (`facts.engine`), Dask answers (pushdown_dask.py `query_watch`)."""
    if facts.engine is not None:
        return facts.engine.query_watch(facts, prev)
    import pyarrow as pa

    con = facts._connect()
    con.register("_prev", pa.table({
        "run_uid": pa.array(list(prev), pa.string()),
        "prev": pa.array([None if p is None else float(p) for p in prev.values()], pa.float64())}))
    rows = con.execute("""
        SELECT run_uid, key, count(*), max(step) FILTER (WHERE NOT isnan(step)),
               max(wall_time) FILTER (WHERE isfinite(wall_time)),
               arg_max(coalesce(value, 'NaN'::DOUBLE), pos),
               count(*) FILTER (WHERE new),
               arg_max(coalesce(value, 'NaN'::DOUBLE), pos) FILTER (WHERE new),
               count(*) FILTER (WHERE new AND bad),
               arg_min(coalesce(step, 'NaN'::DOUBLE), pos) FILTER (WHERE new AND bad)
        FROM (SELECT p.run_uid, p.key, p.step, p.value, p.wall_time, p.pos,
                     q.prev IS NULL OR (p.step > q.prev AND NOT isnan(p.step)) AS new,
                     p.value IS NULL OR NOT isfinite(p.value) AS bad
              FROM pts p LEFT JOIN _prev q USING (run_uid))
        GROUP BY run_uid, key""").fetchall()
    con.unregister("_prev")
    out: dict[str, dict[str, tuple[Any, ...]]] = {}
    for uid, key, n, last, wall, value, n_new, v_new, n_bad, first_bad in rows:
        out.setdefault(uid, {})[key] = (int(n), _f(last), _f(wall), _f(value), int(n_new or 0),
                                        _f(v_new), int(n_bad or 0), _f(first_bad))
    return out


def loss_spikes(runs: Sequence[PushedRun], wanted: Mapping[str, Collection[str] | None],
                rule: Callable[[np.ndarray, np.ndarray], list[Any]]
                ) -> dict[tuple[str, str], list[Any]]:
    """{(address, key): rule(steps, values)} for the loss-like keys `wanted[address]` names
    (None: all of them), streaming only those runs' loss series (FleetFacts.loss_series)."""
    out: dict[tuple[str, str], list[Any]] = {}
    groups: dict[int, tuple[FleetFacts, dict[str, PushedRun]]] = {}
    for run in runs:
        keys = wanted.get(run.address, ())
        if keys is None or len(keys):
            assert run.facts is not None
            groups.setdefault(id(run.facts), (run.facts, {}))[1][run.fleet_uid] = run
    for facts, members in groups.values():
        _stored_spikes(facts, members, wanted, rule, out)
        if not members:
            continue
        sub = FleetFacts(facts.root, facts.rows, list(members))
        sub._pack = facts._pack
        if facts.engine is not None:  # --engine dask: the rule runs on the workers
            series: Iterable[tuple[str, str, Any]] = (
                (uid, key, got) for uid, by_key in facts.engine.query_spikes(sub, rule).items()
                for key, got in by_key.items())
        else:
            series = ((uid, key, rule(steps, values))
                      for uid, key, steps, values in sub.loss_series())
        for uid, key, got in series:
            address = members[uid].address
            keys = wanted[address]
            if keys is None or key in keys:
                out[(address, key)] = got
    return out


def _stored_spikes(facts: FleetFacts, members: dict[str, PushedRun],
                   wanted: Mapping[str, Collection[str] | None],
                   rule: Callable[[np.ndarray, np.ndarray], list[Any]],
                   out: dict[tuple[str, str], list[Any]]) -> None:
    """Fill `out` from the spikes stored with the facts (`FleetFacts.stored_spikes`) when `rule`
    is `robust_spikes` (the stored episodes' first steps and peaks); the runs answered leave
    `members`."""
    from ..engines.stats import robust_spikes

    if rule is not robust_spikes:
        return
    for uid in list(members):
        got = facts.stored_spikes(uid)
        if got is None:
            continue
        address = members.pop(uid).address
        keys = wanted[address]
        for key, episodes in got.items():
            if keys is None or key in keys:
                out[(address, key)] = [(e.first, e.value, e.score) for e in episodes]
