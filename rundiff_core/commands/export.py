"""`rundiff export SRC… -o DATASET/` — a fleet of runs from any trackers into one Parquet dataset.

Exit codes: 0 every run exported; 1 the dataset was written but some runs (or inputs) failed —
see the errors table; 2 usage or input error (nothing exported).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ..render import dumps
from ..render.formats import emit, format_choices

if TYPE_CHECKING:
    from ..cli import CommandHost
    from ..fleet import ExportSummary


def add_parser(sub: CommandHost) -> None:
    p = sub.add_parser(
        "export",
        help="export runs from any trackers into one Hive-partitioned Parquet dataset",
        description="Export every run the addresses name into a Parquet dataset (points, runs and "
        "errors tables; schema in docs/fleet.md). Re-running updates it incrementally. "
        "Read it back with parquet:DATASET, DuckDB, pandas or pyarrow.",
    )
    p.add_argument("sources", nargs="+", metavar="SRC",
                   help="addresses to export (paths, journal:PATH, wandb:ENTITY/PROJECT, …)")
    p.add_argument("-o", "--output", required=True, metavar="DATASET",
                   help="dataset folder (created, or updated when it is one)")
    p.add_argument("--engine", choices=("local", "dask"), default="local",
                   help="local: a process pool on this machine (default); dask: a Dask cluster")
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="local: processes (0 or 1 = in this process; default min(4, cores)); "
                   "dask without --scheduler: workers of the LocalCluster started")
    p.add_argument("--scheduler", default=None, metavar="ADDR",
                   help="Dask scheduler address (tcp://HOST:8786); default: start a LocalCluster")
    p.add_argument("--write-in", choices=("client", "workers"), default=None,
                   help="dask: who writes the partitions (default client; 'workers' needs the "
                   "dataset on a filesystem every worker shares)")
    p.add_argument("--full", action="store_true",
                   help="ignore what the dataset holds and rewrite every run")
    p.add_argument("--prune", action="store_true",
                   help="drop runs that no input lists any more")
    p.add_argument("--no-pack", dest="pack", action="store_false",
                   help="keep no packed copy of the points (_pack/, which makes loading runs through "
                   "parquet: 1.3-1.7x faster for twice the points' disk space) and delete an "
                   "existing one")
    bar = p.add_mutually_exclusive_group()
    bar.add_argument("--progress", dest="progress", action="store_true", default=None,
                     help="show a progress bar (default: only on a terminal)")
    bar.add_argument("--no-progress", dest="progress", action="store_false")
    p.add_argument("--format", choices=format_choices("export", ("md", "json")), default="md",
                   help="summary format")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..fleet import export_fleet

    summary = export_fleet(
        args.sources, args.output, engine=args.engine, workers=args.workers,
        scheduler=args.scheduler, write_in=args.write_in, full=args.full, prune=args.prune,
        progress=args.progress, pack=args.pack,
    )
    if emit("export", args.format, summary.to_dict):
        pass
    elif args.format == "json":
        print(dumps(summary.to_dict()))
    else:
        print(render_summary(summary), end="")
    return 1 if summary.failures else 0


def render_summary(s: ExportSummary) -> str:
    """The end-of-export summary: outcomes, speed, size, and failures grouped by reason."""
    mb = s.dataset_bytes / 1e6
    lines = [
        f"exported {s.runs_seen} run(s) from {len(s.inputs)} input(s) to {s.dataset} "
        f"[{s.engine}, {_workers(s.workers)}]",
        f"  new {s.new} · updated {s.updated} · unchanged {s.unchanged} · "
        f"skipped {s.skipped} (not changed since last export) · failed {s.failed}"
        + (f" · pruned {s.pruned}" if s.pruned else ""),
        f"  wrote {s.points_written:,} points in {s.seconds:.1f}s "
        f"({s.runs_per_second:,.1f} runs/s, {s.points_per_second:,.0f} points/s)",
        f"  dataset: {s.runs_in_dataset} runs, {s.points_in_dataset:,} points, {mb:,.1f} MB",
    ]
    if s.pack_bytes:
        lines.append(f"  pack: {s.pack_bytes / 1e6:,.1f} MB written (_pack/: faster parquet: "
                     "reads; --no-pack to go without)")
    if s.pack_problem:
        lines.append(f"  pack not written ({s.pack_problem}): parquet: reads the partitions, "
                     "slower but complete")
    if s.failures:
        lines.append(f"  {s.failed} run(s) and {s.inputs_failed} input(s) failed "
                     "(errors table: errors/part-0.parquet):")
        for reason, n in s.reasons()[:10]:
            lines.append(f"    {n} × {reason}")
        if len(s.reasons()) > 10:
            lines.append(f"    … and {len(s.reasons()) - 10} other reason(s)")
    return "\n".join(lines) + "\n"


def _workers(n: int) -> str:
    return "in-process" if not n else f"{n} worker{'s' if n != 1 else ''}"
