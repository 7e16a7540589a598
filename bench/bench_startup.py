"""Benchmark start-up: the commands a person types and waits on, against Python's own start.

Each command runs as a fresh process — the `rundiff` console script of this venv when it is
installed, else `python -m rundiff_core` — interleaved with `python -c pass` of the same
interpreter, so a machine getting busier favours neither. Prints the minimum wall time of N runs
and that run's CPU (user + sys of the child), the ratio to `python -c pass`, and "below goal"
when a command takes more than GOAL× Python's start.

Children read and write bytecode under bench/out/pycache (see bench/wholeprocess.py): this
workplace sets PYTHONDONTWRITEBYTECODE, under which a source checkout would recompile every module
on every start, which no installed rundiff does. The first of the N runs compiles; the minimum
keeps a warm one.

    .venv/bin/python bench/bench_startup.py            # min of 7
    .venv/bin/python bench/bench_startup.py --quick    # min of 3
    .venv/bin/python bench/bench_startup.py --importtime   # also: the slowest imports of --help
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, ROOT)

from wholeprocess import _child_env, _once  # noqa: E402

GOAL = 3.0  # × `python -c pass`


def rundiff_argv() -> list[str]:
    """How a user starts rundiff: the console script beside this interpreter, if installed."""
    script = os.path.join(os.path.dirname(sys.executable), "rundiff")
    if os.path.exists(script):
        return [sys.executable, script]
    return [sys.executable, "-m", "rundiff_core"]


def detect_target() -> str:
    """A small journal run to `detect` (written once under bench/out/startup/)."""
    path = os.path.join(HERE, "out", "startup", "exp", "seed-0")
    if not os.path.exists(os.path.join(path, "metrics.jsonl")):
        from rundiff_core.demo import write_journal_run

        write_journal_run(path, config={"lr": 0.1},
                          rows=[{"step": s, "loss": 1 / (s + 1)} for s in range(50)],
                          final={"status": "finished"}, seed=0)
    return path


def discovery(argv: list[str]) -> str:
    """Where a start of `argv` took the plugins' entry points from (RUNDIFF_TRACE_PLUGINS' line):
    the cache, or a scan of every installed distribution (~25 ms more: after an install, or when
    the cache holds no entry for this interpreter and sys.path)."""
    env = {**_child_env(), "RUNDIFF_TRACE_PLUGINS": "1"}
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, env=env)
    for line in proc.stderr.splitlines():
        if "rundiff entry points from " in line:
            return line.split("rundiff entry points from ", 1)[1]
    return "unknown (no trace line)"


def importtime(argv: list[str], top: int = 15) -> None:
    """The slowest imports (cumulative µs) of one command, as `python -X importtime` sees them."""
    cmd = [argv[0], "-X", "importtime", *argv[1:]]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=_child_env())
    rows = []
    for line in proc.stderr.splitlines():
        parts = line.removeprefix("import time:").split("|")
        if line.startswith("import time:") and len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((int(parts[1]), parts[2].strip()))
    print(f"slowest imports of `{' '.join(os.path.basename(a) for a in argv[1:])}` "
          f"(cumulative, -X importtime):")
    for cum, name in sorted(rows, reverse=True)[:top]:
        print(f"  {cum / 1000:7.1f} ms  {name}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="min of 3 instead of 7")
    ap.add_argument("--repeat", type=int, default=None, help="min of N (default 7)")
    ap.add_argument("--importtime", action="store_true",
                    help="also print the slowest imports of `rundiff --help`")
    args = ap.parse_args()
    repeat = args.repeat or (3 if args.quick else 7)
    rd = rundiff_argv()
    commands: dict[str, list[str]] = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "rundiff --help": [*rd, "--help"],
        "rundiff adapters": [*rd, "adapters"],
        "rundiff detect PATH": [*rd, "detect", detect_target()],
        "rundiff ls --help": [*rd, "ls", "--help"],
    }
    before = discovery(commands["rundiff --help"])  # also compiles what the first start needs
    best: dict[str, tuple[float, float]] = {}
    for _ in range(repeat):
        for name, argv in commands.items():
            got = _once(argv)
            if name not in best or got[0] < best[name][0]:
                best[name] = got
    try:
        load = os.getloadavg()[0]
        print(f"load average (1 min) at the end: {load:.2f} on {os.cpu_count()} cores")
    except OSError:
        pass
    print(f"start-up, fresh process, min of {repeat} (rundiff started as "
          f"{' '.join(os.path.relpath(a, ROOT) if a.startswith(ROOT) else a for a in rd)}):")
    base_wall, base_cpu = best["python -c pass"]
    worst = 0.0
    for name, (wall, cpu) in best.items():
        ratio = wall / base_wall
        line = f"  {name:<22s} {wall * 1000:7.1f} ms wall {cpu * 1000:7.1f} ms cpu"
        if name != "python -c pass":
            worst = max(worst, ratio)
            verdict = "ok" if ratio <= GOAL else "below goal"
            line += (f"   {ratio:4.2f}× python -c pass wall, {cpu / base_cpu:4.2f}× cpu "
                     f"({verdict}: goal ≤ {GOAL:g}× wall)")
        print(line)
    print(f"worst ratio {worst:.2f}× (goal ≤ {GOAL:g}×): "
          f"{'within goal' if worst <= GOAL else 'below goal'}")
    after = discovery(commands["rundiff --help"])
    for when, origin in (("before", before), ("after", after)):
        cached = origin.startswith("the cache")
        print(f"entry points {when} the runs: from {origin}"
              + ("" if cached else "  (not the cache: runs may have scanned, ~25 ms each)"))
    if args.importtime:
        importtime(commands["rundiff --help"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
