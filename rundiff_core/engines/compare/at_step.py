"""Phase 6b of a comparison (only when asked): the student read at an earlier x.

`rundiff serve`'s step slider, and `at=` in the API, re-read every baseline at another x: the
student's series are cut to x ≤ `at`, so the student stands where it stood then (its last point at
or before `at`), and every later phase — the tables, the trend, the reading — follows unchanged.
An `at` past the student's current x changes nothing: no baseline is ever read past the student.
"""

from __future__ import annotations

import math

from ...errors import UsageError
from .axis import _Axis
from .request import Request
from .series import Loaded, _PushedSeries, _Series
from .student import Student


def read_at(req: Request, loaded: Loaded, student: Student, at: float, axis: _Axis) -> Student:
    """The student as it stood at x `at` (see the module docstring)."""
    if not math.isfinite(at):
        raise UsageError(f"cannot read the runs at {axis.label()} {at}", hint="give a number")
    if at >= student.x:
        return student
    si = student.index
    label = req.labels[si]
    for run in req.arms[si].seeds:
        for key, ser in list(loaded.series.items()):
            if key[0] != run.address:
                continue
            whole = ser.whole() if isinstance(ser, _PushedSeries) else ser
            keep = whole.x <= at
            loaded.series[key] = _Series(whole.x[keep], whole.y[keep], whole.step[keep])
    primary = req.arms[si].primary.address
    lasts = [s.last_x for m in student.metrics
             if (s := loaded.series.get((primary, m))) is not None and s.size]
    now = max(lasts, default=math.nan)
    if not math.isfinite(now):
        raise UsageError(f"the student {label} logged none of the compared metrics at or before "
                         f"{axis.label()} {at:g}", hint="choose a later step")
    loaded.warnings.append(f"read at {axis.label()} {now:g}, as asked (the student {label} is "
                           f"at {axis.label()} {student.x:g})")
    student.current[si] = now
    student.x = now
    return student
