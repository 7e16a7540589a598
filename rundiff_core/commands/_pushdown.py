"""The pushdown switches many-run commands share (`--no-pushdown`, `--engine duckdb|dask`,
`--scheduler`, `--workers`), and the cheap check that keeps the fleet code (pyarrow, DuckDB, Dask)
unimported when no address is a fleet dataset."""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from ..errors import UsageError

if TYPE_CHECKING:
    from ..engines.arms import Arm
    from ..model import Run

ENV = "RUNDIFF_PUSHDOWN"
MANIFEST = "_rundiff_fleet.json"  # fleet/schema.py MANIFEST, named here to avoid importing pyarrow
ENGINES = ("duckdb", "dask")


def add_switch(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-pushdown", action="store_true",
                   help="on a parquet: fleet dataset, load every history instead of asking DuckDB "
                        "(same results; also RUNDIFF_PUSHDOWN=0)")
    p.add_argument("--engine", choices=ENGINES, default="duckdb",
                   help="who answers the pushed-down fleet queries: DuckDB in this process "
                        "(default), or Dask (same results; worth it for fleets too large for "
                        "one machine, with --scheduler)")
    p.add_argument("--scheduler", default=None, metavar="ADDR",
                   help="--engine dask: the Dask scheduler (tcp://HOST:8786), whose workers "
                        "read the dataset at the same path; default: a LocalCluster here")
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="--engine dask without --scheduler: threads of the LocalCluster "
                        "started (default min(4, cores))")


def _fleet_like(raw: str) -> bool:
    if raw.startswith("parquet:"):
        return True
    path = raw.split("#", 1)[0]
    return os.path.isfile(os.path.join(path, MANIFEST))


def _check(args: argparse.Namespace) -> str:
    """The engine asked for, its options checked before anything is read."""
    engine = getattr(args, "engine", "duckdb") or "duckdb"
    if engine != "dask":
        for flag, value in (("--scheduler", getattr(args, "scheduler", None)),
                            ("--workers", getattr(args, "workers", None))):
            if value is not None:
                raise UsageError(f"{flag} needs --engine dask",
                                 hint=f"add --engine dask, or drop {flag}")
        return engine
    if getattr(args, "no_pushdown", False):
        raise UsageError("--engine dask answers pushed-down queries; --no-pushdown turns them off",
                         hint="drop one of the two")
    workers = getattr(args, "workers", None)
    if workers is not None and workers < 1:
        raise UsageError("--workers must be 1 or more")
    return engine


@contextlib.contextmanager
def pushed(args: argparse.Namespace, sources: Sequence[str], *, spikes: bool = True
           ) -> Iterator[list[Run] | None]:
    """The runs through fleet/pushdown.py when every address is a fleet dataset with a pack and
    the switch is on (None: load them in memory as usual), with the Dask client of
    `--engine dask` open until the command is done (a LocalCluster it started is then closed).
    `spikes`: start the loss-spike scan of every run beside the first query (rank, report)."""
    engine = _check(args)
    if getattr(args, "no_pushdown", False) or not sources or not all(map(_fleet_like, sources)):
        if engine == "dask":
            raise UsageError("--engine dask needs parquet: fleet dataset addresses",
                             hint="export the runs with `rundiff export`, or drop --engine dask")
        yield None
        return
    from ..engines.runset import spike_rule
    from ..fleet.pushdown import enabled, load_pushed

    rule = spike_rule if spikes else None

    if engine != "dask":
        yield load_pushed(sources, spike_rule=rule) if enabled() else None
        return
    if not enabled():
        raise UsageError(f"--engine dask answers pushed-down queries; {ENV}=0 turns them off",
                         hint=f"unset {ENV}, or drop --engine dask")
    from ..fleet.pushdown_dask import DaskQueries

    with DaskQueries(args.scheduler, args.workers) as queries:
        runs = load_pushed(sources, spike_rule=rule, engine=queries)
        if runs is None:
            raise UsageError("--engine dask needs a fleet dataset with a pack",
                             hint="re-run `rundiff export` on it without --no-pack")
        yield runs


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
