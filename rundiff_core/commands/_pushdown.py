"""The `--no-pushdown` switch many-run commands share, and the cheap check that keeps the fleet
code (pyarrow, DuckDB) unimported when no address is a fleet dataset."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..model import Run

ENV = "RUNDIFF_PUSHDOWN"
MANIFEST = "_rundiff_fleet.json"  # fleet/schema.py MANIFEST, named here to avoid importing pyarrow


def add_switch(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-pushdown", action="store_true",
                   help="on a parquet: fleet dataset, load every history instead of asking DuckDB "
                        "(same results; also RUNDIFF_PUSHDOWN=0)")


def _fleet_like(raw: str) -> bool:
    if raw.startswith("parquet:"):
        return True
    path = raw.split("#", 1)[0]
    return os.path.isfile(os.path.join(path, MANIFEST))


def pushed_runs(args: argparse.Namespace, sources: Sequence[str]) -> list[Run] | None:
    """The runs through fleet/pushdown.py when every address is a fleet dataset with a pack and
    the switch is on; None means: load them in memory as usual."""
    if getattr(args, "no_pushdown", False) or not sources or not all(map(_fleet_like, sources)):
        return None
    from ..engines.runset import spike_rule
    from ..fleet.pushdown import enabled, load_pushed

    return load_pushed(sources, spike_rule=spike_rule) if enabled() else None
