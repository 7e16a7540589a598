"""The parquet adapter's hooks: a fleet dataset written by `rundiff export` (docs/fleet.md)."""

from __future__ import annotations

import os

from rundiff_core import AdapterSpec, adapters_hook, hookimpl

NAME = "parquet"
MANIFEST = "_rundiff_fleet.json"  # rundiff_core.fleet.schema.MANIFEST (not imported: keep hooks light)


rundiff_register_adapters = adapters_hook(AdapterSpec(
    name=NAME, schemes=("parquet",), priority=35,
    source="rundiff_adapters.parquet.source:ParquetSource",
    summary="fleet datasets written by `rundiff export` (Hive-partitioned Parquet)",
))


@hookimpl
def rundiff_sniff_path(path):
    from rundiff_core import Claim  # here: every start imports this module, few sniff

    if os.path.isdir(path) and os.path.isfile(os.path.join(path, MANIFEST)):
        return Claim(NAME, f"fleet dataset ({MANIFEST})")
    if os.path.basename(path) == MANIFEST and os.path.isfile(path):
        return Claim(NAME, "fleet dataset manifest", locator=os.path.dirname(path) or ".")
    return None
