"""Phase 5 of a comparison: every run's series on the chosen x-axis, each history read once."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ...errors import UsageError
from ...model import Run, key_rows
from ..align import axis_from_key, first_decrease, relative_wall_time
from ..metricnames import NameResolution
from .axis import WALL_AXES, _Axis
from .classify import Classified
from .keys import KeyChoice
from .request import Request


@dataclass
class Loaded:
    """Every run's series of every candidate metric, and what reading them noted."""

    series: dict[tuple[str, str], _Series | _PushedSeries]  # (run address, metric) → series
    warnings: list[str]
    x_keys: dict[str, str] = field(default_factory=dict)  # run address → the logged key used as x


def load_series(req: Request, keys: KeyChoice, names: NameResolution, roles: Classified,
                axis: _Axis) -> Loaded:
    """Each run's candidate metrics on `axis` (fleet runs answer from their facts instead)."""
    loaded = Loaded({}, [f"{label}: {note}" for arm, label in zip(req.arms, req.labels, strict=True)
                         for note in arm.notes])
    for run in req.runs:
        if run.address in keys.pushed:  # a fleet run: its rows are read where sliced
            for m in roles.metrics:
                key = names.keys[m].get(run.address)
                if key is not None:
                    loaded.series[(run.address, m)] = _PushedSeries(run, key)
        else:
            _read_run(run, keys, names, roles.metrics, axis, loaded)
        loaded.warnings += [f"{run.name}: {note}" for note in run.fidelity]
    return loaded


def _read_run(run: Run, keys: KeyChoice, names: NameResolution, metric_names: Sequence[str],
              axis: _Axis, loaded: Loaded) -> None:
    """One run's series, split out of one history read (filtered to the wanted keys)."""
    x = axis.axis
    wanted = {names.keys[m][run.address] for m in metric_names if run.address in names.keys[m]}
    xkey = None
    if axis.by_key:
        xkey = axis.find_key(run, keys.logged[run.address])
        loaded.x_keys[run.address] = xkey
        wanted.add(xkey)
    # A run whose whole history is already loaded is split here rather than filtered again.
    h = run.history() if run.address in keys.full else run.history(sorted(wanted))
    idx = key_rows(h, wanted)
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
                loaded.warnings.append(f"{run.name}: {lost} point(s) of {key} lie outside the "
                                       f"logged range of {xkey} and have no {x}")
        loaded.series[(run.address, m)] = _prepare(xs, val, st)


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

