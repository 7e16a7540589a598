"""Fleet queries for `compare` and `watch`, pushed down to DuckDB beside `fleet/pushdown.py`'s.

`compare` reads every baseline at the student's last K steps: `push_arms` turns a fleet's runs
into PushedRuns, whose rows near those steps (fleet/pushdown.py `Near`) slice exactly as the whole
series does there, so only those rows are read — one scan for every run of the dataset. Where the
rows in the window cannot prove the answer (a gap wider than the window, ±inf steps), the run's
series is loaded through the adapter as usual.

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

# -- compare: a fleet's runs as PushedRuns ------------------------------------------------------


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
