"""What the damage benches share (bench_wandb_damage.py, bench_tensorboard_damage.py): the fixed
damages made to a log's bytes, and the interleaved best-of-N timing of the clean and damaged
copies, reported against the 2× goal."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

GOAL = 2.0  # damaged read ≤ this × the clean read


def damage_edits(data: bytes, rng: np.random.Generator, *, flip_from: int = 0,
                 margin: int) -> dict[str, bytes]:
    """The log's bytes under each damage: 8 bits flipped (at offsets ≥ `flip_from`), 512 bytes
    zeroed, 200 random bytes inserted, 200 bytes removed, a 4 KiB region repeated (those four at
    least `margin` bytes from either end), the tail cut mid-record."""
    n = len(data)
    flipped = bytearray(data)
    for off in rng.integers(flip_from, n, 8).tolist():
        flipped[off] ^= 1 << int(rng.integers(0, 8))
    at = [int(x) for x in rng.integers(margin, n - margin, 4)]
    zeroed = bytearray(data)
    zeroed[at[0]:at[0] + 512] = bytes(512)
    return {
        "8 bits flipped": bytes(flipped),
        "512 bytes zeroed": bytes(zeroed),
        "200 bytes inserted": data[:at[1]] + rng.bytes(200) + data[at[1]:],
        "200 bytes removed": data[:at[2]] + data[at[2] + 200:],
        "4 KiB repeated": data[:at[3] + 4096] + data[at[3]:at[3] + 4096] + data[at[3] + 4096:],
        "tail cut mid-record": data[: n - 1000],
    }


def time_and_report(runs: dict[str, str], read: Callable[[str], tuple[Any, Any]],
                    noted: Callable[[str], bool], repeat: int, header: str) -> int:
    """Read every copy (`runs`: name → folder, "clean" among them) `repeat` times in turns, keep
    each one's best time, print its ratio to the clean read, points kept and the notes `noted`
    picks; 1 when a damaged copy is over GOAL."""
    best = {name: 1e9 for name in runs}
    read(runs["clean"])  # imports and first-touch costs go before any timing
    kept: dict[str, tuple[int, list[str]]] = {}
    for _ in range(repeat):
        for name, folder in runs.items():
            t = time.perf_counter()
            run, history = read(folder)
            best[name] = min(best[name], time.perf_counter() - t)
            kept[name] = (len(history), [n for n in run.fidelity if noted(n)])
    print(header.format(points=kept["clean"][0], repeat=repeat))
    over = []
    for name in runs:
        ratio = best[name] / best["clean"]
        points = kept[name][0]
        line = (f"  {name:22s} {best[name]:6.3f} s  {ratio:4.2f}× clean  points {points:,} "
                f"({points / kept['clean'][0]:.4%})")
        if name != "clean" and ratio > GOAL:
            over.append(name)
            line += f"  — over the {GOAL:g}× goal"
        print(line)
        for note in kept[name][1][:3]:
            print(f"      {note[:240]}")
    print("over goal: " + (", ".join(over) if over else "none"))
    return 1 if over else 0
