"""Benchmark `rundiff trajectories` on two exports of 5,000 tasks × 40 messages (not a test).

    python bench/bench_trajectories.py [--tasks 5000] [--messages 40] [--keep DIR]

Generates the exports (not timed), then runs the real CLI in a child process and prints its wall
time and peak RSS, followed by an in-process breakdown (load A, load B, diff, write).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "trajectories"))

import trajgen  # noqa: E402


def generate(folder: Path, tasks: int, messages: int) -> tuple[Path, Path]:
    a, b = folder / "a.json", folder / "b.jsonl"
    if not a.exists() or not b.exists():
        trajgen.write_export(a, trajgen.big_export(tasks, messages, seed=1, pass_rate=0.45))
        trajgen.write_export(b, trajgen.big_export(tasks, messages, seed=2, pass_rate=0.6), style="jsonl")
    return a, b


def run_cli(a: Path, b: Path, out: Path) -> tuple[float, float, float, str]:
    """Wall seconds, CPU seconds and peak RSS (MiB) of `rundiff trajectories a b` (fresh process)."""
    cmd = [sys.executable, "-m", "rundiff_core", "trajectories", str(a), str(b), "--out", str(out)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"rundiff failed ({proc.returncode}): {proc.stderr}")
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, proc.stdout  # maxrss: KiB


def breakdown(a: Path, b: Path, out: Path) -> dict[str, tuple[float, float]]:
    from rundiff_core.commands.trajectories import load_trajectory_run
    from rundiff_core.trajectories import diff_pair, write_outputs

    times: dict[str, tuple[float, float]] = {}

    def timed(label: str, fn):  # noqa: ANN001, ANN202 - bench helper
        w, c = time.perf_counter(), time.process_time()
        result = fn()
        times[label] = (time.perf_counter() - w, time.process_time() - c)
        return result

    ra = timed("load A (json)", lambda: load_trajectory_run(str(a)))
    rb = timed("load B (jsonl)", lambda: load_trajectory_run(str(b)))
    ra.label, rb.label = "A", "B"
    pair = timed("diff", lambda: diff_pair(ra, rb))
    timed("write outputs", lambda: write_outputs(str(out), [ra, rb], [pair], samples=1))
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=5000)
    parser.add_argument("--messages", type=int, default=40)
    parser.add_argument("--keep", help="reuse/keep generated exports in this folder")
    args = parser.parse_args()
    tmp = None if args.keep else tempfile.TemporaryDirectory(prefix="rundiff-bench-")
    folder = Path(args.keep or tmp.name)
    folder.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    a, b = generate(folder, args.tasks, args.messages)
    gen = time.perf_counter() - t
    with open(a) as fh:
        n_msgs = sum(len(r["messages"]) for r in json.load(fh)["records"]) // args.tasks
    size = (os.path.getsize(a) + os.path.getsize(b)) / 2**20
    print(f"exports: 2 × {args.tasks} tasks × ~{n_msgs} messages, {size:.0f} MiB total "
          f"(generated in {gen:.1f}s, not timed)")
    wall, cpu, peak, stdout = run_cli(a, b, folder / "out-cli")
    print(f"rundiff trajectories (CLI, fresh process): {wall:.2f}s wall, {cpu:.2f}s CPU, "
          f"peak RSS {peak:.0f} MiB (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")
    print("  " + "\n  ".join(stdout.strip().splitlines()[:3]))
    print("in-process breakdown (wall / CPU):")
    for phase, (w, c) in breakdown(a, b, folder / "out-inproc").items():
        print(f"  {phase:<16} {w:6.2f}s / {c:6.2f}s")
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
