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
GOAL = 2.0  # damaged read ≤ this × the clean read


def damaged_copies(run_dir: str, out: str, seed: int = 7) -> dict[str, str]:
    """Run folders holding damaged copies of `run_dir`'s log (files/ alongside), by damage."""
    log = glob.glob(os.path.join(run_dir, "*.wandb"))[0]
    data = open(log, "rb").read()
    n = len(data)
    rng = np.random.default_rng(seed)
    flipped = bytearray(data)
    for off in rng.integers(7, n, 8).tolist():
        flipped[off] ^= 1 << int(rng.integers(0, 8))
    at = [int(x) for x in rng.integers(1 << 20, n - (1 << 20), 4)]
    zeroed = bytearray(data)
    zeroed[at[0]:at[0] + 512] = bytes(512)
    edits = {
        "8 bits flipped": bytes(flipped),
        "512 bytes zeroed": bytes(zeroed),
        "200 bytes inserted": data[:at[1]] + rng.bytes(200) + data[at[1]:],
        "200 bytes removed": data[:at[2]] + data[at[2] + 200:],
        "4 KiB repeated": data[:at[3] + 4096] + data[at[3]:at[3] + 4096] + data[at[3] + 4096:],
        "tail cut mid-record": data[: n - 1000],
    }
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
    best = {name: 1e9 for name in runs}
    read(clean_dir)  # imports and first-touch costs go before any timing
    kept: dict[str, tuple[int, list[str]]] = {}
    for _ in range(args.repeat):
        for name, folder in runs.items():
            t = time.perf_counter()
            run, history = read(folder)
            best[name] = min(best[name], time.perf_counter() - t)
            kept[name] = (len(history), [n for n in run.fidelity if "byte" in n or "exit record" in n])
    size = os.path.getsize(glob.glob(os.path.join(clean_dir, "*.wandb"))[0])
    print(f"log: {clean_dir} ({size / 1e6:.1f} MB, {kept['clean'][0]:,} points); best of {args.repeat}, "
          "load_run + history() + summary, in process")
    below = []
    for name in runs:
        ratio = best[name] / best["clean"]
        points = kept[name][0]
        line = (f"  {name:22s} {best[name]:6.2f} s  {ratio:4.2f}× clean  points {points:,} "
                f"({points / kept['clean'][0]:.4%})")
        if name != "clean" and ratio > GOAL:
            below.append(name)
            line += f"  — over the {GOAL:g}× goal"
        print(line)
        for note in kept[name][1][:3]:
            print(f"      {note[:220]}")
    print("over goal: " + (", ".join(below) if below else "none"))
    return 1 if below else 0


if __name__ == "__main__":
    raise SystemExit(main())
