"""The same-step comparison engine: every baseline sliced at the student's current step.

The student is the run still training (or the one the user names). Its current x `S` is the latest
x it logged; every baseline is read at the student's latest x *for that metric* (S itself unless the
metric is logged less often) — never at its own end. Baselines without a point there use the
nearest logged point or a straight line between the two around it (`align`), and every cell says
which and the step actually used. Seed groups give mean ± σ with N; single runs say single-seed.
Proxy and downstream metrics are kept apart, a downstream metric the student has not logged yet
reads "not yet", and the conclusion never names a winner from proxy metrics alone.

Pure: takes loaded `Arm`s (runs with lazy histories), returns a `CompareResult`; no I/O, no printing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..errors import UsageError
from ..model import Run
from .align import (
    ALIGN_MODES,
    Slice,
    axis_from_key,
    first_decrease,
    relative_wall_time,
    slice_sorted,
    values_at,
)
from .arms import Arm, label_arms
from .jsonable import jsonable
from .metricnames import NameResolution, resolve_names, spelling_key, tokens
from .roles import GroupRules
from .stats import goal_for, sample_std

SCHEMA = "rundiff.compare/1"
WALL_AXES = ("wall", "relative_time")
STATES = ("ok", "not yet", "not reached", "not logged")
TREND_STATUSES = (
    "on track to catch up", "gap widening", "gap steady", "level", "converged", "ahead, gap widening",
    "ahead, gap narrowing", "ahead, gap steady", "insufficient data",
)
CONVERGED_POINTS = 5


# ---- result ------------------------------------------------------------------------------------
@dataclass
class Cell:
    """One run's value at one target x, and exactly where it came from."""

    run: str
    address: str
    run_id: str
    adapter: str
    seed: int | None
    key: str | None
    target: float
    method: str  # exact | nearest | interpolate | not reached | not started | not logged | empty
    value: float
    x_used: float
    step_used: float  # the logged step behind the value (interpolated for method=interpolate)
    bracket_steps: tuple[float, float] | None = None


@dataclass
class Row:
    """An arm's line in a metric table: the student's value, or a baseline's and its Δ."""

    role: str  # "student" | "baseline"
    arm: str
    state: str  # ok | not yet | not reached | not logged
    value: float
    std: float
    n: int  # seeds that contributed
    n_seeds: int
    single_seed: bool
    x_used: list[float]  # distinct logged x used (one per contributing seed, deduplicated)
    method: str  # exact | nearest | interpolate | mixed | the state
    delta: float  # this run − student (NaN when either is missing)
    student_better: bool | None
    note: str | None
    cells: list[Cell]


@dataclass
class Trend:
    """The gap between student and one baseline over the student's last K points."""

    student: str
    baseline: str
    status: str
    text: str
    k: int
    points: list[dict[str, float]]  # x, student, baseline, gap (= student − baseline)
    gap_last: float
    slope: float  # d(gap)/dx, raw units
    projected_x: float | None
    student_last5: list[tuple[float, float]]
    student_converged: bool


@dataclass
class MetricComparison:
    metric: str
    group: str
    group_source: str
    group_reason: str
    goal: str
    state: str  # ok | not yet | not logged (the student's side)
    target: float  # the x every baseline was sliced at (NaN when the student has no point)
    keys: dict[str, str]  # run address → logged key
    rows: list[Row]
    trends: list[Trend]
    note: str | None = None


@dataclass
class ArmInfo:
    label: str
    role: str
    address: str
    status: str
    n_seeds: int
    single_seed: bool
    current_x: float
    seeds: list[dict[str, Any]]
    members: str = ""  # the arm named by its runs: `version_11…13 (3 seeds)`
    how: str = ""  # the arm rule that grouped them (docs/diff.md, Arms)


@dataclass
class Curve:
    """Display data for one run of one metric (never used for statistics)."""

    arm: str
    role: str
    run: str
    x: np.ndarray
    y: np.ndarray


@dataclass
class Band:
    """A seed group's mean ± σ on the primary seed's x grid (display only)."""

    arm: str
    role: str
    x: np.ndarray
    mean: np.ndarray
    std: np.ndarray
    n: np.ndarray


@dataclass
class CompareResult:
    student: ArmInfo
    baselines: list[ArmInfo]
    student_reason: str
    x_axis: str
    x_label: str
    x_keys: dict[str, str]
    current_x: float
    align: str
    last_k: int
    metrics: list[MetricComparison]
    mapped: list[str]
    suggestions: list[str]
    not_compared: list[str]
    conclusion: list[str]
    warnings: list[str]
    project_file: str | None = None
    curves: dict[str, list[Curve]] = field(default_factory=dict, repr=False)
    bands: dict[str, list[Band]] = field(default_factory=dict, repr=False)

    def group(self, name: str) -> list[MetricComparison]:
        return [m for m in self.metrics if m.group == name]

    def to_dict(self) -> dict[str, Any]:
        """Stable JSON shape (`schema` names its version); plot data is not included."""
        d = {k: v for k, v in asdict(self).items() if k not in ("curves", "bands")}
        d["schema"] = SCHEMA
        return jsonable(d)


# ---- series preparation ------------------------------------------------------------------------
@dataclass
class _Series:
    """One run's metric on the chosen x-axis: sorted, unique x (last logged value wins)."""

    x: np.ndarray
    y: np.ndarray
    step: np.ndarray

    @property
    def last_x(self) -> float:
        return float(self.x[-1]) if len(self.x) else math.nan


def _prepare(x: np.ndarray, y: np.ndarray, step: np.ndarray) -> _Series:
    keep = np.isfinite(x)
    if not keep.all():
        x, y, step = x[keep], y[keep], step[keep]
    if len(x) == 0:
        return _Series(x, y, step)
    if len(x) > 1 and not (np.diff(x) > 0).all():
        order = np.argsort(x, kind="stable")
        x, y, step = x[order], y[order], step[order]
        last = np.append(x[1:] != x[:-1], True)
        x, y, step = x[last], y[last], step[last]
    return _Series(x, y, step)


class _Axis:
    """Turns a run's raw points into x values for the chosen axis."""

    def __init__(self, axis: str) -> None:
        self.axis = axis
        self.keys: dict[str, str] = {}  # run address → the logged key used as x

    @property
    def by_key(self) -> bool:
        return self.axis != "step" and self.axis not in WALL_AXES

    def label(self) -> str:
        if self.axis == "step":
            return "step"
        if self.axis in WALL_AXES:
            return "wall time (s since start)"
        return self.axis

    def find_key(self, run: Run, logged: Sequence[str]) -> str:
        """The key a run logs the x-axis under: exact, same words, or a unique `…/epoch`."""
        if self.axis in logged:
            return self.axis
        want = spelling_key(self.axis)
        hits = [k for k in logged if spelling_key(k) == want]
        if len(hits) != 1:
            last = tokens(self.axis)[-1:] if tokens(self.axis) else ()
            hits = [k for k in logged if tokens(k)[-1:] == last] if len(hits) == 0 else hits
        if len(hits) == 1:
            return hits[0]
        found = ", ".join(hits) if hits else ", ".join(sorted(logged)[:15])
        raise UsageError(
            f"{run.name} ({run.address}) has no unique '{self.axis}' key for --x {self.axis}",
            hint=("it matches " if hits else "it logs ") + found + "; pick one with --x KEY",
        )


# ---- the engine --------------------------------------------------------------------------------
def _unique_labels(arms: Sequence[Arm]) -> list[str]:
    """The arms' labels (engines.arms' labeller); relabelled together when the caller's clash."""
    labels = [a.label for a in arms]
    if len(set(labels)) < len(labels):
        label_arms(arms)
        labels = [a.label for a in arms]
    return labels


def _arm_running(arm: Arm) -> bool:
    return any(r.status == "running" for r in arm.seeds)


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


def _better(student: float, other: float, goal: str) -> bool | None:
    if not (math.isfinite(student) and math.isfinite(other)) or student == other:
        return None
    return student < other if goal == "min" else student > other


def run_compare(
    arms: Sequence[Arm],
    *,
    metrics: Sequence[str] | None = None,
    maps: Mapping[str, str] | None = None,
    student: int | None = None,
    align: str = "nearest",
    x: str = "step",
    rules: GroupRules | None = None,
    goals: Mapping[str, str] | None = None,
    last_k: int = 10,
    curves: bool = False,
) -> CompareResult:
    """Compare arms at the student's current x; see the module docstring for the rules."""
    if len(arms) < 2:
        raise UsageError("compare needs at least two runs or seed groups",
                         hint="give two or more addresses (or a folder holding several runs)")
    if align not in ALIGN_MODES:
        raise UsageError(f"unknown align mode {align!r}", hint=f"choose {' or '.join(ALIGN_MODES)}")
    if last_k < 2:
        raise UsageError("--last must be at least 2 points to measure a trend")
    rules = rules or GroupRules()
    goals = dict(goals or {})
    seen: dict[str, int] = {}
    for i, arm in enumerate(arms):
        for run in arm.seeds:
            if run.address in seen and seen[run.address] != i:
                raise UsageError(f"{run.name} ({run.address}) is given twice",
                                 hint="name each run or seed group once; runs that are seeds of "
                                 "one arm (docs/diff.md#arms) are one group — --no-seeds compares "
                                 "them run by run")
            seen[run.address] = i
    labels = _unique_labels(arms)
    axis = _Axis(x)

    # 1. Which keys to load, and under which names to compare them.
    all_runs = [r for a in arms for r in a.seeds]
    asked = list(metrics) if metrics else None
    if asked is not None:
        asked += [n for n in rules.explicit_names() if n not in asked]
    elif rules.explicit_names():
        asked = None  # explicit group names only classify; default selection still applies
    logged, full = _logged_keys(all_runs, asked, dict(maps or {}), axis)
    primaries = [a.primary.address for a in arms]
    # Metric names follow the student's spelling when it is known up front (named or running).
    running = [a for a in arms if _arm_running(a)]
    student_hint = (arms[student].primary.address if student is not None
                    else running[0].primary.address if running else None)
    names = resolve_names(
        {r.address: logged[r.address] for r in all_runs},
        asked,
        maps,
        prefer=student_hint or primaries[0],
        required=primaries,
    )
    not_compared: list[str] = []
    decisions = {m: rules.classify(m, names.keys[m].values()) for m in names.keys}
    if asked is not None:
        metric_names = list(names.metrics)
    else:  # every name class except diagnostics; narrowed to the student's once it is known
        metric_names = []
        for m in sorted(names.keys):
            if decisions[m].group == "diagnostic":
                not_compared.append(f"{m} (diagnostic: {decisions[m].reason}; name it with --metric)")
            else:
                metric_names.append(m)
        if not metric_names:
            _no_metric(arms, logged, names)

    # 2. Every series on the chosen axis.
    series: dict[tuple[str, str], _Series] = {}
    warnings: list[str] = [f"{label}: {note}" for arm, label in zip(arms, labels, strict=True)
                           for note in arm.notes]
    for run in all_runs:
        wanted = {names.keys[m][run.address] for m in metric_names if run.address in names.keys[m]}
        xkey = None
        if axis.by_key:
            xkey = axis.find_key(run, logged[run.address])
            axis.keys[run.address] = xkey
            wanted.add(xkey)
        # A run whose whole history is already loaded is split here rather than filtered again.
        h = run.history() if run.address in full else run.history(sorted(wanted))
        idx = _key_indices(h, wanted)
        steps_all = h["step"].to_numpy()
        values_all = h["value"].to_numpy()
        wall_all = h["wall_time"].to_numpy()
        kx = None
        if xkey is not None:
            ki = idx.get(xkey, np.array([], dtype=int))
            kx = (steps_all[ki], values_all[ki])
            bad = first_decrease(*kx)
            if bad is not None:
                raise UsageError(
                    f"--x {x}: {xkey} decreases at step {bad:g} in {run.name} ({run.address})",
                    hint="the x-axis must be a monotone key (a restart may have reset it); "
                    "use --x step",
                )
        start = None
        if axis.axis in WALL_AXES:
            finite = wall_all[np.isfinite(wall_all)]
            if len(finite) == 0:
                raise UsageError(f"{run.name} ({run.address}) has no wall times for --x {x}",
                                 hint="use --x step")
            start = float(finite.min())
        for m in metric_names:
            key = names.keys[m].get(run.address)
            if key is None:
                continue
            ii = idx.get(key, np.array([], dtype=int))
            st, val = steps_all[ii], values_all[ii]
            if axis.axis == "step":
                xs = st
            elif axis.axis in WALL_AXES:
                xs = relative_wall_time(wall_all[ii], start)
            else:
                xs = axis_from_key(st, *kx)
                lost = int(np.sum(~np.isfinite(xs)))
                if lost:
                    warnings.append(f"{run.name}: {lost} point(s) of {key} lie outside the logged "
                                    f"range of {xkey} and have no {x}")
            series[(run.address, m)] = _prepare(xs, val, st)
        for note in run.fidelity:
            warnings.append(f"{run.name}: {note}")

    # 3. The student and its current x.
    def arm_x(arm: Arm) -> float:
        xs = [series[(arm.primary.address, m)].last_x for m in metric_names
              if (arm.primary.address, m) in series and len(series[(arm.primary.address, m)].x)]
        return max(xs) if xs else math.nan

    current = [arm_x(a) for a in arms]
    si, reason = _pick_student(arms, labels, current, student, axis.label())
    s_arm = arms[si]
    if asked is None:
        metric_names = _default_metrics(arms, labels, si, metric_names, names, decisions,
                                        not_compared)
        if not metric_names:
            _no_metric(arms, logged, names)
        current = [arm_x(a) for a in arms]
    s_x = current[si]
    if not math.isfinite(s_x):
        raise UsageError(f"the student {labels[si]} has logged none of the compared metrics",
                         hint="choose another student with --student ADDR")

    # 4. Per metric: slice, tabulate, trend.
    comparisons = []
    for m in metric_names:
        decision = rules.classify(m, names.keys[m].values())
        goal = goals.get(m) or goal_for(m)
        s_series = series.get((s_arm.primary.address, m))
        has_student = s_series is not None and len(s_series.x) > 0
        if has_student:
            target, state, note = s_series.last_x, "ok", None
            if target < s_x:
                note = (f"{labels[si]} last logged {m} at {axis.label()} {target:g} "
                        f"(its current {axis.label()} is {s_x:g}); every run is read there")
        else:
            target = s_x
            state = "not yet" if (decision.group == "downstream" or _arm_running(s_arm)) else "not logged"
            note = f"{labels[si]} has not logged {m} yet; baselines shown at {axis.label()} {s_x:g}"
        rows = []
        student_row = _row(s_arm, labels[si], "student", m, names, series, target, align, axis,
                           state_if_missing=state)
        rows.append(student_row)
        for i, arm in enumerate(arms):
            if i == si:
                continue
            row = _row(arm, labels[i], "baseline", m, names, series, target, align, axis)
            if row.state == "ok" and student_row.state == "ok":
                row.delta = row.value - student_row.value
                row.student_better = _better(student_row.value, row.value, goal)
            rows.append(row)
        trends = []
        if student_row.state == "ok":
            for i, arm in enumerate(arms):
                if i != si:
                    trends.append(_trend(s_arm, labels[si], arm, labels[i], m, series, align, goal,
                                         last_k, axis.label()))
        comparisons.append(MetricComparison(
            metric=m, group=decision.group, group_source=decision.source,
            group_reason=decision.reason, goal=goal, state=student_row.state if has_student else state,
            target=target, keys=dict(names.keys[m]), rows=rows, trends=trends, note=note,
        ))
    order = {"downstream": 1, "proxy": 0, "diagnostic": 2}
    comparisons.sort(key=lambda c: order.get(c.group, 3))

    infos = [_arm_info(a, labels[i], "student" if i == si else "baseline", current[i])
             for i, a in enumerate(arms)]
    result = CompareResult(
        student=infos[si],
        baselines=[info for i, info in enumerate(infos) if i != si],
        student_reason=reason,
        x_axis=x,
        x_label=axis.label(),
        x_keys=dict(axis.keys),
        current_x=s_x,
        align=align,
        last_k=last_k,
        metrics=comparisons,
        mapped=_describe_mapped(names, metric_names, arms, labels),
        suggestions=list(names.suggestions),
        not_compared=not_compared,
        conclusion=[],
        warnings=list(dict.fromkeys(warnings)),
        project_file=rules.project_file,
    )
    result.conclusion = _conclusion(result)
    if curves:
        result.curves, result.bands = _display_curves(arms, labels, si, metric_names, series)
    return result


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


def _default_metrics(arms: Sequence[Arm], labels: Sequence[str], si: int, candidates: list[str],
                     names: NameResolution, decisions: Mapping[str, Any],
                     not_compared: list[str]) -> list[str]:
    """Metrics the student shares with a baseline, plus downstream ones a baseline logs."""
    def logs(arm: Arm, m: str) -> bool:
        return any(r.address in names.keys[m] for r in arm.seeds)

    selected = []
    for m in candidates:
        student_has = logs(arms[si], m)
        holders = [labels[i] for i, a in enumerate(arms) if i != si and logs(a, m)]
        if holders and (student_has or decisions[m].group == "downstream"):
            selected.append(m)
        elif holders:
            not_compared.append(f"{m} (not logged by the student {labels[si]}; "
                                f"logged by {', '.join(holders[:3])}; name it with --metric)")
        else:
            not_compared.append(f"{m} (no baseline logs it)")
    return selected


def _no_metric(arms: Sequence[Arm], logged: Mapping[str, list[str]], names: NameResolution) -> None:
    everything = {a.primary.name: sorted(logged[a.primary.address]) for a in arms}
    raise UsageError(
        "the runs share no comparable metric",
        hint="name one with --metric, or map names with --map A=B; logged: "
        + "; ".join(f"{k}: {', '.join(v[:10])}" for k, v in everything.items())
        + ("; " + " | ".join(names.suggestions[:3]) if names.suggestions else ""),
    )


def _logged_keys(runs: Sequence[Run], asked: list[str] | None, maps: dict[str, str],
                 axis: _Axis) -> tuple[dict[str, list[str]], set[str]]:
    """Each run's logged keys, and the runs whose full history that loaded.

    When every asked name is logged verbatim, only those keys are loaded."""
    out: dict[str, list[str]] = {}
    full: set[str] = set()
    for run in runs:
        if asked is not None and not maps and not axis.by_key:
            h = run.history(asked)
            present = set(h["key"].astype(str).unique()) if len(h) else set()
            if present == set(asked):
                out[run.address] = sorted(present)
                continue
        out[run.address] = run.metric_keys()
        full.add(run.address)
    return out, full


def _key_indices(h: pd.DataFrame, wanted: set[str]) -> dict[str, np.ndarray]:
    """Row positions of each wanted key (categorical codes when the adapter gave them)."""
    if not len(h):
        return {}
    col = h["key"]
    if isinstance(col.dtype, pd.CategoricalDtype):
        cats = col.cat.categories
        codes = col.cat.codes.to_numpy()
        return {k: np.flatnonzero(codes == cats.get_loc(k)) for k in wanted if k in cats}
    keys = col.to_numpy()
    return {k: np.flatnonzero(keys == k) for k in wanted}


def _pick_student(arms: Sequence[Arm], labels: Sequence[str], current: Sequence[float],
                  chosen: int | None, xname: str) -> tuple[int, str]:
    if chosen is not None:
        return chosen, "named with --student"
    finite = [i for i, c in enumerate(current) if math.isfinite(c)]
    running = [i for i in finite if _arm_running(arms[i])]
    if len(running) == 1:
        return running[0], "the only run still training (status running)"
    pool = running or finite
    if not pool:
        return 0, "the first run given (no run has points)"
    fewest = min(current[i] for i in pool)
    tied = [i for i in pool if current[i] == fewest]
    what = f"fewest {xname}s ({fewest:g})"
    if running:
        why = f"still training with the {what} of {len(running)} running runs"
    else:
        why = f"no run is still training; the {what}"
    if len(tied) > 1:
        why += f"; tie with {', '.join(labels[i] for i in tied[1:])} → the first given"
    return tied[0], why


def _row(arm: Arm, label: str, role: str, metric: str, names: NameResolution,
         series: Mapping[tuple[str, str], _Series], target: float, align: str, axis: _Axis,
         state_if_missing: str = "not logged") -> Row:
    cells: list[Cell] = []
    for run in arm.seeds:
        key = names.keys[metric].get(run.address)
        ser = series.get((run.address, metric))
        if key is None or ser is None or len(ser.x) == 0 or not math.isfinite(target):
            method = "not logged" if key is None or ser is None or len(ser.x) == 0 else "empty"
            cells.append(Cell(run.name, run.address, run.run_id, run.adapter, run.seed, key, target,
                              method, math.nan, math.nan, math.nan))
            continue
        s, step_used, bracket = _slice(ser, target, align)
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


def _arm_values_at(arm: Arm, metric: str, series: Mapping[tuple[str, str], _Series],
                   xs: np.ndarray, align: str) -> np.ndarray:
    """The arm's mean over seeds at each x (NaN where no seed has a point there)."""
    stack = []
    for run in arm.seeds:
        ser = series.get((run.address, metric))
        if ser is not None and len(ser.x):
            stack.append(values_at(ser.x, ser.y, xs, align, strict_start=True))
    if not stack:
        return np.full(len(xs), np.nan)
    mat = np.vstack(stack)
    counts = np.sum(np.isfinite(mat), axis=0)
    sums = np.nansum(mat, axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)


def _flat(x: np.ndarray, y: np.ndarray, scale: float) -> tuple[bool, float, float]:
    """(no real movement, slope, residual σ) of y over x by least squares."""
    if len(x) < 2 or np.ptp(x) == 0:
        return True, 0.0, 0.0
    slope, intercept = np.polyfit(x, y, 1)
    resid = y - (slope * x + intercept)
    noise = float(np.std(resid, ddof=1)) if len(x) > 2 else 0.0
    change = abs(slope) * float(np.ptp(x))
    return change <= max(2.0 * noise, 1e-3 * scale, 1e-12), float(slope), noise


def _trend(s_arm: Arm, s_label: str, b_arm: Arm, b_label: str, metric: str,
           series: Mapping[tuple[str, str], _Series], align: str, goal: str, k: int,
           xname: str) -> Trend:
    primary = series[(s_arm.primary.address, metric)]
    xs = primary.x[-k:]
    sv = _arm_values_at(s_arm, metric, series, xs, align) if len(s_arm.seeds) > 1 else primary.y[-k:]
    bv = _arm_values_at(b_arm, metric, series, xs, align)
    ok = np.isfinite(sv) & np.isfinite(bv)
    points = [{"x": float(a), "student": float(b), "baseline": float(c), "gap": float(b - c)}
              for a, b, c in zip(xs[ok], sv[ok], bv[ok], strict=True)]
    last5 = [(float(a), float(b)) for a, b in zip(primary.x[-CONVERGED_POINTS:],
                                                   primary.y[-CONVERGED_POINTS:], strict=True)]
    vals5 = np.array([v for _, v in last5])
    scale = float(np.nanmax(np.abs(np.concatenate([sv[ok], bv[ok]])))) if ok.any() else 1.0
    finite5 = np.isfinite(vals5)
    student_flat = len(last5) >= CONVERGED_POINTS and bool(finite5.all()) and _flat(
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
    deficit = gap if goal == "min" else -gap  # > 0: the student is behind
    flat, slope_d, noise = _flat(x_ok, deficit, scale)
    slope = slope_d if goal == "min" else -slope_d
    d_last = float(deficit[-1])
    level = abs(d_last) <= max(2.0 * noise, 1e-3 * scale, 1e-12)
    where = f"at {xname} {x_ok[-1]:g}"
    size = f"{abs(float(gap[-1])):.4g}"
    base.gap_last, base.slope = float(gap[-1]), slope
    span = f"over the student's last {len(x_ok)} points ({xname}s {x_ok[0]:g}–{x_ok[-1]:g})"
    b_end = max((series[(r.address, metric)].last_x for r in b_arm.seeds
                 if (r.address, metric) in series and len(series[(r.address, metric)].x)),
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


def _arm_info(arm: Arm, label: str, role: str, current_x: float) -> ArmInfo:
    status = "running" if _arm_running(arm) else arm.primary.status
    return ArmInfo(
        label=label, role=role, address=arm.address, status=status, n_seeds=len(arm.seeds),
        single_seed=len(arm.seeds) == 1, current_x=current_x,
        seeds=[{"name": r.name, "address": r.address, "run_id": r.run_id, "adapter": r.adapter,
                "seed": r.seed, "status": r.status} for r in arm.seeds],
        members=arm.members, how=arm.how,
    )


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


def _display_curves(arms: Sequence[Arm], labels: Sequence[str], si: int, metric_names: Sequence[str],
                    series: Mapping[tuple[str, str], _Series]
                    ) -> tuple[dict[str, list[Curve]], dict[str, list[Band]]]:
    curves: dict[str, list[Curve]] = {}
    bands: dict[str, list[Band]] = {}
    for m in metric_names:
        curves[m], bands[m] = [], []
        for i, arm in enumerate(arms):
            role = "student" if i == si else "baseline"
            for run in arm.seeds:
                ser = series.get((run.address, m))
                if ser is not None and len(ser.x):
                    curves[m].append(Curve(labels[i], role, run.name, ser.x, ser.y))
            primary = series.get((arm.primary.address, m))
            if len(arm.seeds) > 1 and primary is not None and len(primary.x):
                grid = primary.x
                stack = np.vstack([
                    values_at(s.x, s.y, grid, "interpolate", strict_start=True)
                    for r in arm.seeds if (s := series.get((r.address, m))) is not None and len(s.x)
                ])
                n = np.sum(np.isfinite(stack), axis=0)
                with np.errstate(invalid="ignore", divide="ignore"):
                    mean = np.where(n > 0, np.nansum(stack, axis=0) / np.maximum(n, 1), np.nan)
                    dev = np.where(n > 1, np.sqrt(np.nansum((stack - mean) ** 2, axis=0)
                                                  / np.maximum(n - 1, 1)), 0.0)
                bands[m].append(Band(labels[i], role, grid, mean, dev, n))
    return curves, bands
