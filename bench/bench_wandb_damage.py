"""W&B logs with damage read at the speed of undamaged ones: the careful path only where a check failed.

The 1,000,002-point log of bench_wandb.py (3 keys × 333,334 rows by the installed wandb, offline;
written once under bench/out/) is copied and damaged with a fixed seed — 8 bits flipped across
the file, 512 bytes zeroed, 200 random bytes inserted, 200 bytes removed, a 4 KiB region repeated,
the tail cut mid-record — and each copy is read as bench_wandb.py reads the clean log (`load_run`,
`.history()`, `.summary`: every CRC checked, every point, the summary folded), best of `repeat`,
interleaved with the clean log. Goal: every damaged copy within 2× the clean read's wall time.
Points kept and the damage notes are printed too.

Usage: python bench/bench_wandb_damage.py [--rows N] [--quick] [--repeat R]
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from damage_bench import damage_edits, time_and_report  # noqa: E402


def damaged_copies(run_dir: str, out: str, seed: int = 7) -> dict[str, str]:
    """Run folders holding damaged copies of `run_dir`'s log (files/ alongside), by damage."""
    log = glob.glob(os.path.join(run_dir, "*.wandb"))[0]
    data = open(log, "rb").read()
    edits = damage_edits(data, np.random.default_rng(seed), flip_from=7, margin=1 << 20)
    runs = {}
    for i, (name, blob) in enumerate(edits.items()):
        folder = os.path.join(out, f"damaged-{i}", os.path.basename(run_dir))
        if not os.path.isdir(folder):
            shutil.copytree(run_dir, folder, ignore=shutil.ignore_patterns("*.wandb"))
        with open(os.path.join(folder, os.path.basename(log)), "wb") as fh:
            fh.write(blob)
        old = time.time() - 86400
        os.utime(os.path.join(folder, os.path.basename(log)), (old, old))  # not a live run
        runs[name] = folder
    return runs


def read(run_dir: str):
    from rundiff_core.resolve import load_run

    run = load_run(run_dir)
    history = run.history()
    _ = run.summary
    return run, history


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=333_334)
    ap.add_argument("--quick", action="store_true", help="33,334 rows")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    rows = 33_334 if args.quick else args.rows
    sys.path.insert(0, ROOT)
    sys.path.insert(0, HERE)
    from bench_wandb import ensure_run

    clean_dir = ensure_run(rows)
    runs = {"clean": clean_dir, **damaged_copies(clean_dir, os.path.join(HERE, "out", f"wandb-damage-{rows}"))}
    size = os.path.getsize(glob.glob(os.path.join(clean_dir, "*.wandb"))[0])
    return time_and_report(runs, read, lambda note: "byte" in note or "exit record" in note,
                           args.repeat, f"log: {clean_dir} ({size / 1e6:.1f} MB, {{points:,}} "
                           "points); best of {repeat}, load_run + history() + summary, in process")

if __name__ == "__main__":
    raise SystemExit(main())
