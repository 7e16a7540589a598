"""Fleet export: runs from any mix of trackers → one versioned, Hive-partitioned Parquet dataset.

`export_fleet()` writes it (`rundiff export`), the `parquet:` adapter reads it back, and
`read_points()` / `read_runs()` give pandas/pyarrow users the tables directly. See docs/fleet.md.
"""

from __future__ import annotations

from ..lazy import lazy_getattr

# names load when first used: the pushed-down many-run commands import fleet.pushdown without
# paying for pyarrow.dataset, pandas or the export engines
_EXPORTS = {
    "read_errors": "dataset", "read_points": "dataset", "read_runs": "dataset",
    "ENGINES": "engines", "DaskEngine": "engines", "LocalEngine": "engines",
    "ExportSummary": "export", "export_fleet": "export",
    "ERRORS_SCHEMA": "schema", "POINT_FILE_SCHEMA": "schema", "POINT_PARTITION_SCHEMA": "schema",
    "RUNS_SCHEMA": "schema", "SCHEMA_VERSION": "schema",
}
__getattr__ = lazy_getattr(__name__, _EXPORTS, globals())

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
