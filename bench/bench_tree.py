"""`rundiff ls` on a downloaded tree of 1,000 run folders (issue 31's target: under 3 s).

The tree holds what such folders commonly hold, in several kinds (a CSV log and its config, a
JSON-lines log, a text log beside its params, a Keras history, one result file), under
`runs/<group>/<run>/`. Timed as a fresh process (start-up included), best of `--repeat`, with
`--no-points` (listing) and without it (every history read). Not a test: it prints the numbers.

    python bench/bench_tree.py [--runs 1000] [--repeat 3] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "out", "tree")
TARGET_S = 3.0


def write_tree(root: str, runs: int) -> None:
    """`runs` run folders of five kinds, 50 epochs each (written once, reused)."""
    stamp = os.path.join(root, f".written-{runs}")
    if os.path.exists(stamp):
        return
    for i in range(runs):
        folder = os.path.join(root, "runs", f"group{i % 20:02d}", f"run{i:04d}")
        os.makedirs(folder, exist_ok=True)
        kind = i % 5
        lr = 10 ** -(1 + i % 4)
        if kind == 0:
            with open(os.path.join(folder, "metrics.csv"), "w") as fh:
                fh.write("epoch,loss,acc\n")
                fh.writelines(f"{e},{1 / (e + 1):.5f},{e / 50:.4f}\n" for e in range(50))
            with open(os.path.join(folder, "config.yaml"), "w") as fh:
                fh.write(f"lr: {lr}\nbatch_size: 32\n")
        elif kind == 1:
            with open(os.path.join(folder, "log.jsonl"), "w") as fh:
                fh.writelines(json.dumps({"step": e, "loss": 1 / (e + 1)}) + "\n" for e in range(50))
        elif kind == 2:
            with open(os.path.join(folder, "train.log"), "w") as fh:
                fh.writelines(f"epoch {e} | loss {1 / (e + 1):.5f} | acc {e / 50:.4f}\n"
                              for e in range(50))
            with open(os.path.join(folder, "params.json"), "w") as fh:
                json.dump({"lr": lr, "dropout": 0.1}, fh)
        elif kind == 3:
            with open(os.path.join(folder, "history.json"), "w") as fh:
                json.dump({"loss": [1 / (e + 1) for e in range(50)],
                           "val_loss": [1.1 / (e + 1) for e in range(50)]}, fh)
        else:
            with open(os.path.join(folder, "progress.csv"), "w") as fh:
                fh.write("step,reward\n")
                fh.writelines(f"{e * 100},{e * 0.5:.3f}\n" for e in range(50))
            with open(os.path.join(folder, "results.json"), "w") as fh:
                json.dump({"final_reward": 24.5, "episodes": 50}, fh)
    open(stamp, "w").close()


def timed(argv: list[str], repeat: int) -> tuple[float, str]:
    best, out = float("inf"), ""
    for _ in range(repeat):
        t0 = time.perf_counter()
        proc = subprocess.run(argv, capture_output=True, text=True, check=False)
        best = min(best, time.perf_counter() - t0)
        out = proc.stdout if proc.returncode == 0 else proc.stderr
    return best, out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="200 runs, one repeat")
    args = ap.parse_args()
    runs, repeat = (200, 1) if args.quick else (args.runs, args.repeat)
    root = os.path.join(OUT, f"r{runs}")
    write_tree(root, runs)
    rundiff = os.path.join(os.path.dirname(sys.executable), "rundiff")
    for label, extra in (("ls --no-points", ["--no-points"]), ("ls (every history)", [])):
        seconds, out = timed([rundiff, "ls", root, "--format", "json", *extra], repeat)
        listed = len(json.loads(out)) if out.lstrip().startswith("[") else 0
        goal = "" if extra else f" (goal < {TARGET_S:g} s: {'met' if seconds < TARGET_S else 'MISSED'})"
        print(f"{label:22s} {runs} run folders: {seconds:.2f} s, {listed} runs listed{goal}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
