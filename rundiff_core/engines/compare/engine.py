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
from typing import Any

import numpy as np

from ...errors import UsageError
from ...model import Run
from ..align import ALIGN_MODES, axis_from_key, first_decrease, relative_wall_time
from ..arms import Arm, label_arms
from ..directions import GoalRules, declared_headline, goal_rules
from ..metricnames import NameResolution, resolve_names
from ..primary import uninformative_keys
from ..roles import GroupRules
from ..selection import expand, is_glob, natural_key, natural_sorted
from .alignment import (
    WALL_AXES,
    _Axis,
    _display_curves,
    _key_indices,
    _logged_keys,
    _prepare,
    _PushedSeries,
    _row,
    _Series,
    pushed_step_series,
)
from .prose import _conclusion, _describe_mapped, trend_lines
from .result import ArmInfo, CompareResult, MetricComparison, Skipped
from .selection import select
from .trend import _trend


def _unique_labels(arms: Sequence[Arm]) -> list[str]:
    """The arms' labels (engines.arms' labeller); relabelled together when the caller's clash."""
    labels = [a.label for a in arms]
    if len(set(labels)) < len(labels):
        label_arms(arms)
        labels = [a.label for a in arms]
    return labels


def _arm_running(arm: Arm) -> bool:
    return any(r.status == "running" for r in arm.seeds)


def _better(student: float, other: float, goal: str | None) -> bool | None:
    if goal is None or not (math.isfinite(student) and math.isfinite(other)) or student == other:
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
    goals: GoalRules | Mapping[str, str] | Sequence[str] | None = None,
    last_k: int = 10,
    curves: bool = False,
    show_all: bool = False,
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
    goals = goal_rules(goals)
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
    declared = [m for m in (metrics or ()) if not is_glob(m)]
    asked = _expand_globs(list(metrics), all_runs) if metrics else None
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
    skipped: list[Skipped] = []
    decisions = {m: rules.classify(m, names.keys[m].values(),
                                   [r for r in all_runs if r.address in names.keys[m]])
                 for m in names.keys}
    if asked is not None:
        metric_names = list(names.metrics)
    else:  # every name class except diagnostics; narrowed to the student's once it is known
        metric_names = []
        for m in natural_sorted(names.keys):
            if decisions[m].group == "diagnostic":
                not_compared.append(f"{m} (diagnostic: {decisions[m].reason}; name it with --metric)")
                skipped.append(Skipped(m, "diagnostic", decisions[m].reason))
            else:
                metric_names.append(m)
        if not metric_names:
            _no_metric(arms, logged, names)

    # 2. Every series on the chosen axis.
    series: dict[tuple[str, str], _Series | _PushedSeries] = {}
    warnings: list[str] = [f"{label}: {note}" for arm, label in zip(arms, labels, strict=True)
                           for note in arm.notes]
    for run in all_runs:
        if pushed_step_series(run, axis.axis):  # a fleet run: its rows are read where sliced
            for m in metric_names:
                key = names.keys[m].get(run.address)
                if key is not None:
                    series[(run.address, m)] = _PushedSeries(run, key)
            warnings += [f"{run.name}: {note}" for note in run.fidelity]
            continue
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
              if (arm.primary.address, m) in series and series[(arm.primary.address, m)].size]
        return max(xs) if xs else math.nan

    current = [arm_x(a) for a in arms]
    si, reason = _pick_student(arms, labels, current, student, axis.label())
    s_arm = arms[si]
    if asked is None:
        metric_names = _default_metrics(arms, labels, si, metric_names, names, decisions,
                                        not_compared, skipped)
        if not metric_names:
            _no_metric(arms, logged, names)
        current = [arm_x(a) for a in arms]
    s_x = current[si]
    if not math.isfinite(s_x):
        raise UsageError(f"the student {labels[si]} has logged none of the compared metrics",
                         hint="choose another student with --student ADDR")

    # 4. Per metric: slice, tabulate, trend.
    _want_student_steps(series, s_arm, all_runs, metric_names, s_x, last_k)
    comparisons = []
    for m in metric_names:
        decision = decisions.get(m) or rules.classify(m, names.keys[m].values())
        direction = goals.direction(m, [r for r in all_runs if r.address in names.keys[m]],
                                    names.keys[m].values())
        goal = direction.goal
        s_series = series.get((s_arm.primary.address, m))
        has_student = s_series is not None and s_series.size > 0
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
            direction=direction.to_dict(),
        ))
    order = {"downstream": 1, "proxy": 0, "diagnostic": 2}
    comparisons.sort(key=lambda c: (order.get(c.group, 3), natural_key(c.metric)))
    # Declared names are always rows: --metric, --proxy/--downstream names, rundiff.toml names.
    in_project = [p for names_ in rules.project.values() for p in names_ if not is_glob(p)]
    explicit = list(dict.fromkeys([*declared, *rules.explicit_names(), *in_project]))
    shown, fams = select(comparisons, explicit, [labels[i] for i in range(len(arms)) if i != si])

    infos = [_arm_info(a, labels[i], "student" if i == si else "baseline", current[i])
             for i, a in enumerate(arms)]
    lead = declared[0] if declared else None
    if lead is None:  # the metric the runs' framework picks its best model by, when compared
        found = declared_headline(all_runs, metric_names)
        lead = found[0] if found else None
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
        shown=shown,
        families=fams,
        skipped=skipped,
        show_all=show_all,
        headline=lead,
    )
    result.trend_lines = trend_lines(result)
    result.conclusion = _conclusion(result)
    if curves:
        result.curves, result.bands = _display_curves(arms, labels, si, metric_names, series)
    return result


def _want_student_steps(series: Mapping[tuple[str, str], Any], s_arm: Arm, runs: Sequence[Run],
                        metric_names: Sequence[str], s_x: float, last_k: int) -> None:
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


def _default_metrics(arms: Sequence[Arm], labels: Sequence[str], si: int, candidates: list[str],
                     names: NameResolution, decisions: Mapping[str, Any],
                     not_compared: list[str], skipped: list[Skipped]) -> list[str]:
    """Metrics the student shares with a baseline, plus downstream ones a baseline logs."""
    def logs(arm: Arm, m: str) -> bool:
        return any(r.address in names.keys[m] for r in arm.seeds)

    selected = []
    for m in candidates:
        why = uninformative_keys([(r, names.keys[m][r.address]) for a in arms for r in a.seeds
                                  if r.address in names.keys[m]])
        if why is not None:  # Lightning's hp_metric placeholder, a constant: never a row by default
            not_compared.append(f"{m} (no information: {why}; name it with --metric)")
            skipped.append(Skipped(m, "no information", why))
            continue
        student_has = logs(arms[si], m)
        holders = [labels[i] for i, a in enumerate(arms) if i != si and logs(a, m)]
        if holders and (student_has or decisions[m].group == "downstream"):
            selected.append(m)
        elif holders:
            not_compared.append(f"{m} (not logged by the student {labels[si]}; "
                                f"logged by {', '.join(holders[:3])}; name it with --metric)")
            skipped.append(Skipped(m, "not logged by the student", ", ".join(holders[:3])))
        else:
            not_compared.append(f"{m} (no baseline logs it)")
            skipped.append(Skipped(m, "no baseline logs it", labels[si]))
    return selected


def _no_metric(arms: Sequence[Arm], logged: Mapping[str, list[str]], names: NameResolution) -> None:
    everything = {a.primary.name: sorted(logged[a.primary.address]) for a in arms}
    raise UsageError(
        "the runs share no comparable metric",
        hint="name one with --metric, or map names with --map A=B; logged: "
        + "; ".join(f"{k}: {', '.join(v[:10])}" for k, v in everything.items())
        + ("; " + " | ".join(names.suggestions[:3]) if names.suggestions else ""),
    )


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


def _arm_info(arm: Arm, label: str, role: str, current_x: float) -> ArmInfo:
    status = "running" if _arm_running(arm) else arm.primary.status
    return ArmInfo(
        label=label, role=role, address=arm.address, status=status, n_seeds=len(arm.seeds),
        single_seed=len(arm.seeds) == 1, current_x=current_x,
        seeds=[{"name": r.name, "address": r.address, "run_id": r.run_id, "adapter": r.adapter,
                "seed": r.seed, "status": r.status} for r in arm.seeds],
        members=arm.members, how=arm.how,
    )


def _expand_globs(metrics: list[str], runs: Sequence[Run]) -> list[str]:
    """`--metric` globs (`'val/*'`) replaced by the keys any run logged, in natural order."""
    if not any(is_glob(m) for m in metrics):
        return metrics
    logged = {k for r in runs for k in r.metric_keys()}
    out, unmatched = expand(metrics, logged)
    if unmatched:
        raise UsageError(f"--metric {unmatched[0]} matches no logged key",
                         hint="logged: " + ", ".join(natural_sorted(logged)[:12])
                         + (" …" if len(logged) > 12 else ""))
    return out
