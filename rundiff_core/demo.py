"""Generate example journal runs (the demo, and fixtures for tests): a baseline and a variant arm,
three seeds each, with a grad-norm spike, a resume event and one run still training."""

from __future__ import annotations

import json
import math
import os
import sys
import zlib
from collections.abc import Iterable
from typing import Any

import numpy as np
import yaml


def write_journal_run(
    path: str,
    *,
    config: dict[str, Any],
    rows: Iterable[dict[str, Any]],
    events: Iterable[dict[str, Any]] = (),
    seed: int | None = None,
    git_sha: str | None = "0123456789abcdef0123456789abcdef01234567",
    env: dict[str, str] | None = None,
    final: dict[str, Any] | None = None,
) -> str:
    """Write one journal run directory exactly as the documented format says."""
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "config.yaml"), "w") as fh:
        yaml.safe_dump(config, fh, sort_keys=True)
    with open(os.path.join(path, "metrics.jsonl"), "w") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")
    with open(os.path.join(path, "events.jsonl"), "w") as fh:
        for ev in events:
            fh.write(json.dumps(ev) + "\n")
    if seed is not None:
        with open(os.path.join(path, "seed.txt"), "w") as fh:
            fh.write(f"{seed}\n")
    if git_sha:
        with open(os.path.join(path, "git_sha.txt"), "w") as fh:
            fh.write(git_sha + "\n")
    if env is not None:
        with open(os.path.join(path, "env.txt"), "w") as fh:
            fh.writelines(f"{k}={v}\n" for k, v in env.items())
    if final is not None:
        with open(os.path.join(path, "final.json"), "w") as fh:
            json.dump(final, fh)
    return path


def loss_curve(steps: np.ndarray, floor: float, seed: int, scale: float = 2.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return floor + scale * np.exp(-steps / (0.25 * steps[-1] + 1)) + rng.normal(0, 0.01, len(steps))


def make_arm(
    root: str, name: str, *, lr: float, floor: float, seeds: int = 3, steps: int = 500,
    spike_at: int | None = None, resume_at: int | None = None, running_seed: int | None = None,
    start_time: float = 1_700_000_000.0,
) -> list[str]:
    """Write `seeds` seed-* run directories for one experiment arm."""
    paths = []
    grid = np.arange(0, steps + 1, 10, dtype=float)
    for s in range(seeds):
        loss = loss_curve(grid, floor + 0.004 * s, seed=zlib.crc32(f"{name}/{s}".encode()))
        rng = np.random.default_rng(s + 17)
        gn = 1.0 + 0.05 * rng.standard_normal(len(grid))
        if spike_at is not None and s == 0:
            gn[int(spike_at // 10)] = 25.0
        warm = grid / (0.1 * steps)
        lr_sched = lr * np.minimum(1.0, warm) * 0.5 * (1 + np.cos(math.pi * grid / steps))
        n = len(grid) if running_seed != s else len(grid) // 3
        rows = [
            {"step": int(grid[i]), "loss": round(float(loss[i]), 6), "lr": float(lr_sched[i]),
             "grad_norm": round(float(gn[i]), 4), "time": start_time + 3.0 * grid[i]}
            for i in range(n)
        ]
        rows += [
            {"step": int(grid[i]), "eval/accuracy": round(float(0.9 - 0.5 * loss[i] / 3), 6),
             "time": start_time + 3.0 * grid[i] + 1}
            for i in range(0, n, 10)
        ]
        rows.sort(key=lambda r: (r["step"], "eval/accuracy" in r))
        events = [{"event": "start", "step": 0, "time": start_time}]
        if resume_at is not None and s == 0:
            events.append({"event": "resume", "step": resume_at, "time": start_time + 3 * resume_at,
                           "checkpoint": f"ckpt-{resume_at}"})
        final = None
        if running_seed != s:
            final = {"status": "finished", "loss": rows[-1].get("loss"), "steps": int(grid[n - 1])}
        config = {
            "model": {"name": "tiny-transformer", "layers": 4, "width": 256},
            "optim": {"name": "adamw", "lr": lr, "weight_decay": 0.1, "warmup_steps": int(0.1 * steps)},
            "data": {"dataset": "demo-corpus", "batch_size": 64},
            "seed": s,
            "wandb": {"api_key": "demo-secret-key-never-printed"},
        }
        path = os.path.join(root, name, f"seed-{s}")
        write_journal_run(
            path, config=config, rows=rows, events=events, seed=s, final=final,
            env={"CUDA_VISIBLE_DEVICES": "0", "WANDB_API_KEY": "0" * 40, "HOSTNAME": "demo-node"},
        )
        paths.append(path)
    return paths


def make_demo(root: str) -> dict[str, list[str]]:
    """A baseline arm and a variant arm (higher lr, lower loss), three seeds each, and a
    single-seed student still training (a third of the way through)."""
    return {
        "exp-baseline": make_arm(root, "exp-baseline", lr=3e-4, floor=0.60),
        "exp-higher-lr": make_arm(root, "exp-higher-lr", lr=6e-4, floor=0.52, spike_at=200, resume_at=250),
        "exp-student": make_arm(root, "exp-student", lr=4e-4, floor=0.55, seeds=1, running_seed=0),
    }


if __name__ == "__main__":
    target = sys.argv[1] if len(sys.argv) > 1 else "demo-runs"
    made = make_demo(target)
    for arm, paths in made.items():
        print(f"{arm}: {len(paths)} seeds under {os.path.join(target, arm)}")
