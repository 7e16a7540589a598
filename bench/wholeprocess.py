"""Whole-process timing: each reader as a fresh `python` process, start-up and imports included.

In-process ratios hide start-up (pandas alone imports in ~0.4 s here); a user running
`rundiff ls RUN --format json` pays it. Each command runs `repeat` times, interleaved with its
peers so a machine getting busier favours no one; best wall time and that run's CPU (user + sys of
the child) are kept.

Children run as an installed program runs: with compiled bytecode. This workplace sets
PYTHONDONTWRITEBYTECODE, under which a source checkout recompiles every module on every start
(~60 ms for rundiff) while site-packages keep theirs; children instead read and write bytecode
under bench/out/pycache (PYTHONPYCACHEPREFIX), the same for every peer, so the first of the
`repeat` runs compiles and the best-of keeps a warm one.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def rundiff_ls(address: str) -> list[str]:
    """`rundiff ls ADDRESS --format json`: metadata and every point of every key (counted)."""
    return [sys.executable, "-m", "rundiff_core.cli", "ls", address, "--format", "json"]


def python_code(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def _child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = os.path.join(ROOT, "bench", "out", "pycache")
    return env


def _once(argv: Sequence[str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, cwd=ROOT, env=_child_env())
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def best_of(commands: Mapping[str, Sequence[str]], *, repeat: int = 3) -> dict[str, tuple[float, float]]:
    """(wall, CPU) of each command's fastest run of `repeat`, the commands interleaved."""
    best: dict[str, tuple[float, float]] = {}
    for _ in range(max(1, repeat)):
        for name, argv in commands.items():
            got = _once(argv)
            if name not in best or got[0] < best[name][0]:
                best[name] = got
    return best


def compare(commands: Mapping[str, Sequence[str]], *, repeat: int = 3,
            targets: Mapping[str, float] | None = None, label: str = "rundiff") -> dict[str, float]:
    """Time every command (`label` is rundiff's), print wall/CPU and ratios; returns wall ratios."""
    best = best_of(commands, repeat=repeat)
    print(f"whole process (fresh interpreter, best of {repeat}):")
    for name, (wall, cpu) in best.items():
        print(f"  {name:<34s} {wall:7.3f} s wall {cpu:7.3f} s cpu")
    ratios = {}
    for name, (wall, cpu) in best.items():
        if name == label:
            continue
        ratio = wall / best[label][0]
        ratios[name] = ratio
        target = (targets or {}).get(name)
        verdict = "" if target is None else \
            f" (target ≥ {target:g}×) — {'MET' if ratio >= target else 'NOT MET'}"
        print(f"  whole-process ratio vs {name}: {ratio:.1f}× wall, "
              f"{cpu / best[label][1]:.1f}× cpu{verdict}")
    return ratios
