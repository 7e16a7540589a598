"""Fleet export: runs from any mix of trackers → one versioned, Hive-partitioned Parquet dataset.

`export_fleet()` writes it (`rundiff export`), the `parquet:` adapter reads it back, and
`read_points()` / `read_runs()` give pandas/pyarrow users the tables directly. See docs/fleet.md.
"""

from __future__ import annotations

from .dataset import read_errors, read_points, read_runs
from .engines import ENGINES, DaskEngine, LocalEngine
from .export import ExportSummary, export_fleet
from .schema import (
    ERRORS_SCHEMA,
    POINT_FILE_SCHEMA,
    POINT_PARTITION_SCHEMA,
    RUNS_SCHEMA,
    SCHEMA_VERSION,
)

__all__ = [
    "ENGINES",
    "ERRORS_SCHEMA",
    "POINT_FILE_SCHEMA",
    "POINT_PARTITION_SCHEMA",
    "RUNS_SCHEMA",
    "SCHEMA_VERSION",
    "DaskEngine",
    "ExportSummary",
    "LocalEngine",
    "export_fleet",
    "read_errors",
    "read_points",
    "read_runs",
]
