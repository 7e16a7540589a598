"""`rundiff rank` and `rundiff report` over growing fleets: 100, 1,000, 10,000 (and 100,000) runs of
2 metrics × 5,000 steps, through `parquet:` (a fleet dataset written by `rundiff export`; the
queries pushed down to DuckDB, fleet/pushdown.py) and, up to 10,000 runs, through `parquet:` with
`--no-pushdown` (every history loaded, "parquet-mem") and `journal:` (the run folders themselves);
"parquet-dask" runs the pushed-down queries with `--engine dask`.

Above 10,000 runs the dataset is exported from runs generated in memory (bench/synthetic_fleet.py,
the same shape) instead of journal folders. `rundiff export` stores each pack segment's facts
(fleet/facts.py) as it writes it; a dataset exported before that gets them on its next export.
Each command runs as a fresh process (start-up included), as a user runs it; the table gives wall
time, CPU time (user + sys) and peak RSS per size, then the growth fitted between the two largest
sizes (time ∝ runs^k). Inputs are generated once and cached under bench/out/scale-N/.
Targets (issue "Scale"): 10,000 runs ranked through parquet: in under 10 s; 100,000 in under 60 s
with peak memory under 4 GiB.
`--commands` adds `compare` (every run an arm's seed, against the one with the fewest steps) and
`watch` (`--once`, a first poll: every point is new; `watch-again`: a second poll, nothing new).
Usage: python bench/bench_scale.py [--sizes 100,1000,10000] [--steps 5000] [--quick]
       [--backends parquet,parquet-mem,journal,parquet-dask]
       [--commands rank,report,compare,watch,watch-again]
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
JOURNAL_MAX = 10_000
TARGETS = {("rank", "parquet", 10_000): (10.0, None), ("rank", "parquet", 100_000): (60.0, 4.0)}


def generate_journals(root: str, runs: int, steps: int) -> None:
    """`runs` journal folders: configs of 5 seeds each, loss and eval/accuracy every step."""
    rng = np.random.default_rng(0)
    s = np.arange(steps)
    for i in range(runs):
        cfg, seed = i // 5, i % 5
        d = os.path.join(root, f"cfg-{cfg:05d}", f"seed-{seed}")
        os.makedirs(d, exist_ok=True)
        loss = 0.5 + 1e-4 * (cfg % 97) + 2 * np.exp(-s / 800) + rng.normal(0, 0.01, steps)
        acc = 0.9 - loss / 5
        body = "".join(f'{{"step": {a}, "loss": {b:.6f}, "eval/accuracy": {c:.6f}}}\n'
                       for a, b, c in zip(s.tolist(), loss.tolist(), acc.tolist(), strict=True))
        with open(os.path.join(d, "metrics.jsonl"), "w") as fh:
            fh.write(body)
        with open(os.path.join(d, "config.yaml"), "w") as fh:
            fh.write(f"lr: {1e-4 * (1 + cfg % 97)}\nseed: {seed}\nwidth: {128 + cfg // 97}\n")
        with open(os.path.join(d, "final.json"), "w") as fh:
            fh.write('{"status": "finished"}')


def export_synthetic(dataset: str, runs: int, steps: int) -> None:
    """Export `runs` synthetic runs (bench/synthetic_fleet.py: the journals' shape, generated in
    memory) straight into a fleet dataset: 10⁹ points as journal files first would take hours."""
    sys.path.insert(0, HERE)
    from synthetic_fleet import SyntheticFleet

    from rundiff_core.fleet import export_fleet

    summary = export_fleet([SyntheticFleet(runs, steps)], dataset, workers=0, progress=False)
    if summary.failed or summary.pack_problem:
        raise SystemExit(f"export failed: {summary.failures[:3]} {summary.pack_problem}")


def ensure_inputs(runs: int, steps: int) -> tuple[str | None, str]:
    base = os.path.join(HERE, "out", f"scale-{runs}x{steps}")
    journals, dataset = os.path.join(base, "runs"), os.path.join(base, "fleet")
    if runs > JOURNAL_MAX:  # no journal backend at this size: export generated runs directly
        if not os.path.exists(os.path.join(base, ".fleet")):
            print(f"  exporting {runs:,} generated runs × {steps:,} steps to {dataset} "
                  "(cached) …", flush=True)
            export_synthetic(dataset, runs, steps)
            open(os.path.join(base, ".fleet"), "w").close()
        return None, dataset
    if not os.path.exists(os.path.join(base, ".journals")):
        print(f"  generating {runs:,} journal runs × {steps:,} steps (cached) …", flush=True)
        generate_journals(journals, runs, steps)
        open(os.path.join(base, ".journals"), "w").close()
    if not os.path.exists(os.path.join(base, ".fleet")):
        print(f"  exporting them to {dataset} (cached) …", flush=True)
        subprocess.run([sys.executable, "-m", "rundiff_core.cli", "export", f"journal:{journals}",
                        "-o", dataset], check=True, stdout=subprocess.DEVNULL, cwd=ROOT)
        open(os.path.join(base, ".fleet"), "w").close()
    return journals, dataset


def measure(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, float, float]:
    """(wall s, cpu s, peak RSS GiB) of one fresh process; peak RSS from GNU time when present."""
    timer = ["/usr/bin/time", "-f", "%M"] if os.path.exists("/usr/bin/time") else []
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.run(timer + argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, cwd=ROOT, env=env)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    ok = (0, 1) if "watch" in argv else (0,)  # watch --once: 1 = alerts raised
    if proc.returncode not in ok:
        raise SystemExit(f"{' '.join(argv)} failed:\n{proc.stderr[-2000:]}")
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    rss = math.nan
    if timer:
        last = proc.stderr.strip().splitlines()[-1]
        rss = int(last) / 2**20 if last.isdigit() else math.nan
    return wall, cpu, rss


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100,1000,10000", help="e.g. 100,1000,10000,100000")
    ap.add_argument("--steps", type=int, default=5000)
    ap.add_argument("--quick", action="store_true", help="sizes 100,1000 with 1,000 steps")
    ap.add_argument("--backends", default="parquet,parquet-mem,journal",
                    help="which of parquet (pushed down), parquet-mem, journal, parquet-dask "
                         "(pushed down, --engine dask) to run")
    ap.add_argument("--commands", default="rank,report",
                    help="which of rank, report, compare, watch, watch-again to run")
    args = ap.parse_args()
    commands = args.commands.split(",")
    sizes = [100, 1000] if args.quick else [int(x) for x in args.sizes.split(",")]
    steps = 1000 if args.quick else args.steps
    rows: dict[tuple[str, str, int], tuple[float, float, float]] = {}
    for n in sizes:
        print(f"size {n:,} runs", flush=True)
        journals, dataset = ensure_inputs(n, steps)
        backends = [("parquet", f"parquet:{dataset}", [])]  # pushed down to DuckDB
        if n <= JOURNAL_MAX:
            backends.append(("parquet-mem", f"parquet:{dataset}", ["--no-pushdown"]))
            backends.append(("journal", f"journal:{journals}", []))
        # the same queries on Dask (a LocalCluster of min(4, cores) threads started per command)
        backends.append(("parquet-dask", f"parquet:{dataset}", ["--engine", "dask"]))
        for backend, address, extra in backends:
            if backend not in args.backends.split(","):
                continue
            for command in commands:
                cli = [sys.executable, "-m", "rundiff_core.cli"]
                env = None
                if command.startswith("watch"):  # its state in a fresh cache dir
                    argv = [*cli, "watch", address, "--once", "--format", "json", *extra]
                    env = {**os.environ, "RUNDIFF_CACHE_DIR": tempfile.mkdtemp(prefix="scale-")}
                    if command == "watch-again":
                        measure(argv, env)  # the first poll, not measured
                else:
                    argv = [*cli, command, address, "--metric", "loss", "--metric",
                            "eval/accuracy", *extra]
                if command == "report":
                    argv += ["-o", os.path.join(HERE, "out", f"scale-report-{n}-{backend}.md")]
                if command == "compare":
                    argv += ["--format", "json"]
                rows[(command, backend, n)] = got = measure(argv, env)
                print(f"  {command:6s} {backend:8s} {got[0]:8.2f} s wall {got[1]:8.2f} s cpu "
                      f"{got[2]:6.2f} GiB peak", flush=True)
    print("\n| command | backend | runs | wall s | cpu s | peak GiB | target |")
    print("|---|---|---:|---:|---:|---:|---|")
    for (command, backend, n), (wall, cpu, rss) in rows.items():
        target = TARGETS.get((command, backend, n))
        verdict = ""
        if target:
            ok = wall < target[0] and (target[1] is None or rss < target[1])
            verdict = (f"< {target[0]:g} s" + (f", < {target[1]:g} GiB" if target[1] else "")
                       + (" MET" if ok else " NOT MET"))
        print(f"| {command} | {backend} | {n:,} | {wall:.2f} | {cpu:.2f} | {rss:.2f} | {verdict} |")
    print("\ngrowth (time ∝ runs^k between the two largest sizes of each row):")
    for command in commands:
        for backend in ("parquet", "parquet-mem", "journal", "parquet-dask"):
            pts = sorted((n, rows[(c, b, n)][0]) for (c, b, n) in rows if c == command and b == backend)
            if len(pts) >= 2:
                (n1, t1), (n2, t2) = pts[-2], pts[-1]
                k = math.log(t2 / t1) / math.log(n2 / n1)
                print(f"  {command} via {backend}: k = {k:.2f} ({n1:,} → {n2:,} runs)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
