"""`rundiff rank` over 1,000 runs × 2 metrics × 5,000 steps (journal inputs), loading included.

Target: under 10 s on the 2-core machine. Prints the split between loading and ranking.
Usage: python bench/bench_rank.py [--runs N] [--steps N] [--quick]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def generate(root: str, runs: int, steps: int) -> None:
    rng = np.random.default_rng(0)
    s = np.arange(steps)
    for i in range(runs):
        cfg, seed = i // 5, i % 5  # 200 configs × 5 seeds
        d = os.path.join(root, f"cfg-{cfg:03d}", f"seed-{seed}")
        os.makedirs(d, exist_ok=True)
        loss = 0.5 + 0.001 * cfg + 2 * np.exp(-s / 800) + rng.normal(0, 0.01, steps)
        acc = 0.9 - loss / 5
        lines = [f'{{"step": {a}, "loss": {b:.6f}, "eval/accuracy": {c:.6f}}}\n' for a, b, c in zip(s, loss, acc, strict=True)]
        with open(os.path.join(d, "metrics.jsonl"), "w") as fh:
            fh.writelines(lines)
        with open(os.path.join(d, "config.yaml"), "w") as fh:
            fh.write(f"lr: {1e-4 * (1 + cfg)}\nseed: {seed}\nwidth: 256\n")
        with open(os.path.join(d, "final.json"), "w") as fh:
            fh.write('{"status": "finished"}')


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--steps", type=int, default=5000)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    runs, steps = (100, 1000) if args.quick else (args.runs, args.steps)
    root = os.path.join(HERE, "out", f"rank-{runs}x{steps}")
    if not os.path.exists(os.path.join(root, ".done")):
        print(f"generating {runs} runs × {steps} steps under {root} …")
        generate(root, runs, steps)
        open(os.path.join(root, ".done"), "w").close()
    sys.path.insert(0, os.path.dirname(HERE))
    from rundiff_core.engines.rank import run_rank
    from rundiff_core.engines.runset import load_sources

    c0 = time.process_time()
    t0 = time.perf_counter()
    loaded = load_sources([f"journal:{root}"], progress=False)
    for r in loaded:
        r.history()
    t1 = time.perf_counter()
    c1 = time.process_time()
    result = run_rank(loaded, metrics=["eval/accuracy", "loss"])
    t2 = time.perf_counter()
    c2 = time.process_time()
    total = t2 - t0
    print(f"runs: {len(loaded)}  groups: {result.n_groups}  points/run: {2 * steps}")
    print(f"load: {t1 - t0:.2f} s  rank: {t2 - t1:.2f} s  total: {total:.2f} s "
          f"(target < 10 s) — {'MET' if total < 10 else 'NOT MET'}")
    print(f"(CPU time: load {c1 - c0:.2f} s, rank {c2 - c1:.2f} s — wall > CPU means the machine is busy)")
    print(f"best on eval/accuracy: {result.metrics[0].best}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
