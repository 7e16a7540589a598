"""`rundiff rank`, `report`, `ablate`, `compare` and `watch` over growing fleets, as fresh processes.

Two modes:

- `--runs N` (the issue's scale test): fleets of 1,000, 10,000 and N runs of 2 metrics × 500
  steps (`--steps`), each generated straight into a fleet dataset by bench/fleetgen100k.py (the
  export's own writer, 2 processes, no run folders) and cached under bench/out/fleetgen-NxS/;
  `rank`, `report`, `ablate` and `watch` pushed down (DuckDB; `--backends parquet,parquet-dask`
  adds `--engine dask` on a LocalCluster of two worker processes). It prints each dataset's
  build time, then per command and size the wall time, CPU time (user + sys of the command's
  process and its children) and peak RSS, and the growth exponent k (time ∝ runs^k) from the
  smallest to the largest size and between neighbours.
- `--sizes` (default 100,1000,10000 × 5,000 steps): the same commands through `parquet:` pushed
  down, `parquet:` with `--no-pushdown` ("parquet-mem", every history loaded) and `journal:` (the
  run folders themselves) — sizes above 10,000 come from bench/fleetgen100k.py (no journal
  backend there).

Every command runs as a fresh process (start-up included), as a user runs it. `rundiff export`
stores each pack segment's facts (fleet/facts.py) as it writes it, and so does the generator.
Targets (issue 25): 10,000 runs ranked in ≤ 10 s; 100,000 in < 60 s with peak memory < 4 GiB.
`compare` (every run an arm's seed, against the one with the fewest steps) and `watch-again` (a
second poll, nothing new) are there too, on request.
Usage: python bench/bench_scale.py --runs 100000 [--steps 500] [--repeat 1]
       python bench/bench_scale.py [--sizes 100,1000,10000] [--steps 5000] [--quick]
       [--backends parquet,parquet-mem,journal,parquet-dask]
       [--commands rank,report,ablate,compare,watch,watch-again]
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
JOURNAL_MAX = 10_000
TARGETS = {("rank", "parquet", 10_000): (10.0, None), ("rank", "parquet", 100_000): (60.0, 4.0)}
GENERATOR_WORKERS = 2


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


def generated(runs: int, steps: int) -> str:
    """A fleet dataset of `runs` synthetic runs × `steps` steps (bench/fleetgen100k.py: the
    export's writer in 2 processes, no run folders), built once and cached."""
    base = os.path.join(HERE, "out", f"fleetgen-{runs}x{steps}")
    dataset = os.path.join(base, "fleet")
    done = os.path.join(base, ".built")
    if not os.path.exists(done):
        sys.path.insert(0, HERE)
        from fleetgen100k import generate

        print(f"  generating {runs:,} runs × {steps:,} steps into {dataset} (cached) …",
              flush=True)
        if os.path.exists(dataset):
            import shutil

            shutil.rmtree(dataset)
        got = generate(dataset, runs, steps, workers=GENERATOR_WORKERS, progress=False)
        if got["failed"]:
            raise SystemExit(f"the generator failed on {got['failed']} runs")
        with open(done, "w") as fh:
            fh.write(f"{got['wall']:.1f} s wall, {got['cpu_workers'] + got['cpu_driver']:.1f} s "
                     f"CPU ({GENERATOR_WORKERS} processes), {got['points']:,} points, "
                     f"{got['dataset_bytes'] / 2**30:.2f} GiB\n")
    with open(done) as fh:
        print(f"  dataset {runs:,} × {steps:,}: built in {fh.read().strip()}", flush=True)
    return dataset


def ensure_inputs(runs: int, steps: int) -> tuple[str | None, str]:
    base = os.path.join(HERE, "out", f"scale-{runs}x{steps}")
    journals, dataset = os.path.join(base, "runs"), os.path.join(base, "fleet")
    if runs > JOURNAL_MAX:  # no journal backend at this size: the generator writes the dataset
        return None, generated(runs, steps)
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


def command_argv(command: str, address: str, extra: list[str], n: int, backend: str
                 ) -> tuple[list[str], dict[str, str] | None]:
    """The command line of one measured command (and its environment when it needs one)."""
    cli = [sys.executable, "-m", "rundiff_core.cli"]
    metrics = ["--metric", "loss", "--metric", "eval/accuracy"]
    if command.startswith("watch"):  # its state in a fresh cache dir
        env = {**os.environ, "RUNDIFF_CACHE_DIR": tempfile.mkdtemp(prefix="scale-")}
        return [*cli, "watch", address, "--once", "--format", "json", *extra], env
    if command == "ablate":  # every other config against the first one (its 5 seeds)
        first = "*cfg-00000/*"  # generated names are cfg-NNNNN/seed-S; journal ones paths
        baseline = f"{address}#name={first}" if address.startswith("parquet:") else \
            f"{address}/cfg-00000"
        return [*cli, "ablate", "--baseline", baseline, address, *metrics, "--format", "json",
                *extra], None
    argv = [*cli, command, address, *metrics, *extra]
    if command == "report":
        argv += ["-o", os.path.join(HERE, "out", f"scale-report-{n}-{backend}.md")]
    if command == "compare":
        argv += ["--format", "json"]
    return argv, None


def growth(points: list[tuple[int, float]]) -> str:
    """k of time ∝ runs^k from the smallest to the largest size, and between neighbours."""
    points = sorted(points)
    if len(points) < 2:
        return ""

    def k(a: tuple[int, float], b: tuple[int, float]) -> float:
        return math.log(b[1] / a[1]) / math.log(b[0] / a[0])
    steps = ", ".join(f"{a[0]:,}→{b[0]:,}: {k(a, b):.2f}" for a, b in zip(points, points[1:], strict=False))
    first, last = points[0], points[-1]
    return f"k = {k(first, last):.2f} ({first[0]:,} → {last[0]:,} runs; {steps})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=None,
                    help="the scale test: 1,000, 10,000 and RUNS runs × 500 steps, generated "
                         "(bench/fleetgen100k.py); rank, report, ablate, watch pushed down")
    ap.add_argument("--sizes", default=None, help="e.g. 100,1000,10000,100000")
    ap.add_argument("--steps", type=int, default=None,
                    help="steps a run (default 500 with --runs, else 5,000)")
    ap.add_argument("--quick", action="store_true", help="sizes 100,1000 with 1,000 steps")
    ap.add_argument("--backends", default=None,
                    help="which of parquet (pushed down), parquet-mem, journal, parquet-dask "
                         "(pushed down, --engine dask on a LocalCluster of 2 worker processes) "
                         "to run (default: parquet with --runs, else parquet,parquet-mem,journal)")
    ap.add_argument("--commands", default=None,
                    help="which of rank, report, ablate, compare, watch, watch-again to run "
                         "(default: rank,report,ablate,watch with --runs, else rank,report)")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each command (best kept)")
    args = ap.parse_args()
    scale = args.runs is not None
    commands = (args.commands or ("rank,report,ablate,watch" if scale else "rank,report")).split(",")
    backends = (args.backends or ("parquet" if scale else "parquet,parquet-mem,journal")).split(",")
    if scale:
        sizes = sorted({s for s in (1_000, 10_000, args.runs) if s <= args.runs})
    elif args.quick:
        sizes = [100, 1000]
    else:
        sizes = [int(x) for x in (args.sizes or "100,1000,10000").split(",")]
    steps = args.steps or (500 if scale else 1000 if args.quick else 5000)
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start",
          flush=True)
    rows: dict[tuple[str, str, int], tuple[float, float, float]] = {}
    with contextlib.ExitStack() as stack:
        cluster = stack.enter_context(dask_cluster()) if "parquet-dask" in backends else None
        _measure_all(args, sizes, steps, scale, commands, backends, cluster, rows)
    _print_rows(rows, commands)
    return 0


@contextlib.contextmanager
def dask_cluster() -> Iterator[Any]:
    """A LocalCluster of two worker processes (one thread each) on 127.0.0.1, for every
    `--engine dask --scheduler` command of the run (its start-up is not the command's)."""
    from dask.distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None,
                      scheduler_kwargs={"dashboard_address": "127.0.0.1:0"}) as cluster:
        yield cluster


def cluster_cpu(cluster: Any) -> float:
    """User + system CPU seconds the cluster's worker processes have used so far."""
    from dask.distributed import Client

    def used() -> float:
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime + r.ru_stime

    with Client(cluster.scheduler_address, set_as_default=False) as client:
        return float(sum(client.run(used).values()))


def _measure_all(args: argparse.Namespace, sizes: list[int], steps: int, scale: bool,
                 commands: list[str], backends: list[str], cluster: Any,
                 rows: dict[tuple[str, str, int], tuple[float, float, float]]) -> None:
    for n in sizes:
        print(f"size {n:,} runs × {steps:,} steps", flush=True)
        if scale:
            journals, dataset = None, generated(n, steps)
        else:
            journals, dataset = ensure_inputs(n, steps)
        runs = [("parquet", f"parquet:{dataset}", [])]  # pushed down to DuckDB
        if journals is not None:
            runs.append(("parquet-mem", f"parquet:{dataset}", ["--no-pushdown"]))
            runs.append(("journal", f"journal:{journals}", []))
        # the same queries on Dask: the LocalCluster of two worker processes this bench started
        if cluster is not None:
            runs.append(("parquet-dask", f"parquet:{dataset}",
                         ["--engine", "dask", "--scheduler", cluster.scheduler_address]))
        for backend, address, extra in runs:
            if backend not in backends:
                continue
            for command in commands:
                best = None
                for _ in range(max(1, args.repeat)):
                    argv, env = command_argv(command, address, extra, n, backend)
                    if command == "watch-again":
                        measure(argv, env)  # the first poll, not measured
                    spent = cluster_cpu(cluster) if backend == "parquet-dask" else 0.0
                    got = measure(argv, env)
                    if backend == "parquet-dask":  # the workers' CPU is the command's too
                        got = (got[0], got[1] + cluster_cpu(cluster) - spent, got[2])
                    best = got if best is None or got[0] < best[0] else best
                assert best is not None
                rows[(command, backend, n)] = best
                print(f"  {command:11s} {backend:12s} {best[0]:8.2f} s wall {best[1]:8.2f} s cpu "
                      f"{best[2]:6.2f} GiB peak   (load {os.getloadavg()[0]:.1f})", flush=True)


def _print_rows(rows: dict[tuple[str, str, int], tuple[float, float, float]],
                commands: list[str]) -> None:
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
    print("\ngrowth (time ∝ runs^k):")
    for command in commands:
        for backend in ("parquet", "parquet-mem", "journal", "parquet-dask"):
            pts = [(n, rows[(c, b, n)]) for (c, b, n) in rows if c == command and b == backend]
            if len(pts) >= 2:
                print(f"  {command} via {backend}: wall {growth([(n, r[0]) for n, r in pts])}")
                print(f"  {' ' * len(command)}     {' ' * len(backend)}  cpu  "
                      f"{growth([(n, r[1]) for n, r in pts])}")
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    raise SystemExit(main())
