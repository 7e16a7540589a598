"""The sentences of a comparison: renamed keys and the closing conclusion."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..arms import Arm
from ..metricnames import NameResolution
from .result import CompareResult, Row


def _describe_mapped(names: NameResolution, metric_names: Sequence[str], arms: Sequence[Arm],
                     labels: Sequence[str]) -> list[str]:
    """'key → metric (why) in <arm>, <arm>' lines, one per distinct renaming."""
    arm_of = {r.address: labels[i] for i, a in enumerate(arms) for r in a.seeds}
    why = {"spelling": "same words", "synonym": "synonyms", "--map": "--map"}
    grouped: dict[tuple[str, str, str], list[str]] = {}
    for mp in names.mapped:
        if mp.metric in metric_names:
            where = grouped.setdefault((mp.key, mp.metric, mp.tier), [])
            label = arm_of.get(mp.run, mp.run)
            if label not in where:
                where.append(label)
    return [f"{key} → {metric} ({why[tier]}) in {', '.join(where)}"
            for (key, metric, tier), where in grouped.items()]


def _conclusion(r: CompareResult) -> list[str]:
    """One to three sentences; never a winner from proxy metrics, never before convergence."""
    out: list[str] = []
    s = r.student.label
    at = f"{r.x_label} {r.current_x:g}"
    downstream_ok = [m for m in r.group("downstream")
                     if m.state == "ok" and any(row.state == "ok" for row in m.rows[1:])]
    if not downstream_ok:
        pending = [m.metric for m in r.group("downstream")]
        why = (f"downstream metrics ({', '.join(pending)}) have no same-step values yet"
               if pending else "no downstream metric is logged")
        out.append(f"Only proxy metrics can be compared at {at} ({why}): no winner can be declared "
                   f"from proxy metrics alone.")
    else:
        for m in downstream_ok[:2]:
            parts = []
            for row in m.rows[1:]:
                if row.state != "ok" or row.student_better is None:
                    continue
                side = "ahead of" if row.student_better else "behind"
                seeds = ("single-seed" if row.single_seed and m.rows[0].single_seed
                         else f"student {_spread(m.rows[0])}; {row.arm} {_spread(row)}")
                parts.append(f"{side} {row.arm} by {abs(row.delta):.4g} ({seeds})")
            if parts:
                out.append(f"On downstream {m.metric} at {r.x_label} {m.target:g}, {s} is "
                           + "; ".join(parts) + ".")
        if r.student.status == "running":
            out.append(f"{s} is still training: this is a same-step snapshot, not a final result.")
    projections = [t for m in r.metrics for t in m.trends if t.status == "on track to catch up"]
    if projections:
        t = projections[0]
        metric = next(m.metric for m in r.metrics if t in m.trends)
        out.append(f"On {metric}, {s} is on track to catch up with {t.baseline} at {r.x_label} "
                   f"{t.projected_x:.0f}, projected from the current slope.")
    if r.student.single_seed and all(b.single_seed for b in r.baselines):
        out.append("Every run is single-seed: differences may be within seed variance.")
    return out


def _spread(row: Row) -> str:
    if row.single_seed:
        return "single-seed"
    return f"N={row.n}, σ={row.std:.3g}" if math.isfinite(row.std) else f"N={row.n}"
