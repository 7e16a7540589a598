"""Real journal fleets for the fleet tests (written in the documented journal format)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from rundiff_core.demo import write_journal_run

SECRET = "sk-fleet-secret-0123456789abcdef"


def write_fleet(root: Path, arms: int = 3, seeds: int = 2, steps: int = 60, *,
                running: tuple[str, ...] = ()) -> list[str]:
    """`arms` experiment folders × `seeds` seed-* runs; a secret in every config and env."""
    paths = []
    for a in range(arms):
        for s in range(seeds):
            rng = np.random.default_rng(100 * a + s)
            rows = []
            for i in range(steps):
                row = {"step": i * 10, "loss": float(2.0 / (i + 1) + rng.normal(0, 0.01)),
                       "lr": 1e-3 * (a + 1), "time": 1.7e9 + i}
                if i % 5 == 4:
                    row["eval/accuracy"] = float(0.5 + i / (2 * steps))
                rows.append(row)
            name = f"arm-{a}/seed-{s}"
            config = {"optim": {"lr": 1e-3 * (a + 1), "name": "adamw"}, "layers": 2 + a,
                      "tags": ["x", "y"], "wandb": {"api_key": SECRET}}
            if a == 0:
                config["only_arm0"] = True
            final = None if name in running else {"status": "finished", "loss": rows[-1]["loss"]}
            path = write_journal_run(str(root / f"arm-{a}" / f"seed-{s}"), config=config,
                                     rows=rows, seed=s, final=final,
                                     events=[{"event": "start", "step": 0}],
                                     env={"HF_TOKEN": SECRET, "HOST": "node-1"})
            paths.append(path)
    return paths


def part_files(dataset: Path) -> dict[str, tuple[int, int]]:
    """Every points file → (inode, mtime_ns): proof of which partitions an export rewrote."""
    out = {}
    for dirpath, _dirs, files in os.walk(dataset / "points"):
        for f in files:
            st = os.stat(os.path.join(dirpath, f))
            out[os.path.relpath(os.path.join(dirpath, f), dataset)] = (st.st_ino, st.st_mtime_ns)
    return out


def wait_for_pause(marker: Path, alive, timeout: float = 120.0) -> tuple[str, int]:
    """(point, pid) of the export process paused by `RUNDIFF_FLEET_PAUSE` (rundiff_core.fleet.faults).

    Not a race: once the marker exists the export sleeps at its checkpoint until killed, so it
    cannot finish first. `alive()` false (the export ended without pausing) fails at once.
    """
    import time

    deadline = time.monotonic() + timeout
    while not marker.exists():
        assert alive(), "the export ended without reaching its pause point"
        assert time.monotonic() < deadline, "the export never reached its pause point"
        time.sleep(0.01)
    point, pid = marker.read_text().split()
    return point, int(pid)


def write_tb_runs(root: Path, tbx, runs: tuple[tuple[str, int], ...] = (("run-a", 45), ("run-b", 38)),
                  every: int = 10) -> None:
    """TensorBoard runs written by tensorboardX: `loss` with a spike at point 20, and
    `eval/accuracy` every 5th point, at steps `every` apart."""
    for name, n in runs:
        writer = tbx.SummaryWriter(str(root / name))
        for i in range(n):
            writer.add_scalar("loss", 1.0 / (i + 1) if i != 20 else 40.0, i * every)
            if i % 5 == 0:
                writer.add_scalar("eval/accuracy", 0.5 + i / 100, i * every)
        writer.close()


def write_mlflow_runs(root: Path, mlflow, *, every: int = 13, duplicate_at: int = 7,
                      lrs: tuple[float, ...] = (0.01, 0.02)) -> None:
    """MLflow runs written by the mlflow client into a file store: 30 `loss` points at steps
    `every` apart, one step logged twice (the last logged value wins)."""
    client = mlflow.MlflowClient(tracking_uri=f"file://{root}")
    exp = client.create_experiment("fleet-exp")
    for r, lr in enumerate(lrs):
        run = client.create_run(exp, run_name=f"ml-{r}")
        client.log_param(run.info.run_id, "lr", lr)
        for i in range(30):
            client.log_metric(run.info.run_id, "loss", 2.0 / (i + 1) + r, step=i * every)
            if i == duplicate_at:
                client.log_metric(run.info.run_id, "loss", 0.25, step=i * every)
        client.set_terminated(run.info.run_id)
