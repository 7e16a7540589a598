"""The same-step comparison engine, split by phase.

`result` holds the dataclasses (the stable JSON shape), `alignment` puts each run's series on the
chosen x-axis and slices it at the student's x, `trend` measures the gap over the last K points,
`prose` writes the sentences, and `engine.run_compare` ties them together. Import from here.
"""

from __future__ import annotations

from .engine import run_compare
from .result import (
    SCHEMA,
    STATES,
    TREND_STATUSES,
    ArmInfo,
    Band,
    Cell,
    CompareResult,
    Curve,
    FamilySummary,
    MetricComparison,
    Row,
    Skipped,
    Trend,
)

__all__ = [
    "SCHEMA", "STATES", "TREND_STATUSES", "ArmInfo", "Band", "Cell", "CompareResult", "Curve",
    "FamilySummary", "MetricComparison", "Row", "Skipped", "Trend", "run_compare",
]
