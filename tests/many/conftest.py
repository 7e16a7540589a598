"""Fixtures for the many-run commands: journal runs plus Lightning-style CSV runs (local adapter)."""

from __future__ import annotations

import numpy as np
import pytest

from rundiff_core.demo import write_journal_run


def write_csv_run(path, *, lr, floor, steps=200, gpus=1, seed=0):
    """A Lightning CSVLogger-shaped folder: metrics.csv (sparse rows) + hparams.yaml."""
    path.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    lines = ["epoch,eval/accuracy,loss,step,time"]
    for s in range(0, steps + 1, 10):
        loss = floor + 1.0 / (1 + s / 20) + rng.normal(0, 0.002)
        lines.append(f"{s // 50},,{loss:.6f},{s},{1.7e9 + 3600 * s / steps}")
        if s % 50 == 0:
            lines.append(f"{s // 50},{0.9 - loss / 4:.6f},,{s},{1.7e9 + 3600 * s / steps}")
    (path / "metrics.csv").write_text("\n".join(lines) + "\n")
    (path / "hparams.yaml").write_text(f"lr: {lr}\nseed: {seed}\nn_gpus: {gpus}\nwidth: 128\n")
    return path


def write_journal(path, *, lr, floor, steps=200, seed=0, width=128, running=False, events=(), nan_at=None,
                  spike_at=None, gpus=1):
    rng = np.random.default_rng(seed + 100)
    rows = []
    last = steps // 2 if running else steps
    for s in range(0, last + 1, 10):
        loss = floor + 1.0 / (1 + s / 20) + rng.normal(0, 0.002)
        if spike_at is not None and s == spike_at:
            loss = 50.0
        if nan_at is not None and s == nan_at:
            loss = float("nan")
        rows.append({"step": s, "loss": loss, "time": 1.7e9 + 3600 * s / steps})
        if s % 50 == 0:
            rows.append({"step": s, "eval/accuracy": 0.9 - (floor + 1.0 / (1 + s / 20)) / 4, "time": 1.7e9 + 3600 * s / steps})
    return write_journal_run(str(path), config={"lr": lr, "seed": seed, "width": width, "n_gpus": gpus},
                             rows=rows, seed=seed, events=list(events),
                             final=None if running else {"status": "finished"})


@pytest.fixture
def sweep(tmp_path):
    """Three configs: A (journal, 3 seeds), B (CSV, 3 seeds, clearly better), C (journal, 1 seed)."""
    for s in range(3):
        write_journal(tmp_path / "sweep" / "a" / f"seed-{s}", lr=0.1, floor=0.50 + 0.003 * s, seed=s)
        write_csv_run(tmp_path / "csv" / f"b-seed-{s}", lr=0.2, floor=0.40 + 0.003 * s, seed=s)
    write_journal(tmp_path / "sweep" / "c" / "seed-0", lr=0.3, floor=0.45, seed=0)
    return tmp_path
