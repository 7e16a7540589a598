"""The x-axis a comparison reads every run on: the step, wall time, or a logged key."""

from __future__ import annotations

from collections.abc import Sequence

from ...errors import UsageError
from ...model import Run
from ..metricnames import spelling_key, tokens

WALL_AXES = ("wall", "relative_time")


class _Axis:
    """Turns a run's raw points into x values for the chosen axis."""

    def __init__(self, axis: str) -> None:
        self.axis = axis

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
