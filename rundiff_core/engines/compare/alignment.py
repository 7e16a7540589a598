"""Series on the chosen x-axis, and slicing each run at the student's x (the step behind every value)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...errors import UsageError
from ...model import Run
from ..align import Slice, slice_sorted, values_at
from ..arms import Arm
from ..metricnames import NameResolution, spelling_key, tokens
from ..stats import sample_std
from .result import Band, Cell, Curve, Row

WALL_AXES = ("wall", "relative_time")


@dataclass
class _Series:
    """One run's metric on the chosen x-axis: sorted, unique x (last logged value wins)."""

    x: np.ndarray
    y: np.ndarray
    step: np.ndarray

    @property
    def last_x(self) -> float:
        return float(self.x[-1]) if len(self.x) else math.nan

    @property
    def size(self) -> int:
        return len(self.x)

    def part(self, targets: Sequence[float]) -> _Series:
        """What slicing at `targets` reads: here, the whole series."""
        return self


class _PushedSeries:
    """A fleet run's metric on the step axis, answered by fleet queries (fleet/pushdown_tail.py)
    without loading: its size and last step from the per-key facts, and at the slicing targets
    only the rows near them, which slice exactly as the whole series does. `x`, `y`, `step`
    load the whole series (the student's trend and plots need it), as does any answer the
    facts cannot prove."""

    def __init__(self, run: Run, key: str) -> None:
        self.run, self.key = run, key
        self._full: _Series | None = None
        self._known = run.pushed_steps(key)  # type: ignore[attr-defined]

    def whole(self) -> _Series:
        if self._full is None:
            steps, values, _w = self.run.series(self.key)
            self._full = _prepare(steps, values, steps)
        return self._full

    x = property(lambda self: self.whole().x)
    y = property(lambda self: self.whole().y)
    step = property(lambda self: self.whole().step)

    @property
    def last_x(self) -> float:
        if self._full is None and self._known is not None:
            return self._known[1] if self._known[0] else math.nan
        return self.whole().last_x

    @property
    def size(self) -> int:
        if self._full is None and self._known is not None:
            return int(self._known[0])  # > 0 is all that is asked
        return self.whole().size

    def want(self, targets: Sequence[float]) -> None:
        """Targets a later `part` will ask (one query answers every run of the dataset)."""
        self.run.pushed_want(self.key, targets)  # type: ignore[attr-defined]

    def part(self, targets: Sequence[float]) -> _Series:
        if self._full is None:
            got = self.run.pushed_near(self.key, targets)  # type: ignore[attr-defined]
            if got is not None:
                return _Series(got[0], got[1], got[0])
        return self.whole()


def pushed_step_series(run: Run, axis: str) -> bool:
    """True when `run`'s series on `axis` can be `_PushedSeries` (a fleet run, the step axis,
    and facts that account for every point the adapter would load)."""
    ok = getattr(run, "pushed_complete", None)
    return axis == "step" and ok is not None and ok()


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


def _logged_keys(runs: Sequence[Run], asked: list[str] | None, maps: dict[str, str],
                 axis: _Axis) -> tuple[dict[str, list[str]], set[str]]:
    """Each run's logged keys, and the runs whose full history that loaded.

    When every asked name is logged verbatim, only those keys are loaded."""
    out: dict[str, list[str]] = {}
    full: set[str] = set()
    for run in runs:
        if asked is not None and not maps and not axis.by_key:
            if pushed_step_series(run, axis.axis):  # the keys from the fleet's facts
                present = set(run.metric_keys()) & set(asked)
            else:
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


def _arm_values_at(arm: Arm, metric: str, series: Mapping[tuple[str, str], _Series | _PushedSeries],
                   xs: np.ndarray, align: str) -> np.ndarray:
    """The arm's mean over seeds at each x (NaN where no seed has a point there)."""
    stack = []
    for run in arm.seeds:
        ser = series.get((run.address, metric))
        if ser is not None and ser.size:
            part = ser.part(xs)
            stack.append(values_at(part.x, part.y, xs, align, strict_start=True))
    if not stack:
        return np.full(len(xs), np.nan)
    mat = np.vstack(stack)
    counts = np.sum(np.isfinite(mat), axis=0)
    sums = np.nansum(mat, axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)


def _display_curves(arms: Sequence[Arm], labels: Sequence[str], si: int, metric_names: Sequence[str],
                    series: Mapping[tuple[str, str], _Series | _PushedSeries]
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
