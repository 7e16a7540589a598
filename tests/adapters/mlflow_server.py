"""Shared by the MLflow tests: runs written with the real client, and a real `mlflow server`.

`write_runs(uri)` logs the same set of runs into any tracking URI (file store, sqlite, HTTP) and
returns what was logged, point by point, so readers are checked against the writer, not against
themselves. `MlflowServer` starts `mlflow server` (sqlite backend) on 127.0.0.1 on a free port,
waits for `/health` with a bounded loop, and stops the server's process group by its pid.
"""

from __future__ import annotations

import math
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from rundiff_core.model import make_history

T0 = 1_700_000_000_000  # ms

PARAMS = {
    "lr": "0.001",
    "epochs": "5",
    "use_amp": "True",
    "betas": "(0.9, 0.999)",
    "optimizer": "adam",
    "seed": "3",
    "scheduler": "None",
    "optim/wd": "1e-08",
    "api_key": "sk-not-a-real-key-123",
}
CONFIG = {  # what the config diff should see
    "lr": 0.001, "epochs": 5, "use_amp": True, "betas": "(0.9, 0.999)", "optimizer": "adam",
    "seed": 3, "scheduler": None, "optim/wd": 1e-08,
}
GIT_SHA = "135df9c713855fce04a512153d6bedd9c5e1ae4c"


@dataclass
class LoggedRun:
    run_id: str
    name: str
    experiment: str
    points: list[tuple[float, str, float, float]] = field(default_factory=list)

    @property
    def history(self) -> pd.DataFrame:
        if not self.points:
            return make_history([], [], [], [])
        s, k, v, t = zip(*self.points, strict=True)
        return make_history(s, k, v, t)

    def last(self, key: str) -> float:
        """MLflow's latest: the point with the largest (step, timestamp)."""
        pts = [p for p in self.points if p[1] == key]
        return max(pts, key=lambda p: (p[0], p[3]))[2]


@dataclass
class Logged:
    uri: str
    runs: dict[str, LoggedRun]
    experiments: dict[str, str]  # name -> id


def write_runs(uri: str) -> Logged:
    """Log a small but awkward set of runs with the real MLflow client."""
    from mlflow import MlflowClient
    from mlflow.entities import Metric, Param

    client = MlflowClient(tracking_uri=uri)
    exp_a = client.create_experiment("exp-a")
    exp_b = client.create_experiment("exp-b")
    runs: dict[str, LoggedRun] = {}

    def new(label: str, exp: str, exp_name: str, name: str, start: int, tags=None) -> LoggedRun:
        run = client.create_run(exp, start_time=start, run_name=name, tags=tags or {})
        runs[label] = LoggedRun(run.info.run_id, name, exp_name)
        return runs[label]

    # base: params of every shape, a nested key, NaN/±inf, duplicate step-0 points
    base = new("base", exp_a, "exp-a", "base", T0,
               tags={"team": "vision", "hf_token": "hf_secretsecret", "mlflow.source.git.commit": GIT_SHA})
    metrics = []
    for s in range(300):
        ts = T0 + 10 * s
        loss = 2.0 * math.exp(-s / 100) + (s % 7) * 1e-3
        metrics.append(Metric("loss", loss, ts, s))
        base.points.append((float(s), "loss", loss, ts / 1000))
        if s % 50 == 0:
            acc = 0.5 + s / 1000
            metrics.append(Metric("eval/acc", acc, ts + 1, s))
            base.points.append((float(s), "eval/acc", acc, (ts + 1) / 1000))
    for s, v in enumerate([math.nan, math.inf, -math.inf, 1.5, -0.0]):
        ts = T0 + 5000 + s
        metrics.append(Metric("weird", v, ts, s))
        base.points.append((float(s), "weird", v, ts / 1000))
    client.log_batch(base.run_id, metrics=metrics,
                     params=[Param(k, v) for k, v in PARAMS.items()])
    for i, v in enumerate([0.3, 0.2, 0.1]):  # no step=: MLflow records step 0
        ts = T0 + 9000 + i
        client.log_metric(base.run_id, "no_step", v, timestamp=ts)
        base.points.append((0.0, "no_step", v, ts / 1000))
    client.set_terminated(base.run_id, "FINISHED", end_time=T0 + 60_000)

    # nested runs: parent and child (MLflow marks the child with mlflow.parentRunId)
    parent = new("parent", exp_a, "exp-a", "parent", T0 + 100_000)
    child = new("child", exp_a, "exp-a", "child", T0 + 100_500,
                tags={"mlflow.parentRunId": parent.run_id})
    for run, scale in ((parent, 1.0), (child, 2.0)):
        ms = [Metric("loss", scale / (s + 1), T0 + 100_000 + s, s) for s in range(20)]
        client.log_batch(run.run_id, metrics=ms)
        run.points += [(float(m.step), m.key, m.value, m.timestamp / 1000) for m in ms]
        client.set_terminated(run.run_id, "FINISHED", end_time=T0 + 110_000)

    # outcomes: failed, killed, still running
    for label, status in (("failed", "FAILED"), ("killed", "KILLED"), ("running", None)):
        run = new(label, exp_a, "exp-a", label, T0 + 200_000 + len(runs))
        client.log_metric(run.run_id, "loss", 1.0, timestamp=T0 + 200_000, step=1)
        run.points.append((1.0, "loss", 1.0, (T0 + 200_000) / 1000))
        if status:
            client.set_terminated(run.run_id, status, end_time=T0 + 210_000)

    # two runs with one name in exp-a, and a run named "base" in exp-b
    for label in ("twin1", "twin2"):
        run = new(label, exp_a, "exp-a", "twin", T0 + 300_000 + len(runs))
        client.log_batch(run.run_id, params=[Param("lr", "0.01" if label == "twin1" else "0.02")])
    other = new("other-base", exp_b, "exp-b", "base", T0 + 400_000)
    client.log_metric(other.run_id, "loss", 0.5, timestamp=T0 + 400_000, step=3)
    other.points.append((3.0, "loss", 0.5, (T0 + 400_000) / 1000))
    # an experiment whose *name* is another experiment's id: the bare selector is ambiguous
    client.create_experiment(str(exp_b))
    return Logged(uri, runs, {"exp-a": exp_a, "exp-b": exp_b})


def client_history(uri: str, run_id: str) -> pd.DataFrame:
    """Every point through `MlflowClient.get_metric_history`, in the client's order."""
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    run = client.get_run(run_id)
    rows: list[tuple[float, str, float, float]] = []
    for key in sorted(run.data.metrics):
        rows += [(float(m.step), key, float(m.value), m.timestamp / 1000)
                 for m in client.get_metric_history(run_id, key)]
    if not rows:
        return make_history([], [], [], [])
    s, k, v, t = zip(*rows, strict=True)
    return make_history(s, k, v, t)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class MlflowServer:
    """A real `mlflow server` on 127.0.0.1 with a sqlite backend in `workdir`."""

    def __init__(self, workdir: Path, startup_timeout: float = 180.0) -> None:
        self.workdir = workdir
        self.db = workdir / "server.db"
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = workdir / "server.log"
        env = {
            **os.environ,
            "MLFLOW_DISABLE_TELEMETRY": "true",
            "DO_NOT_TRACK": "1",
            "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false",  # no extra job-runner process
        }
        env.pop("MLFLOW_TRACKING_URI", None)
        mlflow_cli = os.path.join(os.path.dirname(sys.executable), "mlflow")
        cmd = [mlflow_cli, "server", "--backend-store-uri", f"sqlite:///{self.db}",
               "--artifacts-destination", str(workdir / "artifacts"),
               "--host", "127.0.0.1", "--port", str(self.port), "--workers", "1"]
        self._log_fh = open(self.log, "wb")  # noqa: SIM115 - closed in stop()
        # its own session: the CLI spawns uvicorn; the whole group is stopped by this pid
        self.proc = subprocess.Popen(cmd, cwd=workdir, env=env, stdout=self._log_fh,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        self.pid = self.proc.pid
        try:
            self._wait_ready(startup_timeout)
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"mlflow server exited ({self.proc.returncode}):\n{self._tail()}")
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=2) as resp:
                    if resp.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.25)
        raise RuntimeError(f"mlflow server not ready after {timeout:.0f} s:\n{self._tail()}")

    def _tail(self) -> str:
        try:
            return self.log.read_text(errors="replace")[-3000:]
        except OSError:
            return ""

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.pid, signal.SIGTERM)  # the group this pid leads
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        try:  # uvicorn may outlive the CLI by a moment: make sure the group is gone
            os.killpg(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self._log_fh.close()
