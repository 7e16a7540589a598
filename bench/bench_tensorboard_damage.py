"""TensorBoard event files with damage read at the speed of undamaged ones: the search only where a
check failed.

The 1,000,000-event log of bench_tensorboard.py (3 tags, written once by tensorboardX's
SummaryWriter, cached under bench/out/tb-N/) is copied and damaged with a fixed seed — 8 bits
flipped across the file, 512 bytes zeroed, 200 random bytes inserted, 200 bytes removed, a 4 KiB
region repeated, the tail cut mid-record — and each copy is read as bench_tensorboard.py reads the
clean log (`load_run("tb:RUN").history()`: both CRCs of every record checked, every point), best
of `repeat`, interleaved with the clean log. Goal: every damaged copy within 2× the clean read's
wall time. Points kept and the damage notes are printed too.

Usage: python bench/bench_tensorboard_damage.py [--events N] [--quick] [--repeat R]
"""

from __future__ import annotations

import argparse
import glob
import logging
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from damage_bench import damage_edits, time_and_report  # noqa: E402


def damaged_copies(run_dir: str, out: str, seed: int = 7) -> dict[str, str]:
    """Run folders holding damaged copies of `run_dir`'s event file, by damage."""
    (log,) = glob.glob(os.path.join(run_dir, "events.out.tfevents.*"))
    data = open(log, "rb").read()
    edits = damage_edits(data, np.random.default_rng(seed), margin=len(data) // 8)
    runs = {}
    for i, (name, blob) in enumerate(edits.items()):
        folder = os.path.join(out, f"damaged-{i}", "run")
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, os.path.basename(log))
        if not os.path.isfile(path) or open(path, "rb").read() != blob:
            with open(path, "wb") as fh:
                fh.write(blob)
        runs[name] = folder
    return runs


def read(run_dir: str):
    from rundiff_core.resolve import load_run

    run = load_run(f"tb:{run_dir}")
    return run, run.history()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--quick", action="store_true", help="100,000 events")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    events = 100_000 if args.quick else args.events
    sys.path.insert(0, ROOT)
    sys.path.insert(0, HERE)
    from bench_tensorboard import write_log

    # each damaged read logs one warning per damaged stretch; the notes are printed below
    logging.getLogger("rundiff_adapters.tensorboard").setLevel(logging.ERROR)
    clean_dir = os.path.join(HERE, "out", f"tb-{events}", "run")
    if not os.path.isdir(clean_dir):
        os.makedirs(os.path.dirname(clean_dir), exist_ok=True)
        print(f"writing {events:,} scalar events with tensorboardX to {clean_dir} (cached) …", flush=True)
        write_log(clean_dir, events)
    runs = {"clean": clean_dir,
            **damaged_copies(clean_dir, os.path.join(HERE, "out", f"tb-damage-{events}"))}
    size = os.path.getsize(glob.glob(os.path.join(clean_dir, "events.out.tfevents.*"))[0])
    return time_and_report(runs, read, lambda note: "byte" in note, args.repeat,
                           f"log: {clean_dir} ({size / 1e6:.1f} MB, {{points:,}} points); best of "
                           "{repeat}, load_run + history(), in process")

if __name__ == "__main__":
    raise SystemExit(main())
