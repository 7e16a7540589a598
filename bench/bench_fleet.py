"""Fleet export throughput, then `parquet:` vs `journal:` for loading the same runs.

1. Generate journal runs (default 2,000 runs × 3 metrics × 2,000 steps = 12M points) under
   bench/out/ (kept between runs; regenerated when the size changes).
2. `rundiff export` them with the local engine (a process pool): runs/s, points/s, dataset size.
   A second export of the unchanged inputs shows the incremental path.
3. Load 200 of those runs (20 experiment folders × 10 seeds; metadata + every point) in this
   process, through `parquet:` and through `journal:`, two ways: one address per run, and the way
   a fleet query names them (one `parquet:DATASET#address=…` filter vs one `journal:` address per
   experiment folder). The two backends are timed alternately, best of --repeat each. Prints wall
   and CPU ratios. Target: ≥ 10×. `parquet:` reads the dataset's pack (docs/fleet.md); export with
   `--no-pack`, or move `DATASET/_pack` aside and pass --keep, to measure the partitions alone.

Usage: python bench/bench_fleet.py [--quick] [--runs N] [--steps N] [--workers N] [--sample N]
                                   [--repeat N] [--keep]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

METRICS = ("loss", "lr", "grad_norm")


def write_inputs(root: str, runs: int, steps: int) -> None:
    """Journal runs in the documented format, 3 metrics logged every step (wide rows)."""
    from rundiff_core.demo import write_journal_run

    rng = np.random.default_rng(0)
    grid = np.arange(steps)
    for r in range(runs):
        path = os.path.join(root, f"exp-{r // 10:03d}", f"seed-{r % 10}")
        loss = 2.0 * np.exp(-grid / (steps / 4)) + rng.normal(0, 0.01, steps)
        gn = 1.0 + 0.05 * rng.standard_normal(steps)
        lr = 3e-4 * np.minimum(1.0, grid / (0.1 * steps + 1))
        t = 1.7e9 + 2.0 * grid
        write_journal_run(path, config={"optim": {"lr": 3e-4 * (1 + r // 10 % 5)}, "seed": r % 10,
                                        "model": {"layers": 4 + r % 3}},
                          rows=(), seed=r % 10, final={"status": "finished",
                                                       "loss": float(loss[-1])})
        with open(os.path.join(path, "metrics.jsonl"), "w") as fh:
            fh.writelines(
                f'{{"step": {i}, "loss": {loss[i]:.6f}, "lr": {lr[i]:.6g}, '
                f'"grad_norm": {gn[i]:.5f}, "time": {t[i]:.1f}}}\n'
                for i in range(steps)
            )


def dir_bytes(path: str) -> int:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="200 runs × 500 steps, 50 sampled")
    ap.add_argument("--runs", type=int, default=2000)
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--workers", type=int, default=None, help="local engine processes")
    ap.add_argument("--sample", type=int, default=200, help="runs loaded in the read comparison")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--keep", action="store_true",
                    help="reuse an existing dataset (skip the export timings)")
    args = ap.parse_args()
    if args.quick:
        args.runs, args.steps, args.sample = 200, 500, 50

    inputs = os.path.join(HERE, "out", f"fleet-inputs-{args.runs}x{args.steps}")
    stamp = os.path.join(inputs, ".complete")
    if not os.path.exists(stamp):
        shutil.rmtree(inputs, ignore_errors=True)
        print(f"writing {args.runs:,} journal runs × {len(METRICS)} metrics × {args.steps:,} steps "
              f"under {inputs} …", flush=True)
        t = time.perf_counter()
        write_inputs(inputs, args.runs, args.steps)
        open(stamp, "w").close()
        print(f"  written in {time.perf_counter() - t:.1f}s ({dir_bytes(inputs) / 1e6:,.0f} MB)")

    dataset = os.path.join(HERE, "out", f"fleet-dataset-{args.runs}x{args.steps}")
    if not (args.keep and os.path.isdir(dataset)):
        export_and_report(inputs, dataset, args)
    else:
        print(f"reusing {dataset}")
    read_comparison(dataset, args)
    return 0


def export_and_report(inputs: str, dataset: str, args: argparse.Namespace) -> None:
    from rundiff_core.fleet import export_fleet

    shutil.rmtree(dataset, ignore_errors=True)
    print("\n== export (local engine) ==", flush=True)
    s = export_fleet([inputs], dataset, engine="local", workers=args.workers, progress=None)
    points = s.points_written
    print(f"runs: {s.new} exported, {s.failed} failed, {s.workers} worker process(es)")
    print(f"time: {s.seconds:.1f}s  →  {s.runs_per_second:,.1f} runs/s, "
          f"{s.points_per_second:,.0f} points/s ({points:,} points)")
    print(f"dataset: {s.dataset_bytes / 1e6:,.1f} MB ({s.dataset_bytes / max(points, 1):.2f} "
          f"bytes/point; inputs {dir_bytes(inputs) / 1e6:,.0f} MB)")
    again = export_fleet([inputs], dataset, engine="local", workers=args.workers, progress=None)
    print(f"re-export, nothing changed: {again.seconds:.1f}s ({again.skipped} skipped, "
          f"{again.updated + again.new} rewritten)")


def timed_pair(jfn, pfn, repeat: int) -> tuple[tuple[float, float, int], tuple[float, float, int]]:
    """(best wall, best CPU, result) of each, measured alternately (journal, parquet, journal, …)
    so that a machine getting busier or quieter mid-run does not favour either side."""
    jfn(), pfn()  # warm the OS file cache, so neither backend pays cold reads
    best = {jfn: [float("inf"), float("inf"), 0], pfn: [float("inf"), float("inf"), 0]}
    for _ in range(repeat):
        for fn in (jfn, pfn):
            t, c = time.perf_counter(), time.process_time()
            n = fn()
            wall, cpu = time.perf_counter() - t, time.process_time() - c
            b = best[fn]
            b[0], b[1], b[2] = min(b[0], wall), min(b[1], cpu), n
    return tuple(best[jfn]), tuple(best[pfn])


def read_comparison(dataset: str, args: argparse.Namespace) -> int:
    from rundiff_core.fleet import read_runs
    from rundiff_core.resolve import load_run, load_runs

    rows = read_runs(dataset, columns=["run_uid", "address"]).to_pylist()
    by_address = {r["address"]: r["run_uid"] for r in rows}
    # the sample: whole experiment folders (10 seeds each), so both backends can also name them
    # with few addresses
    folders = sorted({os.path.dirname(a.split(":", 1)[1]) for a in by_address})
    folders = folders[:: max(1, len(folders) // max(1, args.sample // 10))][: max(1, args.sample // 10)]
    sample = [a for a in sorted(by_address) if os.path.dirname(a.split(":", 1)[1]) in folders]
    glob = ",".join(f"journal:{f}/*" for f in folders)

    def parquet_each() -> int:
        return sum(len(load_run(f"parquet:{dataset}#{by_address[a]}").history()) for a in sample)

    def journal_each() -> int:
        return sum(len(load_run(a).history()) for a in sample)

    def parquet_one() -> int:  # one address selecting the sample (a filter on the address column)
        return sum(len(r.history()) for r in load_runs(f"parquet:{dataset}#address={glob}"))

    def journal_folders() -> int:  # one address per experiment folder
        return sum(len(r.history()) for f in folders for r in load_runs(f"journal:{f}"))

    from rundiff_core.fleet.pack import open_pack

    packed = open_pack(dataset) is not None
    full_size = args.steps == 2000 and args.sample == 200
    print(f"\n== load {len(sample)} runs (metadata + every point; best of {args.repeat}, "
          f"alternating; parquet: {'with' if packed else 'WITHOUT'} the pack) ==")
    for label, jfn, pfn in (("one address per run", journal_each, parquet_each),
                            (f"{len(folders)} journal folders vs 1 parquet filter address",
                             journal_folders, parquet_one)):
        (jw, jc, n), (pw, pc, m) = timed_pair(jfn, pfn, args.repeat)
        assert n == m, (n, m)
        print(f"{label}:")
        print(f"  journal:  wall {jw:6.3f}s ({jw / len(sample) * 1e3:5.2f} ms/run)  "
              f"cpu {jc:6.3f}s  ({n:,} points)")
        print(f"  parquet:  wall {pw:6.3f}s ({pw / len(sample) * 1e3:5.2f} ms/run)  cpu {pc:6.3f}s")
        verdict = ("met" if jw / pw >= 10 else "NOT met") if full_size else (
            "not judged: the target is for runs of 2,000 steps × 3 metrics")
        print(f"  ratio parquet: vs journal: {jw / pw:.1f}× wall, {jc / pc:.1f}× cpu "
              f"(target ≥ 10×: {verdict})")
    rank_comparison(dataset, folders, glob, args)
    return 0


def rank_comparison(dataset: str, folders: list[str], glob: str, args: argparse.Namespace) -> None:
    """`rundiff rank` on the same runs through both backends (no target: the ranking engine's own
    work is the same on both sides, so this shows what a command gains end to end)."""
    import contextlib
    import io

    from rundiff_core.cli import main as cli

    def rank(addresses: list[str]):
        def go() -> int:
            with contextlib.redirect_stdout(io.StringIO()) as out:
                assert cli(["rank", *addresses, "--metric", "loss", "--format", "json"]) == 0
            return len(out.getvalue())
        return go

    (jw, _jc, _n), (pw, _pc, _m) = timed_pair(rank([f"journal:{f}" for f in folders]),
                                              rank([f"parquet:{dataset}#address={glob}"]),
                                              args.repeat)
    print(f"\n== rundiff rank over the same runs (best of {args.repeat}, alternating) ==")
    print(f"  journal: {jw:.2f}s   parquet: {pw:.2f}s   "
          f"→ {jw / pw:.1f}× (the ranking itself is the same work on both)")


if __name__ == "__main__":
    sys.exit(main())
