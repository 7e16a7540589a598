"""MLflow adapter vs a loop of `MlflowClient.get_metric_history` over every (run, key).

Two stores with the same content — 50 runs × 5 metrics × 10,000 steps (2,500,000 points), written
by the real `mlflow` client with `log_batch` — one sqlite database store and one file store
(`mlruns/`). For each store, in the same process:

- rundiff: `load_runs("mlflow:<store>")` then `run.history()` for every run (read-only SQL select
  on sqlite; on the file store one Arrow CSV parse per metric file into history columns, no
  pandas until `history()` asks for a frame);
- the peer: `MlflowClient(tracking_uri).get_metric_history(run_id, key)` for every (run, key),
  turned into the same long frame.

Both results must hold identical points (key, step, value, timestamp), else the bench fails.
Targets: ≥ 10× on sqlite, ≥ 20× on the file store. Generated stores are cached under bench/out/,
keyed by the mlflow version that wrote them (printed with each store).

Baseline: the fastest raw parse of the same bytes, no MLflow semantics — on the file store every
metric file's bytes joined and parsed by one `pyarrow.csv.read_csv` (goal: rundiff within 1.5× of
it); on sqlite one `sqlite3` SELECT of the metrics table into arrays (no goal: printed for scale).
A ratio under its goal is printed as "below goal". Every timing is best of N, rundiff and the raw
parse interleaved (the client, ~25 s a pass, `--peer-repeat` times), CPU next to wall, with the
load average when the store's timings began and ended.
Usage: python bench/bench_mlflow.py [--quick] [--runs N --keys K --steps S] [--only sqlite|file]
       [--repeat N] [--peer-repeat N]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time

import numpy as np
import pandas as pd

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

# The peer needs these; rundiff's reader does not (it never goes through the client here).
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
os.environ.pop("MLFLOW_TRACKING_URI", None)

TARGETS = {"sqlite": 10.0, "file": 20.0}
RAW_GOAL = 1.5  # rundiff's time over the raw parse of the same bytes, at most (file store)
BATCH = 1000  # MLflow's log_batch limit on metrics per call


def generate(kind: str, root: str, runs: int, keys: int, steps: int) -> str:
    """Write the store with the real client (log_batch); return its tracking URI. Cached."""
    from importlib.metadata import version

    marker = os.path.join(root, "done.json")
    spec = {"runs": runs, "keys": keys, "steps": steps, "kind": kind, "mlflow": version("mlflow")}
    uri = f"sqlite:///{os.path.join(root, 'mlflow.db')}" if kind == "sqlite" else \
        f"file://{os.path.join(root, 'mlruns')}"
    if os.path.isfile(marker):
        with open(marker) as fh:
            if json.load(fh) == spec:
                return uri
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    from mlflow import MlflowClient
    from mlflow.entities import Metric, Param

    client = MlflowClient(tracking_uri=uri)
    exp = client.create_experiment("bench")
    rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    base_ts = 1_700_000_000_000
    for r in range(runs):
        run = client.create_run(exp, run_name=f"run-{r:03d}")
        rid = run.info.run_id
        client.log_batch(rid, params=[Param("lr", str(10 ** -(r % 4 + 2))), Param("seed", str(r))])
        pending: list = []
        for k in range(keys):
            vals = np.exp(-np.arange(steps) / steps * 3) + rng.normal(0, 0.01, steps)
            ts = base_ts + np.arange(steps) * 10 + k
            pending.extend(Metric(f"metric_{k}", float(v), int(t), s)
                           for s, (v, t) in enumerate(zip(vals, ts, strict=True)))
        for i in range(0, len(pending), BATCH):
            client.log_batch(rid, metrics=pending[i:i + BATCH])
        client.set_terminated(rid)
        print(f"  {kind}: run {r + 1}/{runs} written ({time.perf_counter() - t0:.0f} s)", flush=True)
    with open(marker, "w") as fh:
        json.dump(spec, fh)
    return uri


def peer_client(uri: str):
    """The client, built and warmed up outside the timing (imports, store init, schema check)."""
    from mlflow import MlflowClient
    from mlflow.entities import ViewType

    client = MlflowClient(tracking_uri=uri)
    exps = [e.experiment_id for e in client.search_experiments(view_type=ViewType.ALL)]
    return client, exps


def peer_load(client, exps) -> tuple[pd.DataFrame, int]:
    """What people do today: the client's full-history call for every (run, key)."""
    from mlflow.entities import ViewType

    parts, calls = [], 0
    token = None
    runs = []
    while True:
        page = client.search_runs(exps, run_view_type=ViewType.ALL, max_results=1000,
                                  page_token=token)
        runs.extend(page)
        token = page.token
        if not token:
            break
    for run in runs:
        for key in run.data.metrics:
            hist = client.get_metric_history(run.info.run_id, key)
            calls += 1
            parts.append(pd.DataFrame({
                "run_id": run.info.run_id, "key": key,
                "step": np.array([m.step for m in hist], dtype="float64"),
                "value": np.array([m.value for m in hist], dtype="float64"),
                "wall_time": np.array([m.timestamp for m in hist], dtype="float64") / 1000.0,
            }))
    return pd.concat(parts, ignore_index=True), calls


def raw_csv_parse(mlruns: str) -> int:
    """Every metric file's bytes, joined, through one pyarrow.csv parse: the floor for the store."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    blobs = []
    for dirpath, _dirs, files in os.walk(mlruns):
        if os.sep + "metrics" in dirpath[len(mlruns):]:
            for name in files:
                with open(os.path.join(dirpath, name), "rb") as fh:
                    blobs.append(fh.read())
    table = pacsv.read_csv(
        pa.py_buffer(b"".join(blobs)),
        read_options=pacsv.ReadOptions(column_names=["ts", "value", "step"], block_size=1 << 24),
        parse_options=pacsv.ParseOptions(delimiter=" ", quote_char=False),
        convert_options=pacsv.ConvertOptions(
            column_types={"ts": pa.int64(), "value": pa.float64(), "step": pa.int64()}))
    return table.num_rows


def raw_sqlite_select(db: str) -> int:
    """One SELECT of the metrics table into arrays (`sqlite3`, no MLflow)."""
    import sqlite3

    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = con.execute("SELECT run_uuid, key, value, timestamp, step FROM metrics").fetchall()
    finally:
        con.close()
    cols = list(zip(*rows, strict=True)) if rows else [()] * 5
    arrays = [np.asarray(cols[2], dtype="float64"), np.asarray(cols[3], dtype="int64"),
              np.asarray(cols[4], dtype="int64")]
    return len(arrays[0])


def written_by(root: str) -> str:
    with open(os.path.join(root, "done.json")) as fh:
        spec = json.load(fh)
    return f"mlflow {spec.get('mlflow', '(version not recorded)')} (MlflowClient.log_batch)"


def rundiff_load(locator: str) -> list[tuple[str, pd.DataFrame]]:
    """Every run and its full history frame (what is timed)."""
    from rundiff_core.resolve import load_runs

    return [(run.run_id, run.history()) for run in load_runs(f"mlflow:{locator}")]


def one_frame(loaded: list[tuple[str, pd.DataFrame]]) -> pd.DataFrame:
    """The runs' histories as one long frame with a run_id column (for the equality check)."""
    return pd.concat([h.assign(run_id=rid) for rid, h in loaded], ignore_index=True)


def same_points(a: pd.DataFrame, b: pd.DataFrame) -> None:
    """Identical points; the sqlite store keeps ±inf as ±max-float, which rundiff restores."""
    cols = ["run_id", "key", "step", "wall_time", "value"]

    def norm(df: pd.DataFrame) -> pd.DataFrame:
        d = df[cols].copy()
        d["key"] = d["key"].astype(str)
        d["value"] = d["value"].replace({np.finfo("float64").max: np.inf,
                                         -np.finfo("float64").max: -np.inf})
        return d.sort_values(cols, kind="stable").reset_index(drop=True)

    x, y = norm(a), norm(b)
    assert len(x) == len(y), f"point counts differ: rundiff {len(x)}, client {len(y)}"
    pd.testing.assert_frame_equal(x, y, check_exact=True, check_dtype=False)


def load() -> str:
    with open("/proc/loadavg") as fh:
        return " ".join(fh.read().split()[:3])


def bench_store(kind: str, runs: int, keys: int, steps: int, repeat: int,
                peer_repeat: int = 1) -> float:
    root = os.path.join(HERE, "out", f"mlflow-{kind}-{runs}x{keys}x{steps}")
    print(f"[{kind}] store: {root}")
    uri = generate(kind, root, runs, keys, steps)
    locator = os.path.join(root, "mlflow.db" if kind == "sqlite" else "mlruns")

    print(f"[{kind}] written by {written_by(root)}")
    print(f"[{kind}] load average at start: {load()} (2 cores)")
    raw = (lambda: raw_sqlite_select(locator)) if kind == "sqlite" else (lambda: raw_csv_parse(locator))
    best_rd, rd = float("inf"), None
    best_raw, cpu_rd, cpu_raw, raw_rows = float("inf"), float("inf"), float("inf"), 0
    for _ in range(repeat):  # interleaved with the raw parse, best of `repeat` for each
        t, c = time.perf_counter(), time.process_time()
        rd = rundiff_load(locator)
        best_rd = min(best_rd, time.perf_counter() - t)
        cpu_rd = min(cpu_rd, time.process_time() - c)
        t, c = time.perf_counter(), time.process_time()
        raw_rows = raw()
        best_raw = min(best_raw, time.perf_counter() - t)
        cpu_raw = min(cpu_raw, time.process_time() - c)
    client, exps = peer_client(uri)
    t_peer = cpu_peer = float("inf")
    for _ in range(max(1, peer_repeat)):
        t, c = time.perf_counter(), time.process_time()
        peer, calls = peer_load(client, exps)
        t_peer = min(t_peer, time.perf_counter() - t)
        cpu_peer = min(cpu_peer, time.process_time() - c)
    rd = one_frame(rd)
    same_points(rd, peer)
    ratio = t_peer / best_rd
    target = TARGETS[kind]
    print(f"[{kind}] points: {len(rd):,} in {runs} runs; identical to the client's: yes")
    print(f"[{kind}] rundiff load, all histories (best of {repeat}): {best_rd:.3f} s wall "
          f"{cpu_rd:.3f} s cpu")
    print(f"[{kind}] MlflowClient.get_metric_history × {calls} (best of {max(1, peer_repeat)}): "
          f"{t_peer:.3f} s wall {cpu_peer:.3f} s cpu")
    print(f"[{kind}] ratio: rundiff is {ratio:.1f}× faster wall, {cpu_peer / cpu_rd:.1f}× cpu "
          f"(target ≥ {target:.0f}×) — {'MET' if ratio >= target else 'NOT MET'}")
    if ratio < target:
        print(f"[{kind}] below goal: {ratio:.1f}× the client in process (goal ≥ {target:.0f}×)")
    assert raw_rows == len(rd), (raw_rows, len(rd))
    raw_name = "sqlite3 SELECT of the metrics table" if kind == "sqlite" else \
        "pyarrow.csv.read_csv of all metric files' bytes"
    over = best_rd / best_raw
    goal = f"goal ≤ {RAW_GOAL:g}×" if kind == "file" else "no goal for sqlite"
    print(f"[{kind}] raw parse ({raw_name}, best of {repeat}): {best_raw:.3f} s wall "
          f"{cpu_raw:.3f} s cpu; rundiff {best_rd:.3f} s wall {cpu_rd:.3f} s cpu: rundiff takes "
          f"{over:.2f}× the raw parse wall, {cpu_rd / cpu_raw:.2f}× its cpu ({goal})"
          + (" — below goal" if kind == "file" and over > RAW_GOAL else ""))
    from wholeprocess import compare, python_code, rundiff_ls

    whole = compare({"rundiff": rundiff_ls(f"mlflow:{locator}"),
             "MlflowClient loop": python_code(
                 "from mlflow import MlflowClient\n"
                 f"c = MlflowClient({uri!r})\n"
                 "for e in c.search_experiments():\n"
                 "    for r in c.search_runs([e.experiment_id], max_results=50000):\n"
                 "        for k in r.data.metrics:\n"
                 "            c.get_metric_history(r.info.run_id, k)\n")},
            repeat=max(1, repeat - 1), targets={"MlflowClient loop": target})
    if whole["MlflowClient loop"] < target:
        print(f"[{kind}] below goal: {whole['MlflowClient loop']:.1f}× the client whole process "
              f"(goal ≥ {target:.0f}×)")
    print(f"[{kind}] load average at end: {load()}")
    return ratio


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--keys", type=int, default=5)
    ap.add_argument("--steps", type=int, default=10_000)
    ap.add_argument("--quick", action="store_true", help="5 runs × 5 metrics × 2,000 steps")
    ap.add_argument("--only", choices=("sqlite", "file"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--peer-repeat", type=int, default=1,
                    help="passes of the client loop in process (best of; ~25 s each)")
    ap.add_argument("--generate-only", action="store_true")
    args = ap.parse_args()
    if args.quick:
        args.runs, args.keys, args.steps = 5, 5, 2_000
    kinds = [args.only] if args.only else ["sqlite", "file"]
    if args.generate_only:
        for kind in kinds:
            root = os.path.join(HERE, "out", f"mlflow-{kind}-{args.runs}x{args.keys}x{args.steps}")
            generate(kind, root, args.runs, args.keys, args.steps)
        return 0
    ratios = {k: bench_store(k, args.runs, args.keys, args.steps, args.repeat, args.peer_repeat)
              for k in kinds}
    print("summary: " + ", ".join(f"{k} {r:.1f}× (target ≥ {TARGETS[k]:.0f}×)"
                                  for k, r in ratios.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
