"""Phase 7 of a comparison: which way is better for each compared metric.

The --goal rules, then rundiff.toml's [goals], then what the runs declare, then the vocabulary
(`engines/directions.py`); a metric with no known direction is compared but never called better.
"""

from __future__ import annotations

from ..directions import Direction
from ..metricnames import NameResolution
from .request import Request
from .student import Student


def decide_goals(req: Request, names: NameResolution, student: Student) -> dict[str, Direction]:
    """Each compared metric's direction, decided under every name the runs log it by."""
    return {m: req.goals.direction(m, [r for r in req.runs if r.address in names.keys[m]],
                                   names.keys[m].values())
            for m in student.metrics}
