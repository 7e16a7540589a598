"""The sentences of a comparison: renamed keys and the closing conclusion."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..arms import Arm
from ..metricnames import NameResolution
from ..selection import main_rank
from .result import CompareResult, Row, Trend


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


def _family_sentence(r: CompareResult, group: str) -> str | None:
    fams = [f for f in r.families if f.group == group and f.compared]
    if not fams:
        return None
    f = max(fams, key=lambda x: x.compared)
    if f.goal is None:
        parts = [f"median Δ {x.median_delta:+.4g} against {x.baseline}"
                 for x in fams if x.family == f.family]
        return (f"Across the {len(f.members)} {group} {f.family} metrics: " + "; ".join(parts)
                + f" (direction unknown: no better or worse is claimed; pass --goal "
                f"'{f.family.replace('<n>', '*')}=max' or min).")
    parts = [f"behind {x.baseline} on {x.baseline_better} and ahead on {x.student_better} "
             f"(median Δ {x.median_delta:+.4g})" for x in fams if x.family == f.family]
    return (f"Across the {len(f.members)} {group} {f.family} metrics, {r.student.label} is "
            + "; ".join(parts) + ".")


def _conclusion(r: CompareResult) -> list[str]:
    """At most three sentences; never a winner from proxy metrics, never before convergence."""
    main: list[str] = []
    s = r.student.label
    at = f"{r.x_label} {r.current_x:g}"
    downstream_ok = sorted((m for m in r.shown_group("downstream")
                            if m.state == "ok" and any(row.state == "ok" for row in m.rows[1:])),
                           key=lambda m: (m.metric != r.headline, main_rank(m.metric)))
    family = _family_sentence(r, "downstream")
    if not downstream_ok and family is None:
        pending = [m.metric for m in r.group("downstream")]
        shown = ", ".join(pending[:3]) + (f" and {len(pending) - 3} more" if len(pending) > 3 else "")
        why = (f"downstream metrics ({shown}) have no same-step values yet"
               if pending else "no downstream metric is compared")
        main.append(f"Only proxy metrics can be compared at {at} ({why}): no winner can be declared "
                    f"from proxy metrics alone.")
    for m in downstream_ok[:2]:
        parts = []
        for row in m.rows[1:]:
            if row.state != "ok" or not math.isfinite(row.delta):
                continue
            seeds = ("single-seed" if row.single_seed and m.rows[0].single_seed
                     else f"student {_spread(m.rows[0])}; {row.arm} {_spread(row)}")
            if m.goal is None:
                parts.append(f"Δ {row.delta:+.4g} against {row.arm} ({seeds}; direction unknown: "
                             f"pass --goal {m.metric}=max or min)")
                continue
            if row.student_better is None:
                parts.append(f"level with {row.arm} ({seeds})")
                continue
            side = "ahead of" if row.student_better else "behind"
            parts.append(f"{side} {row.arm} by {abs(row.delta):.4g} ({seeds})")
        if parts:
            main.append(f"On downstream {m.metric} at {r.x_label} {m.target:g}, {s} is "
                        + "; ".join(parts) + ".")
    if family:
        main.append(family)
    extra: list[str] = []
    if (downstream_ok or family) and r.student.status == "running":
        extra.append(f"{s} is still training: this is a same-step snapshot, not a final result.")
    shown = r.shown_group("proxy") + r.shown_group("downstream")
    projections = [(m.metric, t) for m in shown for t in m.trends if t.status == "on track to catch up"]
    if projections:
        metric, t = projections[0]
        extra.append(f"On {metric}, {s} is on track to catch up with {t.baseline} at {r.x_label} "
                     f"{t.projected_x:.0f}, projected from the current slope.")
    caveat = []
    if r.student.single_seed and all(b.single_seed for b in r.baselines):
        caveat.append("Every run is single-seed: differences may be within seed variance.")
    out = main[:1] + caveat + main[1:] + extra
    return out[:3]


_SHORT = {
    "converged": "converged", "level": "level", "gap steady": "gap steady",
    "gap widening": "gap widening", "on track to catch up": "gap narrowing",
    "ahead, gap widening": "gap widening", "ahead, gap narrowing": "gap narrowing",
    "ahead, gap steady": "gap steady",
}


def _trend_phrase(metric: str, t: Trend, xname: str) -> str:
    if t.status == "direction unknown":
        return f"{metric} gap {t.gap_last:+.4g} (direction unknown)"
    if t.status == "level":
        return f"{metric} level within noise"
    side = "behind" if t.status in ("gap steady", "gap widening", "on track to catch up") else "ahead"
    if t.status == "converged":
        side = "behind" if "behind" in t.text else "ahead" if "ahead of" in t.text else "level"
        if side == "level":
            return f"{metric} converged, level within noise"
    text = f"{metric} {side} by {abs(t.gap_last):.4g}, {_SHORT[t.status]}"
    if t.projected_x is not None:
        text += f" ({'catch up' if side == 'behind' else 'level'} projected at {xname} {t.projected_x:.0f})"
    return text


def trend_lines(r: CompareResult) -> list[str]:
    """One line per student–baseline pair over the shown metrics (family members excluded)."""
    shown = [m for g in ("proxy", "downstream", "diagnostic") for m in r.shown_group(g)]
    out = []
    for b in r.baselines:
        phrases, thin = [], []
        for m in shown:
            for t in m.trends:
                if t.baseline != b.label:
                    continue
                if t.status == "insufficient data":
                    thin.append(m.metric)
                else:
                    phrases.append(_trend_phrase(m.metric, t, r.x_label))
        if thin:
            phrases.append("too few shared points for " + _names(thin))
        if phrases:
            out.append(f"{r.student.label} vs {b.label}: " + "; ".join(phrases))
    return out


def _names(names: Sequence[str], cap: int = 4) -> str:
    head = ", ".join(names[:cap])
    return head + (f" and {len(names) - cap} more" if len(names) > cap else "")


def _spread(row: Row) -> str:
    if row.single_seed:
        return "single-seed"
    return f"N={row.n}, σ={row.std:.3g}" if math.isfinite(row.std) else f"N={row.n}"
