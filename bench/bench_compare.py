"""Benchmark `rundiff compare`: 200 runs × 3 metrics × 10,000 steps of journal inputs.

Prints the seconds to load every full history alone, the seconds of a whole compare (load, engine,
Markdown and JSON rendering) and the engine's share of that total; the target is that the engine
(slicing, seed statistics, trends, rendering) stays at or below 20% of the total, i.e. loading
dominates. Inputs are generated once under bench/out/compare/ (gitignored) and reused.

    .venv/bin/python bench/bench_compare.py            # 200 runs × 10,000 steps
    .venv/bin/python bench/bench_compare.py --quick    # 20 runs × 2,000 steps
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from rundiff_core.engines.arms import load_arms  # noqa: E402
from rundiff_core.engines.compare import run_compare  # noqa: E402
from rundiff_core.render import dumps  # noqa: E402
from rundiff_core.render.compare_md import render_compare_markdown  # noqa: E402

METRICS = ("train/loss", "val/loss", "knn_acc")
SEEDS = 4
TARGET_SHARE = 0.20


def generate(root: str, runs: int, steps: int) -> None:
    """`runs` journal runs as runs/SEEDS seeds per arm; arm-000/seed-0 is still running."""
    marker = os.path.join(root, ".complete")
    if os.path.exists(marker):
        return
    arms = runs // SEEDS
    grid = np.arange(steps)
    for a in range(arms):
        for s in range(SEEDS):
            rng = np.random.default_rng(a * 100 + s)
            d = os.path.join(root, f"arm-{a:03d}", f"seed-{s}")
            os.makedirs(d, exist_ok=True)
            n = steps // 3 if (a, s) == (0, 0) else steps
            floor = 0.5 + 0.002 * a
            loss = floor + 2 * np.exp(-grid / (steps / 5)) + rng.normal(0, 0.01, steps)
            val = loss + 0.05 + rng.normal(0, 0.01, steps)
            knn = 0.8 - 0.25 * loss
            t0 = 1_700_000_000.0
            with open(os.path.join(d, "metrics.jsonl"), "w") as fh:
                fh.writelines(
                    f'{{"step": {i}, "train/loss": {loss[i]:.6f}, "val/loss": {val[i]:.6f}, '
                    f'"knn_acc": {knn[i]:.6f}, "time": {t0 + i:.1f}}}\n'
                    for i in range(n)
                )
            with open(os.path.join(d, "config.yaml"), "w") as fh:
                fh.write(f"arm: {a}\nseed: {s}\nlr: 0.001\n")
            if (a, s) != (0, 0):
                with open(os.path.join(d, "final.json"), "w") as fh:
                    json.dump({"status": "finished"}, fh)
    open(marker, "w").close()


def load_all(root: str) -> tuple[list, int]:
    arms = load_arms(f"journal:{root}")
    points = 0
    for arm in arms:
        for run in arm.seeds:
            points += len(run.history())
    return arms, points


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="20 runs × 2,000 steps")
    ap.add_argument("--runs", type=int, default=None)
    ap.add_argument("--steps", type=int, default=None)
    ap.add_argument("--repeat", type=int, default=2, help="best of N (default 2)")
    args = ap.parse_args()
    runs = args.runs or (20 if args.quick else 200)
    steps = args.steps or (2_000 if args.quick else 10_000)
    root = os.path.join(HERE, "out", "compare", f"{runs}x{steps}")
    t = time.perf_counter()
    generate(root, runs, steps)
    print(f"inputs: {runs} journal runs × {len(METRICS)} metrics × {steps:,} steps under {root} "
          f"(ready in {time.perf_counter() - t:.1f}s)")

    load_alone, totals, engines = [], [], []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        _, points = load_all(root)
        load_alone.append(time.perf_counter() - t0)

        t0 = time.perf_counter()
        arms, _ = load_all(root)
        t1 = time.perf_counter()
        result = run_compare(arms)
        md = render_compare_markdown(result)
        js = dumps(result.to_dict())
        t2 = time.perf_counter()
        totals.append(t2 - t0)
        engines.append(t2 - t1)
    best = int(np.argmin(totals))
    load_s, total_s, engine_s = min(load_alone), totals[best], engines[best]
    share = engine_s / total_s
    print(f"points loaded: {points:,} ({len(arms)} arms; student {result.student.label} at step "
          f"{result.current_x:g}; {len(result.metrics)} metrics; {len(md.splitlines())} Markdown "
          f"lines, {len(js) / 1e6:.1f} MB JSON)")
    print(f"{'load alone':<28}{load_s:8.2f} s")
    print(f"{'compare (load+engine+render)':<28}{total_s:8.2f} s   ratio to load alone "
          f"{total_s / load_s:5.2f}×")
    print(f"{'engine + render':<28}{engine_s:8.2f} s   share of total {share:6.1%} "
          f"(target ≤ {TARGET_SHARE:.0%})")
    ok = share <= TARGET_SHARE
    if runs < 200 or steps < 10_000:
        print("(smaller than the target size: fixed costs weigh more; the ≤ 20% target is checked "
              "at 200 runs × 10,000 steps)")
        return 0
    print("PASS" if ok else "FAIL: the engine dominates the comparison")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
