"""The `--no-pushdown` switch many-run commands share, and the cheap check that keeps the fleet
code (pyarrow, DuckDB) unimported when no address is a fleet dataset."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..engines.arms import Arm
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


def pushed_runs(args: argparse.Namespace, sources: Sequence[str], *, spikes: bool = True
                ) -> list[Run] | None:
    """The runs through fleet/pushdown.py when every address is a fleet dataset with a pack and
    the switch is on; None means: load them in memory as usual. `spikes`: start the loss-spike
    scan of every run beside the first query (what rank and report ask)."""
    if getattr(args, "no_pushdown", False) or not sources or not all(map(_fleet_like, sources)):
        return None
    from ..engines.runset import spike_rule
    from ..fleet.pushdown import enabled, load_pushed

    return load_pushed(sources, spike_rule=spike_rule if spikes else None) if enabled() else None


def push_arms(args: argparse.Namespace, arms: Sequence[Arm]) -> None:
    """Turn the runs of `arms` read from `parquet:` datasets with a pack into pushed-down runs
    (fleet/pushdown_tail.py), in place, unless the switch is off; other runs stay as they are."""
    if getattr(args, "no_pushdown", False) or not any(
            r.adapter == "parquet" for a in arms for r in a.seeds):
        return
    from ..fleet.pushdown import enabled
    from ..fleet.pushdown_tail import push_arms as push

    if enabled():
        push(arms)
