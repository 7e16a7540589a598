"""`rundiff rank`: runs or seed groups ranked on headline metrics at one common step.

Every value is sliced at the latest step all runs reached (never a run's own final value), seed
groups give mean ± σ with a bootstrap CI, and the "top group" is every group a Holm-corrected Welch
test cannot tell apart from the best. Without seeds the ranking says it is single-seed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ..model import Run
from .arms import Grouping
from .jsonable import jsonable
from .runset import (
    Anomaly,
    Efficiency,
    Group,
    GroupStat,
    anomalies,
    common_step,
    gpu_hours,
    group_stat,
    seed_groups,
    shared_metrics,
)
from .stats import goal_for, holm, welch_p

ALPHA = 0.05


@dataclass
class MetricRanking:
    metric: str
    goal: str
    step: float
    order: list[GroupStat]
    best: str | None
    p_adjusted: dict[str, float] = field(default_factory=dict)
    top_group: list[str] = field(default_factory=list)
    untestable: list[str] = field(default_factory=list)


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

    def to_dict(self) -> dict[str, Any]:
        return jsonable(self)


def _sort_key(stat: GroupStat, goal: str) -> tuple[int, float]:
    if not math.isfinite(stat.mean):
        return (1, 0.0)
    return (0, stat.mean if goal == "min" else -stat.mean)


def rank_metric(groups: list[Group], metric: str, goal: str | None = None, align: str = "nearest") -> MetricRanking:
    goal = goal or goal_for(metric)
    runs = [r for g in groups for r in g.runs if metric in r.metric_keys()]
    step = common_step(runs, metric)
    stats = [group_stat(g, metric, step, align) for g in groups]
    stats = [s for s in stats if s.points]
    order = sorted(stats, key=lambda s: _sort_key(s, goal))
    best = order[0] if order and math.isfinite(order[0].mean) else None
    ranking = MetricRanking(metric, goal, step, order, best.label if best else None)
    if best is None:
        return ranking
    ranking.top_group.append(best.label)
    others = [s for s in order[1:] if math.isfinite(s.mean)]
    testable = [s for s in others if s.n >= 2 and best.n >= 2]
    tested = {id(s) for s in testable}  # by identity: `in` on the list compared every field
    ranking.untestable = [s.label for s in others if id(s) not in tested]  # of every pair
    raw = [welch_p(best.values, s.values) for s in testable]
    for s, p in zip(testable, holm(raw), strict=True):
        ranking.p_adjusted[s.label] = p
        if not (p < ALPHA):
            ranking.top_group.append(s.label)
    return ranking


def run_rank(
    runs: list[Run], *, metrics: list[str] | None = None, goal: str | None = None,
    group_seeds: bool = True, align: str = "nearest", grouping: Grouping | None = None,
) -> RankResult:
    """Rank the runs' arms (engines.arms; `grouping` carries --group-by/--no-seeds)."""
    groups = seed_groups(runs, group_seeds=group_seeds, grouping=grouping)
    chosen = shared_metrics(runs, metrics)
    rankings = [rank_metric(groups, m, goal, align) for m in chosen]
    single = all(g.n < 2 for g in groups)
    eff = {g.label: _group_efficiency(g) for g in groups}
    primary = rankings[0]
    most, note = _most_efficient(primary, eff)
    statements = []
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
        anomalies=anomalies(runs, chosen), statements=statements,
    )


def _group_efficiency(group: Group) -> Efficiency:
    parts = [gpu_hours(r) for r in group.runs]
    known = [p.gpu_hours for p in parts if p.gpu_hours is not None]
    if len(known) == len(parts) and known:
        return Efficiency(sum(known) / len(known), parts[0].how + (" (mean over seeds)" if len(parts) > 1 else ""))
    return Efficiency(None, parts[0].how if parts else "no runs")


def _most_efficient(primary: MetricRanking, eff: dict[str, Efficiency]) -> tuple[str | None, str]:
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
