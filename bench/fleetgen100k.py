"""Generate a fleet dataset of many synthetic runs through the writer `rundiff export` uses, in
parallel, without writing any run folder first.

    python bench/fleetgen100k.py OUT [--runs 100000] [--steps 500] [--workers 2] [--segments N]

Each worker process exports a contiguous shard of bench/synthetic_fleet.py's runs (configs of 5
declared seed siblings, `loss` and `eval/accuracy` at every step) with the export's own per-run
code — `rundiff_core.fleet.worker.export_run`: load the run, fingerprint it, hash its points,
build its runs-table row (redacted), `writer.write_points` its partition — and streams the same
points into one pack segment of its own (`pack_writer.SegmentWriter`, which stores the segment's facts
beside it as `rundiff export` does). The driver holds the dataset lock, then writes the runs and
errors tables and the manifest with `export._finish`. The result is a dataset `rundiff export`
recognises and updates (its segments are the pack; at most 8, so none is compacted on the next
export), read by `parquet:` and the pushed-down commands like any other.

What it prints: the time, CPU (this process and its workers) and the points per second.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import math
import os
import resource
import shutil
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)


def input_name(runs: int, steps: int) -> str:
    """The runs' `input` (and `project`) in the runs table: the same in every shard."""
    return f"synthetic:{runs}x{steps}"


def build_shard(root: str, runs: int, steps: int, lo: int, hi: int, at: _dt.datetime
                ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int, int]:
    """Export runs lo..hi-1 into `root` (partitions and one pack segment with its facts):
    (runs-table rows, failures as export_run reports them, points written, bytes written)."""
    from synthetic_fleet import SyntheticFleet

    from rundiff_core.fleet import writer
    from rundiff_core.fleet.pack_writer import SegmentWriter
    from rundiff_core.fleet.worker import RunTask, export_run, register_local_source

    source = SyntheticFleet(runs, steps)
    token = register_local_source(source)  # redacted, as export does with a RunSource
    name = input_name(runs, steps)
    cache: dict[str, Any] = {}
    rows: list[dict[str, Any]] = []
    failures: list[dict[str, Any]] = []
    points = size = 0
    with SegmentWriter(root) as segment:
        for i in range(lo, hi):
            task = RunTask(name, source.ref(i), token)
            # write_root=None: the points come back, as the Dask engine's client-side writes do
            res = export_run(task, {}, write_root=None, exported_at=at, cache=cache)
            if res.outcome != "new" or res.row is None:
                failures.append({"address": res.address, "run_uid": res.run_uid,
                                 **(res.error or {"stage": "?", "error_type": res.outcome,
                                                   "message": ""})})
                continue
            size += writer.write_points(root, res.source or "", res.run_uid or "", res.points)
            if res.points is not None:
                segment.add(res.run_uid or "", res.points, res.row["content_hash"])
            points += res.n_points
            rows.append(res.row)
    return rows, failures, points, size + segment.size


def generate(root: str, runs: int, steps: int, workers: int = 2, segments: int | None = None,
             progress: bool = True) -> dict[str, Any]:
    """Write the dataset at `root` (a new or empty folder): what was done and what it cost."""
    from rundiff_core.fleet import export, writer
    from rundiff_core.fleet.pack_writer import MAX_SEGMENTS

    root = os.path.abspath(root)
    if os.path.isdir(root) and os.listdir(root):
        raise SystemExit(f"{root} is not empty (give a new folder, or --force to replace it)")
    shards = segments or min(MAX_SEGMENTS, max(workers, math.ceil(runs / 12_500)))
    bounds = [(runs * k // shards, runs * (k + 1) // shards) for k in range(shards)]
    at = _dt.datetime.now(_dt.UTC).replace(microsecond=0)
    started = time.perf_counter()
    cpu0 = os.times()
    writer.prepare(root)
    summary = export.ExportSummary(dataset=root, engine=f"bench/fleetgen100k.py ({workers} "
                                   "processes)", workers=workers,
                                   inputs=[input_name(runs, steps)])
    rows: dict[str, dict[str, Any]] = {}
    with writer.DatasetLock(root):
        with ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn")) as pool:
            futures = [pool.submit(build_shard, root, runs, steps, lo, hi, at)
                       for lo, hi in bounds if hi > lo]
            for done, fut in enumerate(futures, 1):
                got, failures, points, size = fut.result()
                for row in got:
                    rows[row["run_uid"]] = row
                summary.new += len(got)
                summary.failed += len(failures)
                summary.points_written += points
                summary.bytes_written += size
                summary.failures.extend(
                    export._failure(summary.inputs[0], at=at, address=f.get("address"),
                                    run_uid=f.get("run_uid"), stage=f.get("stage", "?"),
                                    error_type=f.get("error_type", "Error"),
                                    message=f.get("message", "")) for f in failures)
                if progress:
                    print(f"  shard {done}/{len(futures)}: {len(rows):,} runs "
                          f"({time.perf_counter() - started:.0f} s)", file=sys.stderr, flush=True)
        summary.runs_seen = len(rows) + summary.failed
        tables = time.perf_counter()
        export._finish(root, rows, summary, started, pack=None)  # runs, errors, manifest
        tables = time.perf_counter() - tables
    wall = time.perf_counter() - started
    cpu1 = os.times()
    own = cpu1.user - cpu0.user + cpu1.system - cpu0.system
    children = (cpu1.children_user - cpu0.children_user + cpu1.children_system
                - cpu0.children_system)
    peak_child = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20
    peak_self = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    return {"root": root, "runs": len(rows), "failed": summary.failed,
            "points": summary.points_written, "segments": shards, "workers": workers,
            "wall": wall, "cpu_driver": own, "cpu_workers": children,
            "tables_wall": tables, "peak_gib_driver": peak_self, "peak_gib_worker": peak_child,
            "dataset_bytes": summary.dataset_bytes}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", help="the dataset folder (new or empty)")
    ap.add_argument("--runs", type=int, default=100_000)
    ap.add_argument("--steps", type=int, default=500, help="steps per run (2 metrics each)")
    ap.add_argument("--workers", type=int, default=2, help="processes")
    ap.add_argument("--segments", type=int, default=None,
                    help="pack segments = shards (default: 12,500 runs each, 2 to 8)")
    ap.add_argument("--force", action="store_true", help="replace OUT when it exists")
    args = ap.parse_args()
    if args.force and os.path.exists(args.out):
        shutil.rmtree(args.out)
    got = generate(args.out, args.runs, args.steps, args.workers, args.segments)
    print(f"wrote {got['runs']:,} runs, {got['points']:,} points ({got['failed']} failed) to "
          f"{got['root']} in {got['wall']:.1f} s wall "
          f"({got['points'] / got['wall']:,.0f} points/s); CPU {got['cpu_workers']:.1f} s in "
          f"{got['workers']} workers + {got['cpu_driver']:.1f} s driver "
          f"(runs/errors tables + manifest {got['tables_wall']:.1f} s); {got['segments']} pack "
          f"segments; peak RSS {got['peak_gib_worker']:.2f} GiB a worker, "
          f"{got['peak_gib_driver']:.2f} GiB driver; {got['dataset_bytes'] / 2**30:.2f} GiB "
          "on disk")
    return 1 if got["failed"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
