"""Phase 9 of a comparison: the gap between the student and each baseline over its last K points."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from ..align import seed_mean_at
from ..arms import Arm
from ..stats import flat_fit
from .alignment import Table
from .axis import _Axis
from .request import Request
from .result import Trend
from .series import Loaded, _PushedSeries, _Series
from .student import Student

CONVERGED_POINTS = 5


def measure_trends(req: Request, student: Student, tables: Sequence[Table], loaded: Loaded,
                   align: str, last_k: int, axis: _Axis) -> list[list[Trend]]:
    """Each table's trends, one per baseline; none where the student has no value to start from."""
    si = student.index
    out = []
    for t in tables:
        out.append([_trend(req.arms[si], req.labels[si], req.arms[i], req.labels[i], t.metric,
                           loaded.series, align, t.direction.goal, last_k, axis.label())
                    for i in range(len(req.arms)) if i != si and t.rows[0].state == "ok"])
    return out




def _trend(s_arm: Arm, s_label: str, b_arm: Arm, b_label: str, metric: str,
           series: Mapping[tuple[str, str], _Series | _PushedSeries], align: str, goal: str | None, k: int,
           xname: str) -> Trend:
    primary = series[(s_arm.primary.address, metric)]
    xs = primary.x[-k:]
    sv = seed_mean_at(s_arm.seeds, metric, series, xs, align) if len(s_arm.seeds) > 1 else primary.y[-k:]
    bv = seed_mean_at(b_arm.seeds, metric, series, xs, align)
    ok = np.isfinite(sv) & np.isfinite(bv)
    points = [{"x": float(a), "student": float(b), "baseline": float(c), "gap": float(b - c)}
              for a, b, c in zip(xs[ok], sv[ok], bv[ok], strict=True)]
    last5 = [(float(a), float(b)) for a, b in zip(primary.x[-CONVERGED_POINTS:],
                                                   primary.y[-CONVERGED_POINTS:], strict=True)]
    vals5 = np.array([v for _, v in last5])
    scale = float(np.nanmax(np.abs(np.concatenate([sv[ok], bv[ok]])))) if ok.any() else 1.0
    finite5 = np.isfinite(vals5)
    student_flat = len(last5) >= CONVERGED_POINTS and bool(finite5.all()) and flat_fit(
        np.array([a for a, _ in last5]), vals5, scale)[0]
    base = Trend(s_label, b_label, "insufficient data", "", int(ok.sum()), points, math.nan,
                 math.nan, None, last5, bool(student_flat))
    vs = f"{s_label} vs {b_label}"
    if len(xs) < 3:
        base.text = f"{vs}: too few student points for a trend ({len(xs)}; 3 needed)"
        return base
    if ok.sum() < 3:
        base.text = (f"{vs}: too few shared points for a trend (only {int(ok.sum())} of the "
                     f"student's last {len(xs)} {xname}s have a baseline value)")
        return base
    x_ok = xs[ok]
    gap = sv[ok] - bv[ok]
    if goal is None:  # no direction: the gap is a number, never "behind" or "ahead"
        base.status, base.gap_last = "direction unknown", float(gap[-1])
        base.text = (f"{vs}: gap {float(gap[-1]):+.4g} at {xname} {x_ok[-1]:g}; direction unknown "
                     f"for {metric}: pass --goal {metric}=max or min")
        return base
    deficit = gap if goal == "min" else -gap  # > 0: the student is behind
    flat, slope_d, noise = flat_fit(x_ok, deficit, scale)
    slope = slope_d if goal == "min" else -slope_d
    d_last = float(deficit[-1])
    level = abs(d_last) <= max(2.0 * noise, 1e-3 * scale, 1e-12)
    where = f"at {xname} {x_ok[-1]:g}"
    size = f"{abs(float(gap[-1])):.4g}"
    base.gap_last, base.slope = float(gap[-1]), slope
    span = f"over the student's last {len(x_ok)} points ({xname}s {x_ok[0]:g}–{x_ok[-1]:g})"
    b_end = max((series[(r.address, metric)].last_x for r in b_arm.seeds
                 if (r.address, metric) in series and series[(r.address, metric)].size),
                default=math.nan)
    if student_flat and flat:
        shown = ", ".join(f"{a:g}: {v:.4g}" for a, v in last5)
        state = "level with" if level else ("behind" if d_last > 0 else "ahead of")
        base.status = "converged"
        base.text = (f"{vs}: converged — {s_label} last {CONVERGED_POINTS} points ({shown}) are flat "
                     f"and the gap is steady; {s_label} is {state} {b_label}"
                     + ("" if level else f" by {size}") + f" {where}")
        return base
    if level:
        base.status = "level"
        base.text = f"{vs}: level {where} (gap within noise {span})"
        return base
    rate = f"{abs(slope_d):.3g} per {xname}"
    if d_last > 0:
        if flat:
            base.status = "gap steady"
            base.text = f"{vs}: {s_label} behind by {size} {where}; gap steady {span}"
        elif slope_d < 0:
            n = float(x_ok[-1] + d_last / -slope_d)
            base.status, base.projected_x = "on track to catch up", n
            beyond = (f" — beyond {b_label}'s last logged {xname} {b_end:g}"
                      if math.isfinite(b_end) and n > b_end else "")
            base.text = (f"{vs}: {s_label} behind by {size} {where}; gap narrowing by {rate} — on "
                         f"track to catch up at {xname} {n:.0f} (projected from current slope){beyond}")
        else:
            base.status = "gap widening"
            base.text = f"{vs}: {s_label} behind by {size} {where}; gap widening by {rate} {span}"
    else:
        if flat:
            base.status = "ahead, gap steady"
            base.text = f"{vs}: {s_label} ahead by {size} {where}; gap steady {span}"
        elif slope_d > 0:
            n = float(x_ok[-1] + (-d_last) / slope_d)
            base.status, base.projected_x = "ahead, gap narrowing", n
            base.text = (f"{vs}: {s_label} ahead by {size} {where}; gap narrowing by {rate} — "
                         f"{b_label} projected to draw level at {xname} {n:.0f} (from current slope)")
        else:
            base.status = "ahead, gap widening"
            base.text = f"{vs}: {s_label} ahead by {size} {where}; gap widening by {rate} {span}"
    return base
