"""`rundiff watch SRC… [--every 10m] [--notify CMD|URL] [--once]` — monitor live runs.

Exit codes with --once: 0 nothing wrong (a run finishing is notified but is not a failure),
1 alerts raised (stale, NaN/inf, spike, kill/OOM, divergence, crashed), 2 usage/input error.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from typing import TYPE_CHECKING, Any

from ..render import dumps
from ..render.formats import emit, format_choices
from ._pushdown import add_switch, pushed
from .arm_options import add_arm_options, grouping_from

if TYPE_CHECKING:
    from ..cli import CommandHost
    from ..engines.watch import WatchFacts, WatchResult
    from ..model import Run


def add_parser(sub: CommandHost) -> None:
    p = sub.add_parser("watch", help="monitor live runs: freshness, progress, anomalies, completion")
    p.add_argument("sources", nargs="+", metavar="SRC")
    p.add_argument("--every", default="10m", help="check interval (e.g. 30s, 10m, 1h)")
    p.add_argument("--stale", default="30m", help="alert when a run without an exit record (any status but finished/crashed) has "
                   "no new data for this long; 4× as long: likely killed")
    p.add_argument("--baseline", help="address of a baseline: alert when a loss diverges from it at the same step")
    p.add_argument("--divergence", type=float, default=0.10, help="relative loss gap that counts as divergence")
    p.add_argument("--notify", help="shell command (JSON on stdin) or http(s) URL (JSON POST)")
    p.add_argument("--once", action="store_true", help="check once and exit (for cron)")
    add_arm_options(p, no_seeds_help="no arms: the baseline is the named run alone, every "
                    "watched run its own arm")
    p.add_argument("--format", choices=format_choices("watch", ("md", "json")), default="md")
    add_switch(p)
    p.set_defaults(func=run)


def check_once(args: argparse.Namespace, stale: float) -> WatchResult:
    """One poll. Runs are reused within it, never across polls, and a Dask cluster it started
    for `--engine dask` is closed when it ends (a long `watch` holds none between polls)."""
    from ..opening import reuse_loads

    with reuse_loads(), contextlib.ExitStack() as poll:
        return _check(args, stale, poll)


def _check(args: argparse.Namespace, stale: float, poll: contextlib.ExitStack) -> WatchResult:
    from ..engines.arms import arms_of, load_arm, runs_apart, seeds_apart
    from ..engines.runset import load_sources
    from ..engines.watch import WatchResult, WatchState, check_run, series_spikes, state_key

    grouping = grouping_from(args)
    state = WatchState(state_key(args.sources, args.baseline))
    barm = load_arm(args.baseline, grouping=grouping) if args.baseline else None
    now = time.time()
    checks = []
    runs = poll.enter_context(pushed(args, args.sources, spikes=False))
    facts, spikes = {}, {}
    named: set[str] = set()
    if runs is None:
        runs = load_sources(args.sources, named=named)
    else:  # a fleet dataset: what is new per run from one query, not every history
        once: dict[str, Run] = {}
        for r in runs:
            once.setdefault(r.address, r)
        runs = list(once.values())
        facts, spikes = _pushed_facts(runs, state.data)
    arms = arms_of(runs, grouping)
    if len(arms) == 1 and not grouping.group_by:  # one arm of everything watched says nothing
        arms = runs_apart(arms, "watched")
    arm_of = {r.address: arm for arm in arms for r in arm.seeds}
    base_seeds = seeds_apart(barm, named) if barm else None  # a watched run is no baseline seed
    for run_ in runs:
        extra: dict[str, Any] = {}
        if run_.address in facts:
            extra = {"facts": facts[run_.address],
                     "spikes": lambda r, k: spikes[(r.address, k)] if (r.address, k) in spikes
                     else series_spikes(r, k)}
        check, new_state = check_run(run_, state.data.get(run_.address, {}), now=now, stale_after=stale,
                                     baseline=barm.primary if barm else None, divergence=args.divergence,
                                     baseline_seeds=base_seeds,
                                     baseline_label=barm.label if barm else None, **extra)
        check.arm, check.arm_size = arm_of[run_.address].label, arm_of[run_.address].n
        state.data[run_.address] = new_state
        checks.append(check)
    state.save()
    return WatchResult(now, checks, notes=[n for arm in arms for n in arm.notes])


def _pushed_facts(runs: list[Run], seen: dict[str, Any]
                  ) -> tuple[dict[str, WatchFacts], dict[tuple[str, str], list[Any]]]:
    """({address: WatchFacts}, {(address, key): spikes}) of pushed-down runs: one query for what
    is new, and the spike rule over only the runs that logged new loss points — for runs seen
    for the first time (all their points are new) on a thread beside the query."""
    from concurrent.futures import ThreadPoolExecutor

    from ..engines.stats import robust_spikes
    from ..fleet.pushdown_tail import loss_spikes, watch_facts

    prev = {r.address: seen.get(r.address, {}).get("last_step") for r in runs}
    fresh = {a: None for a, p in prev.items() if p is None}
    with ThreadPoolExecutor(max_workers=1) as pool:
        early = pool.submit(loss_spikes, runs, fresh, robust_spikes) if fresh else None
        facts = watch_facts(runs, prev)
        wanted = {a: [k for k in f.news if "loss" in k.lower()] for a, f in facts.items()
                  if a not in fresh}
        spikes = loss_spikes(runs, wanted, robust_spikes)
        if early is not None:
            spikes.update(early.result())
    return facts, spikes


def _print(result: WatchResult, fmt: str) -> None:
    if emit("watch", fmt, result.to_dict):
        sys.stdout.flush()
        return
    if fmt == "json":
        print(dumps(result.to_dict()))
        return
    from ..render.many_md import render_watch

    sys.stdout.write(render_watch(result))
    sys.stdout.flush()


def run(args: argparse.Namespace) -> int:
    from ..engines.watch import notify, parse_duration, payload

    every, stale = parse_duration(args.every), parse_duration(args.stale)
    while True:
        result = check_once(args, stale)
        _print(result, args.format)
        if result.alerts and args.notify:
            notify(args.notify, payload(result.alerts))
        if args.once:  # completion is news, not a problem: only other alerts fail the check
            return 1 if any(a.kind != "finished" for a in result.alerts) else 0
        try:
            time.sleep(every)
        except KeyboardInterrupt:
            print("watch stopped", file=sys.stderr)
            return 0
