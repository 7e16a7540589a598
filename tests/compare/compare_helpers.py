"""Shared builders for the compare tests: in-memory runs and arms, and journal runs on disk."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from rundiff_core.demo import write_journal_run
from rundiff_core.engines.arms import Arm
from rundiff_core.model import Run
from rundiff_core.testing import memory_run


def arm(*runs: Run) -> Arm:
    """An arm of one or more seed runs (the first is the primary)."""
    return Arm(address=runs[0].address, primary=runs[0], seeds=list(runs))


def mem(name: str, series: Mapping[str, tuple[Sequence[float], Sequence[float]]],
        status: str = "finished", seed: int | None = None) -> Run:
    return memory_run(name, series, status=status, seed=seed)


def linear(steps: Sequence[float], a: float, b: float) -> tuple[np.ndarray, np.ndarray]:
    s = np.asarray(steps, dtype=float)
    return s, a + b * s


def journal(path: str, rows: list[dict], *, finished: bool = True, seed: int | None = None,
            name: str | None = None) -> str:
    config = {"lr": 0.001} | ({"run_name": name} if name else {})
    write_journal_run(path, config=config, rows=rows, seed=seed,
                      final={"status": "finished"} if finished else None)
    return path
