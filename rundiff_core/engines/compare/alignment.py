"""Phase 8 of a comparison: every metric's table, each arm sliced at the student's x.

Every baseline is read at the student's latest x for that metric (its current x unless the metric
is logged less often); a cell without a point there uses the nearest logged point or a straight
line between the two around it (`align`), and says which and the step actually used.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ...model import Run
from ..align import Slice, slice_sorted
from ..arms import Arm
from ..directions import Direction, better
from ..metricnames import NameResolution
from ..roles import GroupDecision
from ..stats import sample_std
from .axis import _Axis
from .classify import Classified
from .request import Request
from .result import Cell, Row
from .series import Loaded, _PushedSeries, _Series
from .student import Student


@dataclass
class Table:
    """One metric's rows: the student's first, then each baseline's with its Δ."""

    metric: str
    decision: GroupDecision
    direction: Direction
    target: float  # the x every arm is read at
    state: str  # the student's side: ok | not yet | not logged
    note: str | None
    rows: list[Row]


def align_metrics(req: Request, names: NameResolution, roles: Classified, loaded: Loaded,
                  student: Student, goals: Mapping[str, Direction], align: str, axis: _Axis,
                  last_k: int) -> list[Table]:
    """Each compared metric's table at the student's x (fleet series told first where)."""
    s_arm = req.arms[student.index]
    _want_student_steps(loaded.series, s_arm, req.runs, student.metrics, student.x, last_k)
    return [_table(req, names, roles.decisions[m], goals[m], loaded, student, m, align, axis)
            for m in student.metrics]


def _table(req: Request, names: NameResolution, decision: GroupDecision, direction: Direction,
           loaded: Loaded, student: Student, m: str, align: str, axis: _Axis) -> Table:
    si, s_x, series = student.index, student.x, loaded.series
    s_arm, s_label = req.arms[si], req.labels[si]
    goal = direction.goal
    s_series = series.get((s_arm.primary.address, m))
    has_student = s_series is not None and s_series.size > 0
    if has_student:
        target, state, note = s_series.last_x, "ok", None
        if target < s_x:
            note = (f"{s_label} last logged {m} at {axis.label()} {target:g} "
                    f"(its current {axis.label()} is {s_x:g}); every run is read there")
    else:
        target = s_x
        state = "not yet" if (decision.group == "downstream" or req.running[si]) else "not logged"
        note = f"{s_label} has not logged {m} yet; baselines shown at {axis.label()} {s_x:g}"
    order = [si, *(i for i in range(len(req.arms)) if i != si)]  # the student's row first
    rows = [_row(req.arms[i], req.labels[i], "student" if i == si else "baseline", m, names,
                 series, target, align, axis, state_if_missing=state if i == si else "not logged")
            for i in order]
    student_row = rows[0]
    for row in rows[1:]:
        if row.state == "ok" and student_row.state == "ok":
            row.delta = row.value - student_row.value
            row.student_better = better(student_row.value, row.value, goal)
    return Table(m, decision, direction, target, student_row.state if has_student else state,
                 note, rows)



def _want_student_steps(series: Mapping[tuple[str, str], _Series | _PushedSeries], s_arm: Arm,
                        runs: Sequence[Run], metric_names: Sequence[str], s_x: float,
                        last_k: int) -> None:
    """Tell fleet runs' series (`_PushedSeries`) where they will be read — the student's target
    and last K x of each metric (its rows and trend) — so one query reads them all."""
    for m in metric_names:
        pushed = [ser for r in runs if isinstance(ser := series.get((r.address, m)), _PushedSeries)]
        if not pushed:
            continue
        mine = series.get((s_arm.primary.address, m))
        targets = list(mine.x[-last_k:]) if mine is not None and mine.size else [s_x]
        for ser in pushed:
            ser.want(targets)


def _slice(series: _Series, target: float, mode: str) -> tuple[Slice, float, tuple[float, float] | None]:
    """Slice plus the logged step(s) behind the value."""
    s = slice_sorted(series.x, series.y, target, mode, strict_start=True)
    if not s.indices:
        return s, math.nan, None
    if s.method == "interpolate":
        i0, i1 = s.indices
        x0, x1 = series.x[i0], series.x[i1]
        s0, s1 = float(series.step[i0]), float(series.step[i1])
        frac = (target - x0) / (x1 - x0) if x1 != x0 else 0.0
        return s, s0 + (s1 - s0) * frac, (s0, s1)
    return s, float(series.step[s.indices[0]]), None


def _row(arm: Arm, label: str, role: str, metric: str, names: NameResolution,
         series: Mapping[tuple[str, str], _Series | _PushedSeries], target: float, align: str, axis: _Axis,
         state_if_missing: str = "not logged") -> Row:
    cells: list[Cell] = []
    for run in arm.seeds:
        key = names.keys[metric].get(run.address)
        ser = series.get((run.address, metric))
        if key is None or ser is None or ser.size == 0 or not math.isfinite(target):
            method = "not logged" if key is None or ser is None or ser.size == 0 else "empty"
            cells.append(Cell(run.name, run.address, run.run_id, run.adapter, run.seed, key, target,
                              method, math.nan, math.nan, math.nan))
            continue
        s, step_used, bracket = _slice(ser.part([target]), target, align)
        cells.append(Cell(run.name, run.address, run.run_id, run.adapter, run.seed, key, target,
                          s.method, s.value, s.x_used, step_used, bracket))
    reached = [c for c in cells if c.method in ("exact", "nearest", "interpolate")]
    values = [c.value for c in reached]
    n_seeds = len(arm.seeds)
    if reached:
        finite = [v for v in values if math.isfinite(v)]
        value = float(np.mean(finite)) if finite else math.nan
        methods = sorted({c.method for c in reached})
        state = "ok"
        note = None
        if len(reached) < n_seeds:
            note = f"{len(reached)} of {n_seeds} seeds reached {axis.label()} {target:g}"
        if len(finite) < len(values):
            note = (note + "; " if note else "") + f"{len(values) - len(finite)} non-finite value(s)"
        return Row(role, label, state, value, sample_std(values), len(reached), n_seeds,
                   n_seeds == 1, sorted({c.x_used for c in reached}),
                   methods[0] if len(methods) == 1 else "mixed", math.nan, None, note, cells)
    methods = {c.method for c in cells}
    if methods <= {"not logged", "empty"}:
        state = state_if_missing
        note = None
    elif "not reached" in methods:
        state = "not reached"
        ends = [c.x_used for c in cells if c.method == "not reached"]
        note = f"ended at {axis.label()} {max(ends):g}"
    else:
        state = "not yet"
        firsts = [c.x_used for c in cells if c.method == "not started"]
        note = f"first logged at {axis.label()} {min(firsts):g}" if firsts else None
    return Row(role, label, state, math.nan, math.nan, 0, n_seeds, n_seeds == 1, [], state,
               math.nan, None, note, cells)
