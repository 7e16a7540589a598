"""W&B adapter vs wandb's own readers, on logs of the installed wandb and of an older writer.

Logs read, each named with the wandb version that wrote it (from the log's header record, else
its telemetry record):

- current writer: one offline run of 3 keys × 333,334 rows (1,000,002 points) written by the
  installed wandb (`wandb.init(mode="offline")`, 3 keys per `run.log`), with what a training
  script also does: `run.summary[...]` set every 1,000 rows (a number and a nested dict) and a key
  set and then deleted. The newest wandb (its Go core) writes a summary record after every history
  row, so the summary fold is half the work. Cached under bench/out/, keyed by the writer version.
- old writer: the committed fixture tests/fixtures/wandb-old-writer/ (wandb 0.16, Python sender:
  one summary record at the end; ~90 KB, so its whole-process time is start-up), and, with
  `--old-python PY` (an interpreter with an older wandb, e.g. a venv made as
  scripts/make_wandb_old_fixture.py says), the bench-size run written by that wandb too.

Readers, side by side in one process (interleaved, best of `repeat`), then as fresh processes:

- rundiff: `load_run(<run folder>)`, `.history()` and `.summary` — framing with every CRC checked,
  metadata, config, status, fidelity notes, every point in the long frame, the summary folded
  from every summary record; whole process the same read in a fresh interpreter (`python -c`,
  every point and the summary: what leet reads), and `rundiff ls RUN --format json` (keys,
  points and steps; it shows no summary, so it folds none);
- plain loop: the same framing, each record parsed with wandb's protobuf classes
  (`wandb_internal_pb2.Record`), each history value with `json.loads`, the summary records
  folded into a dict — what a user writes today, since wandb ships no reader for its
  transaction log any more;
- `wandb leet inspect --json` over the file (wandb's Go reader, one JSON line per record), plus
  `json.loads` of its history lines.

Goals: ≥ 10× leet inspect whole process on the current writer's log (and on a bench-size old
writer's log), ≥ 4× the plain loop in process. A ratio under its goal is printed as "below goal".
Usage: python bench/bench_wandb.py [--rows N] [--quick] [--repeat R] [--old-python PY]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import struct
import subprocess
import sys
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
VENV_BIN = os.path.dirname(sys.executable)
OLD_FIXTURE = os.path.join(ROOT, "tests", "fixtures", "wandb-old-writer")
GOALS = {"leet": 10.0, "plain": 4.0}

GENERATOR = r"""
import math, os, sys
os.environ.update(WANDB_MODE="offline", WANDB_SILENT="true", WANDB_ERROR_REPORTING="false",
                  WANDB_DISABLE_GIT="true", WANDB_DISABLE_CODE="true", WANDB__DISABLE_STATS="true",
                  WANDB_CONSOLE="off")
import wandb
rows, out = int(sys.argv[1]), sys.argv[2]
try:
    settings = wandb.Settings(x_disable_stats=True, console="off")
except Exception:  # older wandb: the environment above says the same
    settings = None
run = wandb.init(project="rundiff-bench", dir=out, config={"lr": 1e-3, "rows": rows},
                 settings=settings)
best = math.inf
for i in range(rows):
    loss = 2.0 * math.exp(-5.0 * i / rows) + 0.01 * math.sin(i)
    run.log({"loss": loss, "acc": 0.5 + 0.4 * i / rows, "lr": 1e-3 * 0.5 ** (i // 50000)})
    best = min(best, loss)
    if i % 1000 == 0:
        run.summary["best_loss"] = best
        run.summary["eval"] = {"acc": 0.5 + 0.4 * i / rows, "at": {"row": i}}
    if i == rows // 2:
        run.summary["tmp"] = i
    if i == rows // 2 + 10:
        del run.summary["tmp"]
run.finish()
"""


def writer_version(python: str) -> str:
    out = subprocess.run([python, "-c", "import importlib.metadata as m; print(m.version('wandb'))"],
                         capture_output=True, text=True, check=True)
    return out.stdout.strip()


def ensure_run(rows: int, python: str = sys.executable) -> str:
    """The cached run folder for `rows` rows by the wandb of `python`, written on first use."""
    version = writer_version(python)
    out = os.path.join(HERE, "out", f"wandb-{rows}-w{version}-s2")
    found = sorted(glob.glob(os.path.join(out, "wandb", "offline-run-*")))
    if found and glob.glob(os.path.join(found[0], "*.wandb")) and os.path.exists(
        os.path.join(out, "done")
    ):
        return found[0]
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    print(f"writing {rows:,} rows with wandb {version} (offline) into {out} (once; minutes) …",
          flush=True)
    t = time.perf_counter()
    subprocess.run([python, "-c", GENERATOR, str(rows), out], check=True)
    log = glob.glob(os.path.join(out, "wandb", "offline-run-*", "*.wandb"))[0]
    wait_until_written(log)
    print(f"  written in {time.perf_counter() - t:.0f} s", flush=True)
    open(os.path.join(out, "done"), "w").close()
    return sorted(glob.glob(os.path.join(out, "wandb", "offline-run-*")))[0]


def wait_until_written(path: str, timeout: float = 300.0) -> None:
    """wandb-core may still be writing the log's tail after the script's `run.finish()`: wait for
    the exit record and a size that holds still."""
    sys.path.insert(0, ROOT)
    from rundiff_adapters.wandb.datastore import read_log

    deadline, size = time.monotonic() + timeout, -1
    while time.monotonic() < deadline:
        now = os.path.getsize(path)
        if now == size and read_log(path, history=False, summary=False).exit is not None:
            return
        size = now
        time.sleep(1.0)
    raise SystemExit(f"{path} still being written after {timeout:.0f} s")


def frames(data: bytes):
    """LevelDB-log framing (32 KiB blocks, CRC-32 of type+data), as any plain reader must do."""
    pos, n, pending = 7, len(data), b""
    while pos + 7 <= n:
        left = 32768 - pos % 32768
        if left < 7:
            pos += left
            continue
        crc, length, kind = struct.unpack_from("<IHB", data, pos)
        if kind == 0 and length == 0:
            pos += left
            continue
        body = data[pos + 7 : pos + 7 + length]
        if zlib.crc32(data[pos + 6 : pos + 7 + length]) != crc:
            raise ValueError("bad crc")
        pos += 7 + length
        if kind == 1:
            yield body
        elif kind == 2:
            pending = body
        elif kind == 3:
            pending += body
        elif kind == 4:
            yield pending + body


def made_by(path: str) -> str:
    """Which wandb wrote the log: its header's producer, else its telemetry's cli_version."""
    from wandb.proto import wandb_internal_pb2 as pb

    with open(path, "rb") as fh:
        data = fh.read(1 << 20)
    try:
        for i, payload in enumerate(frames(data)):
            rec = pb.Record()
            rec.ParseFromString(payload)
            kind = rec.WhichOneof("record_type")
            if kind == "header" and rec.header.version_info.producer:
                return f"wandb {rec.header.version_info.producer.split('+')[0]} (header record)"
            if kind == "telemetry" and rec.telemetry.cli_version:
                return f"wandb {rec.telemetry.cli_version} (telemetry record)"
            if i > 50:
                break
    except ValueError:
        pass
    return "wandb (version not recorded)"


def plain_loop(path: str) -> int:
    """Each record through wandb's protobuf classes, each history value through json.loads, and
    the summary folded (updates, then removals, record by record) — what rundiff also returns."""
    from wandb.proto import wandb_internal_pb2 as pb

    with open(path, "rb") as fh:
        data = fh.read()
    rows = []
    summary: dict[tuple[str, ...], bytes] = {}
    for payload in frames(data):
        rec = pb.Record()
        rec.ParseFromString(payload)
        kind = rec.WhichOneof("record_type")
        if kind == "history":
            row = {}
            for item in rec.history.item:
                key = "/".join(item.nested_key) if item.nested_key else item.key
                row[key] = json.loads(item.value_json)
            rows.append(row)
        elif kind == "summary":
            for item in rec.summary.update:
                summary[tuple(item.nested_key) or (item.key,)] = item.value_json
            for item in rec.summary.remove:
                summary.pop(tuple(item.nested_key) or (item.key,), None)
    _values = {k: json.loads(v) for k, v in summary.items()}  # the values, as rundiff has them
    return sum(sum(1 for k in r if not k.startswith("_")) for r in rows)


def leet_inspect(path: str) -> int:
    """`wandb leet inspect --json FILE`, history lines parsed."""
    proc = subprocess.run([os.path.join(VENV_BIN, "wandb"), "leet", "inspect", "--json", path],
                          capture_output=True, check=True)
    points = 0
    for line in proc.stdout.splitlines():
        if b'"type":"history"' in line:
            items = json.loads(line)["history"]["item"]
            points += sum(1 for k in items if not k.startswith("_"))
    return points


def timed(fn) -> tuple[float, float, object]:
    """(wall seconds, CPU seconds of this process and its children, result)."""
    import resource

    def cpu() -> float:
        me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime

    w, c = time.perf_counter(), cpu()
    out = fn()
    return time.perf_counter() - w, cpu() - c, out


def verdict(ratio: float, goal: float | None) -> str:
    if goal is None:
        return "(no goal: start-up dominated)"
    return f"(goal ≥ {goal:g}×) — {'met' if ratio >= goal else 'below goal'}"


# the whole-process read that matches leet's: a fresh interpreter, every point, the summary folded
# (every key's points through the columns API, as ls reads them; `history()` would add pandas)
FULL_READ = ("from rundiff_core.resolve import load_run; run = load_run({run_dir!r}); "
             "assert sum(len(run.series(k)[0]) for k in run.metric_keys()) == run.n_points() > 0; "
             "assert run.summary")


def bench_log(label: str, run_dir: str, repeat: int, *, goal: float | None,
              expect_points: int | None) -> dict[str, float]:
    """One log: in-process then whole-process, ratios printed with their goals."""
    path = glob.glob(os.path.join(run_dir, "*.wandb"))[0]
    from rundiff_core.resolve import load_run

    def rundiff_load():
        run = load_run(run_dir)
        history = run.history()
        _ = run.summary  # folded from every summary record
        return history

    best: dict[str, list[float]] = {"rundiff": [1e9, 1e9], "plain": [1e9, 1e9], "leet": [1e9, 1e9]}
    counts: dict[str, int] = {}
    for i in range(repeat):
        runs = [("rundiff", rundiff_load), ("plain", lambda: plain_loop(path))]
        if i == 0:
            runs.append(("leet", lambda: leet_inspect(path)))
        for name, fn in runs:
            wall, cpu, out = timed(fn)
            best[name] = [min(best[name][0], wall), min(best[name][1], cpu)]
            counts[name] = len(out) if name == "rundiff" else out
    assert counts["plain"] == counts["leet"], counts
    if expect_points is not None:
        assert counts["rundiff"] == expect_points == counts["plain"], counts
    print(f"\n[{label}] {path}")
    print(f"[{label}] written by {made_by(path)}; {os.path.getsize(path) / 1e6:.2f} MB, "
          f"points: rundiff {counts['rundiff']:,}, peers {counts['plain']:,} (best of {repeat}; "
          "leet once)")
    print("                                                            wall      CPU")
    labels = {"rundiff": "rundiff load_run + history() + summary                ",
              "plain": "plain loop (wandb protobuf classes + json.loads)       ",
              "leet": "wandb leet inspect --json (+ json of history lines)    "}
    for name in ("rundiff", "plain", "leet"):
        print(f"  {labels[name]}  {best[name][0]:7.3f} s {best[name][1]:7.3f} s")
    for name in ("plain", "leet"):
        rw = best[name][0] / best["rundiff"][0]
        rc = best[name][1] / best["rundiff"][1]
        target = GOALS[name] if goal is not None else None
        print(f"  in-process ratio vs {name:5s}: {rw:5.1f}× wall, {rc:5.1f}× CPU {verdict(rw, target)}")
    from wholeprocess import best_of, python_code, rundiff_ls

    peer = "wandb leet inspect --json"
    full = "rundiff: history + summary"
    listing = "rundiff ls --format json"
    best = best_of({full: python_code(FULL_READ.format(run_dir=run_dir)), listing: rundiff_ls(run_dir),
                    peer: [os.path.join(VENV_BIN, "wandb"), "leet", "inspect", "--json", path]},
                   repeat=repeat)
    print(f"whole process (fresh interpreter, best of {repeat}):")
    for name, (wall, cpu) in best.items():
        print(f"  {name:<34s} {wall:7.3f} s wall {cpu:7.3f} s cpu")
    ratios = {}
    for name, note in ((full, "every point and the summary folded from every summary record, as "
                              "leet reads every record"),
                       (listing, "keys, points, steps: ls shows no summary, so folds none")):
        ratios[name] = best[peer][0] / best[name][0]
        print(f"  [{label}] whole-process ratio, {name} vs {peer}: {ratios[name]:.1f}× wall, "
              f"{best[peer][1] / best[name][1]:.1f}× cpu {verdict(ratios[name], goal)} ({note})")
    return ratios


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=333_334)
    ap.add_argument("--quick", action="store_true", help="33,334 rows")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--old-python", help="an interpreter with an older wandb: write and read the "
                    "bench-size log with it too")
    args = ap.parse_args()
    rows = 33_334 if args.quick else args.rows
    sys.path.insert(0, ROOT)
    print(f"installed wandb (current writer): {writer_version(sys.executable)}; old-writer fixture: "
          + open(os.path.join(OLD_FIXTURE, "VERSION")).read().strip())
    below: list[str] = []
    logs = [(f"current writer, {rows:,} rows", ensure_run(rows), GOALS["leet"], 3 * rows)]
    if args.old_python:
        logs.append((f"old writer, {rows:,} rows", ensure_run(rows, args.old_python), GOALS["leet"],
                     3 * rows))
    fixture = sorted(glob.glob(os.path.join(OLD_FIXTURE, "offline-run-*")))[0]
    logs.append(("old-writer fixture", fixture, None, None))
    for label, run_dir, goal, points in logs:
        ratios = bench_log(label, run_dir, args.repeat, goal=goal, expect_points=points)
        for name, r in ratios.items():
            if goal is not None and r < goal:
                below.append(f"{label}: {name} {r:.1f}× whole process (goal ≥ {goal:g}×)")
    print("\nbelow goal: " + ("; ".join(below) if below else "none"))
    return 1 if below else 0


if __name__ == "__main__":
    raise SystemExit(main())
