"""The same-step comparison engine, split by phase.

`engine.run_compare` runs the phases in order, each taking what the ones before it found:
`request` (checked, labelled), `keys` (which keys to load), `names` (the names compared under),
`classify` (proxy, downstream, diagnostic), `series` (every run's series on the `axis`),
`student` (who, at which x, against which metrics), `goals` (which way is better), `alignment`
(each arm sliced at the student's x), `trend` (the gap over the last K points) and `reading`
(the result, with `prose`'s sentences, `selection`'s shown rows and `curves` for plots).
`result` holds the dataclasses (the stable JSON shape). Import from here.
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
