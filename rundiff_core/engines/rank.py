"""`rundiff rank`: runs or seed groups ranked on headline metrics at one common step per metric.

Every value is sliced at the metric's common step (`runset.choose_step`: where every run that did
not stop early can be read — never a run's own final value); a run that stopped logging the
metric before it is listed as not reached. Seed groups give mean ± σ with a bootstrap CI, and the
"top group" is every group a Holm-corrected Welch test cannot tell apart from the best. A metric
whose direction is unknown (`engines.directions`) is tabled without any best, better or worse.
Without seeds the ranking says it is single-seed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ..model import Run
from .arms import Grouping
from .directions import GoalRules, goal_rules
from .jsonable import jsonable
from .runset import (
    Anomaly,
    Efficiency,
    Group,
    GroupStat,
    anomalies,
    arm_members,
    choose_metrics,
    choose_step,
    gpu_hours,
    group_stat,
    seed_groups,
)
from .stats import holm, welch_p

ALPHA = 0.05
"""A group is outside the top group when its Holm-adjusted p-value is below ALPHA (p = ALPHA
stays in: the test could not tell it apart at that level)."""


@dataclass
class NotReached:
    """A run (of a group) that stopped logging the metric before the common step."""

    group: str
    run: str
    address: str
    last_step: float  # NaN: no finite step at all


@dataclass
class MetricRanking:
    metric: str
    goal: str | None  # None: direction unknown — no best, better or worse for this metric
    step: float
    order: list[GroupStat]
    best: str | None
    p_adjusted: dict[str, float] = field(default_factory=dict)
    top_group: list[str] = field(default_factory=list)
    untestable: list[str] = field(default_factory=list)
    direction: dict[str, Any] = field(default_factory=dict)  # goal, source, reason
    step_rule: str = ""
    not_reached: list[NotReached] = field(default_factory=list)
    note: str | None = None  # "direction unknown for M: pass --goal M=max or min"


@dataclass
class RankResult:
    n_runs: int
    n_groups: int
    single_seed: bool
    metrics: list[MetricRanking]
    efficiency: dict[str, Efficiency]
    most_efficient: str | None
    efficiency_note: str
    anomalies: list[Anomaly]
    statements: list[str]
    headline_rule: str = ""  # which rule chose metrics[0] (engines.primary)
    skipped: list[dict[str, str]] = field(default_factory=list)  # {"metric", "why"}: no information
    arms: list[dict[str, Any]] = field(default_factory=list)  # every arm formed, with members
    #: every note the ranked runs carry ({run: notes}), written when listed and while read: a
    #: number a damage changed travels with the note that says why
    notes: dict[str, list[str]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return jsonable(self)


def _sort_key(stat: GroupStat, goal: str) -> tuple[int, float]:
    if not math.isfinite(stat.mean):
        return (1, 0.0)
    return (0, stat.mean if goal == "min" else -stat.mean)


def rank_metric(groups: list[Group], metric: str, goal: str | GoalRules | None = None,
                align: str = "nearest", at: float | None = None) -> MetricRanking:
    """One metric's table: every group at the metric's common step (or `at`)."""
    runs = [r for g in groups for r in g.runs if metric in r.metric_keys()]
    direction = goal_rules(goal).direction(metric, runs)
    where = choose_step(runs, metric, at, align)
    late = where.not_reached
    stats, missing = [], []
    for g in groups:
        kept = Group(g.label, [r for r in g.runs if r.address not in late], g.how)
        missing += [NotReached(g.label, r.name, r.address, late[r.address])
                    for r in g.runs if r.address in late]
        stat = group_stat(kept, metric, where.step, align)
        if stat.points:
            stats.append(stat)
    ranking = MetricRanking(metric, direction.goal, where.step, stats, None,
                            direction=direction.to_dict(), step_rule=where.how,
                            not_reached=missing)
    if not direction.known:
        ranking.note = direction.unknown_text()
        return ranking  # listed in the order given: no order by value, no best, no test
    order = sorted(stats, key=lambda s: _sort_key(s, direction.goal))
    ranking.order = order
    best = order[0] if order and math.isfinite(order[0].mean) else None
    if best is None:
        return ranking
    ranking.best = best.label
    ranking.top_group.append(best.label)
    others = [s for s in order[1:] if math.isfinite(s.mean)]
    testable = [s for s in others if s.n >= 2 and best.n >= 2]
    tested = {id(s) for s in testable}  # by identity: `in` on the list compared every field
    ranking.untestable = [s.label for s in others if id(s) not in tested]  # of every pair
    raw = [welch_p(best.values, s.values) for s in testable]
    for s, p in zip(testable, holm(raw), strict=True):
        ranking.p_adjusted[s.label] = p
        if not top_excluded(p):
            ranking.top_group.append(s.label)
    return ranking


def top_excluded(p_adjusted: float) -> bool:
    """The Holm decision: a group leaves the top group when its adjusted p is below ALPHA."""
    return p_adjusted < ALPHA


def run_rank(
    runs: list[Run], *, metrics: list[str] | None = None,
    goal: str | list[str] | dict[str, str] | GoalRules | None = None,
    group_seeds: bool = True, align: str = "nearest", grouping: Grouping | None = None,
    at: float | None = None,
) -> RankResult:
    """Rank the runs' arms (engines.arms; `grouping` carries --group-by/--no-seeds); `goal` is
    `--goal` as given (`min`, `M=max`…) or GoalRules; `at` is `--step`."""
    goals = goal_rules(goal)
    statements: list[str] = []
    groups = seed_groups(runs, group_seeds=group_seeds, grouping=grouping, notes=statements)
    choice = choose_metrics(runs, metrics, goals)
    rankings = [rank_metric(groups, m, goals, align, at) for m in choice.metrics]
    single = all(g.n < 2 for g in groups)
    eff = {g.label: _group_efficiency(g) for g in groups}
    primary = rankings[0]
    most, note = _most_efficient(primary, eff)
    if single:
        statements.append("single-seed ranking: no group has more than one seed, so no difference "
                          "below is distinguishable from trial variance")
    elif any(g.n < 2 for g in groups):
        statements.append("some groups are single-seed; they cannot be tested against the best")
    for r in rankings:
        if r.best and len(r.top_group) > 1:
            statements.append(
                f"{r.metric}: {len(r.top_group)} groups are statistically indistinguishable from the "
                f"best at step {r.step:g} (Holm-corrected Welch test, α={ALPHA})"
            )
    return RankResult(
        n_runs=len(runs), n_groups=len(groups), single_seed=single, metrics=rankings,
        efficiency=eff, most_efficient=most, efficiency_note=note,
        anomalies=anomalies(runs, choice.metrics), statements=statements,
        headline_rule=choice.rule, skipped=choice.skipped, arms=arm_members(groups),
        notes={r.name: list(r.fidelity) for r in runs if r.fidelity},
    )


def _group_efficiency(group: Group) -> Efficiency:
    parts = [gpu_hours(r) for r in group.runs]
    known = [p.gpu_hours for p in parts if p.gpu_hours is not None]
    if len(known) == len(parts) and known:
        return Efficiency(sum(known) / len(known), parts[0].how + (" (mean over seeds)" if len(parts) > 1 else ""))
    return Efficiency(None, parts[0].how if parts else "no runs")


def _most_efficient(primary: MetricRanking, eff: dict[str, Efficiency]) -> tuple[str | None, str]:
    if primary.goal is None:
        return None, f"not available: {primary.note}"
    known = {s.label: s for s in primary.order if eff[s.label].gpu_hours and math.isfinite(s.mean)}
    if not known:
        return None, "not available: no run logged both its runtime and its GPU count"
    if primary.goal == "max":
        label = max(known, key=lambda k: known[k].mean / eff[k].gpu_hours)
        s = known[label]
        return label, (f"{s.mean:.4g} {primary.metric} at step {s.step:g} for {eff[label].gpu_hours:.2f} "
                       f"GPU h = {s.mean / eff[label].gpu_hours:.4g} per GPU hour")
    candidates = [k for k in primary.top_group if k in known] or list(known)
    label = min(candidates, key=lambda k: eff[k].gpu_hours)
    s = known[label]
    return label, (f"fewest GPU hours ({eff[label].gpu_hours:.2f}) among the best group on "
                   f"{primary.metric} ({s.mean:.4g} at step {s.step:g})")
