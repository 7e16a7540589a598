"""The fleet dataset's on-disk format as a reader outside the core needs it (the `parquet:` adapter).

Adapters import only `rundiff_core`, which exports this module as `fleet_storage`: file paths,
the manifest check, version-checked table reads, the points pack, and the runs table schema.
"""

from __future__ import annotations

from .layout import manifest_path, points_file, read_manifest, read_table, runs_file
from .pack import Pack, open_pack
from .schema import RUNS_SCHEMA, from_json

__all__ = [
    "RUNS_SCHEMA",
    "Pack",
    "from_json",
    "manifest_path",
    "open_pack",
    "points_file",
    "read_manifest",
    "read_table",
    "runs_file",
]
