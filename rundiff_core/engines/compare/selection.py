"""What the compare text shows: headline rows per section and one summary per metric family.

Every metric is still compared (JSON keeps every cell); see `engines/selection.py` for the rules.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..selection import families, headline, natural_sorted
from .result import FamilySummary, MetricComparison


def select(comparisons: Sequence[MetricComparison], declared: Sequence[str],
           baselines: Sequence[str]) -> tuple[list[str], list[FamilySummary]]:
    """(metrics shown as rows, family summaries against each baseline)."""
    shown: list[str] = []
    out: list[FamilySummary] = []
    by_name = {m.metric: m for m in comparisons}
    for group in dict.fromkeys(m.group for m in comparisons):
        names = [m.metric for m in comparisons if m.group == group]
        fams = families(n for n in names if n not in declared)
        in_family = {n for members in fams.values() for n in members}
        shown += headline([n for n in names if n not in in_family], declared)
        for pattern, members in fams.items():
            for b in baselines:
                out.append(_summary(pattern, group, [by_name[n] for n in members], b))
    return natural_sorted(shown), out


def _summary(pattern: str, group: str, members: list[MetricComparison], baseline: str) -> FamilySummary:
    deltas: list[tuple[str, float, float]] = []  # member, Δ, deficit (> 0: student behind)
    better = worse = ties = 0
    steps: set[float] = set()
    for m in members:
        row = next((r for r in m.rows[1:] if r.arm == baseline), None)
        if row is None or not math.isfinite(row.delta):
            continue
        steps.update(c.x_used for r in (m.rows[0], row) for c in r.cells if math.isfinite(c.x_used))
        if m.goal is None:  # no direction: counted neither better, worse nor tied
            deltas.append((m.metric, row.delta, -math.inf))
            continue
        deficit = -row.delta if m.goal == "min" else row.delta
        deltas.append((m.metric, row.delta, deficit))
        if row.student_better is None:
            ties += 1
        elif row.student_better:
            better += 1
        else:
            worse += 1
    goals = {m.goal for m in members}
    goal = goals.pop() if len(goals) == 1 else "mixed"
    if not deltas:
        return FamilySummary(pattern, group, goal, baseline, [m.metric for m in members], 0, 0, 0,
                             0, math.nan, math.nan, math.nan, None, math.nan, sorted(steps))
    d = np.array([x for _, x, _ in deltas])
    worst = max(deltas, key=lambda t: t[2])
    return FamilySummary(
        pattern, group, goal, baseline, [m.metric for m in members], len(deltas), better, worse,
        ties, float(np.median(d)), float(d.min()), float(d.max()),
        worst[0] if worst[2] > 0 else None, worst[1], sorted(steps),
    )
