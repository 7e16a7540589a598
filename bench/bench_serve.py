"""Benchmark `rundiff serve` beside TensorBoard on the same TensorBoard logs.

Prints, for a folder of N TensorBoard runs (1 scalar × 200 points each; N=1,000 by default):
- rundiff serve's listing: server start → `/api/runs`'s first rows, and → every run read; when the
  system Chromium and Playwright are there, the page's first paint of the run table's rows, and
  of every row with its columns;
- TensorBoard's time to first scalars: `tensorboard --logdir` start → its scalars plugin lists
  every run's tags;
and for 2 arms × 3 seeds × P points (journal runs; P=1,000,000 by default) plus a student:
- the compare view, cold (first read), warm (the same view again) and at another step (the
  slider: the runs stay loaded);
- a live update: the student's file grows → the server-sent event that says so arrives.

Inputs are generated once under bench/out/serve/ (gitignored) and reused. A script, not a test:

    .venv/bin/python bench/bench_serve.py            # N=1000, P=1,000,000
    .venv/bin/python bench/bench_serve.py --quick    # N=100,  P=100,000
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "compare"))

from rundiff_core.demo import write_journal_run  # noqa: E402


def write_tb_folder(root: str, n: int) -> None:
    from tensorboardX import SummaryWriter

    if os.path.isdir(root) and len(os.listdir(root)) == n:
        return
    shutil.rmtree(root, ignore_errors=True)
    for i in range(n):
        with SummaryWriter(os.path.join(root, f"run-{i:04d}"), flush_secs=3600) as w:
            for s in range(200):
                w.add_scalar("loss", 3.0 - 0.01 * s + 0.001 * i, s, walltime=1.7e9 + s)


def write_arms(root: str, points: int) -> dict[str, list[str]]:
    marker = os.path.join(root, f"done-{points}")
    out: dict[str, list[str]] = {"a": [], "b": []}
    for arm in ("a", "b"):
        for seed in range(3):
            out[arm].append(os.path.join(root, arm, f"seed-{seed}"))
    out["student"] = [os.path.join(root, "student")]
    if os.path.exists(marker):
        return out
    shutil.rmtree(root, ignore_errors=True)
    import numpy as np

    steps = np.arange(points)
    for arm, lr in (("a", 0.001), ("b", 0.002)):
        for seed, path in enumerate(out[arm]):
            rng = np.random.default_rng(seed)
            loss = 1 + 2 * np.exp(-steps / (points / 4)) + rng.normal(0, 0.01, points)
            os.makedirs(path, exist_ok=True)
            with open(os.path.join(path, "metrics.jsonl"), "w") as fh:
                fh.writelines(f'{{"step": {s}, "loss": {v:.6f}}}\n' for s, v in zip(steps, loss,
                                                                                  strict=True))
            write_journal_run(path, config={"lr": lr, "seed": seed}, rows=(), seed=seed,
                              final={"status": "finished"})
            # write_journal_run truncated metrics.jsonl: write the points again
            with open(os.path.join(path, "metrics.jsonl"), "w") as fh:
                fh.writelines(f'{{"step": {s}, "loss": {v:.6f}}}\n' for s, v in zip(steps, loss,
                                                                                  strict=True))
    write_journal_run(out["student"][0], config={"lr": 0.003, "seed": 0},
                      rows=[{"step": s, "loss": 3.0 - s / points} for s in range(0, points // 2, 100)],
                      seed=0)
    open(marker, "w").close()
    return out


def start(sources: list[str]):
    from rundiff.serve.server import prepare

    launch = prepare(sources, port=0, poll_every=0.25)
    thread = threading.Thread(target=launch.run, daemon=True)
    thread.start()
    while not launch.server.started:
        time.sleep(0.01)
    return launch, thread


def get(url: str, token: str, timeout: float = 600) -> bytes:
    req = urllib.request.Request(url, headers={"Authorization": f"token {token}"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 - loopback
        return resp.read()


def rundiff_first_listing(folder: str, n: int) -> tuple[float, float, float | None, float | None]:
    """(start → first rows answered, start → every run read, URL opened → first rows painted,
    URL opened → every row's columns painted)."""
    t0 = time.perf_counter()
    launch, _thread = start([folder])
    base, token = launch.url.split("/?token=")
    data = json.loads(get(base + "/api/runs", token))
    assert data["runs"], data["errors"]
    first = time.perf_counter() - t0
    data = json.loads(get(base + "/api/runs?complete=1", token))
    assert len(data["runs"]) == n, (len(data["runs"]), data["errors"])
    listing = time.perf_counter() - t0
    paint = complete = None
    from compare_browser import find_chromium, open_page

    chromium = find_chromium()
    if chromium:
        launch.server.should_exit = True
        time.sleep(0.5)
        launch, _thread = start([folder])  # a fresh server: reading starts at its start
        with open_page(launch.url, chromium, timeout=600) as page:
            page.wait_for("window.rundiffRunsReady === true", 600)
            paint = page.evaluate("window.rundiffRunsReadyAt") / 1000  # since navigation start
            page.wait_for("window.rundiffRunsComplete === true", 600)
            complete = page.evaluate("window.rundiffRunsCompleteAt") / 1000
    launch.server.should_exit = True
    return first, listing, paint, complete
def tensorboard_first_scalars(folder: str, n: int) -> float | None:
    exe = shutil.which("tensorboard") or os.path.join(os.path.dirname(sys.executable), "tensorboard")
    if not os.path.exists(exe):
        return None
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.perf_counter()
    proc = subprocess.Popen([exe, "--logdir", folder, "--port", str(port), "--host", "127.0.0.1",
                             "--load_fast", "false"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while time.perf_counter() - t0 < 900:
            try:
                with urllib.request.urlopen(  # noqa: S310 - loopback
                        f"http://127.0.0.1:{port}/data/plugin/scalars/tags", timeout=30) as r:
                    tags = json.loads(r.read())
                if len(tags) >= n:
                    return time.perf_counter() - t0
            except OSError:
                pass
            time.sleep(0.1)
        return None
    finally:
        proc.terminate()
        proc.wait(10)


def compare_and_live(arms: dict[str, list[str]]) -> tuple[float, float, float, float]:
    launch, _thread = start([os.path.dirname(arms["student"][0])])
    base, token = launch.url.split("/?token=")
    listing = json.loads(get(base + "/api/runs", token))
    addresses = [r["address"] for r in listing["runs"] if "/a/" in r["address"]
                 or "/b/" in r["address"]]
    query = "&".join("a=" + urllib.request.quote(a, safe="") for a in addresses)
    t0 = time.perf_counter()
    data = json.loads(get(f"{base}/api/compare?{query}&width=1200", token))
    cold = time.perf_counter() - t0
    assert "compare" in data, data
    t0 = time.perf_counter()
    get(f"{base}/api/compare?{query}&width=1200", token)
    warm = time.perf_counter() - t0
    t0 = time.perf_counter()  # the slider: another step, from the runs already loaded
    get(f"{base}/api/compare?{query}&width=1200&step=250000", token)
    slider = time.perf_counter() - t0
    # live: open the event stream, grow the student, time the event
    req = urllib.request.Request(base + "/api/events", headers={"Authorization": f"token {token}"})
    stream = urllib.request.urlopen(req, timeout=60)  # noqa: S310 - loopback
    stream.readline()
    student = arms["student"][0]
    time.sleep(0.5)
    t0 = time.perf_counter()
    with open(os.path.join(student, "metrics.jsonl"), "a") as fh:
        fh.write(json.dumps({"step": 10**9, "loss": 0.5}) + "\n")
    while True:
        line = stream.readline().decode()
        if line.startswith("event: changed"):
            live = time.perf_counter() - t0
            break
    stream.close()
    launch.server.should_exit = True
    return cold, warm, slider, live


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--runs", type=int)
    ap.add_argument("--points", type=int)
    args = ap.parse_args()
    n = args.runs or (100 if args.quick else 1000)
    points = args.points or (100_000 if args.quick else 1_000_000)
    out = os.path.join(HERE, "out", "serve")
    tb = os.path.join(out, f"tb-{n}")
    print(f"writing inputs under {out} (once)…", file=sys.stderr)
    write_tb_folder(tb, n)
    arms = write_arms(os.path.join(out, f"arms-{points}"), points)
    first, listing, paint, complete = rundiff_first_listing(tb, n)
    tb_time = tensorboard_first_scalars(tb, n)
    cold, warm, slider, live = compare_and_live(arms)
    print(f"{n} TensorBoard runs × 200 points")
    print(f"  rundiff serve: start → /api/runs, first rows  {first:7.2f} s")
    print(f"  rundiff serve: start → every run read         {listing:7.2f} s")
    if paint is not None:
        print(f"  rundiff serve: URL opened → first rows painted {paint:6.2f} s  (target ≤ 1.5 s)")
        print(f"  rundiff serve: URL opened → every row painted  {complete:6.2f} s")
    print("  TensorBoard:   start → scalars of every run    "
          + (f"{tb_time:7.2f} s" if tb_time is not None else "   n/a (tensorboard not found)"))
    print(f"2 arms × 3 seeds × {points:,} points + a student")
    print(f"  compare view, first read                      {cold:7.2f} s")
    print(f"  compare view, again                           {warm:7.2f} s  (target ≤ 0.3 s)")
    print(f"  compare view, slider to another step          {slider:7.2f} s")
    print(f"  live update: file grows → event arrives       {live:7.2f} s  (target ≤ 2 s)")

if __name__ == "__main__":
    main()
