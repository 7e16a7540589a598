"""W&B adapter vs wandb's own readers on one offline run of 3 keys × 333,334 rows (1,000,002 points).

The run is written once by the real client (`wandb.init(mode="offline")`, 3 keys per `run.log`)
and cached under bench/out/. Three readers, side by side in one process:

- rundiff: `load_run(<run folder>).history()` — framing with every CRC checked, the run's
  metadata, config, exit status and fidelity notes, every point in the long history frame. (The
  summary is folded from the log when first read, which `diff` and `ls` never do; reading it
  costs about as much again.)
- plain loop: the same framing, each record parsed with wandb's protobuf classes
  (`wandb_internal_pb2.Record`) and each history value with `json.loads` — what a user writes
  today, since wandb ships no reader for its transaction log any more.
- `wandb leet inspect --json` over the file (wandb's Go reader, one JSON line per record), plus
  `json.loads` of its history lines.

Targets: ≥ 4× faster than the plain loop, ≥ 10× faster than leet inspect.
Usage: python bench/bench_wandb.py [--rows N] [--quick] [--repeat R]
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

GENERATOR = r"""
import math, os, sys
os.environ.update(WANDB_MODE="offline", WANDB_SILENT="true", WANDB_ERROR_REPORTING="false",
                  WANDB_DISABLE_GIT="true", WANDB_DISABLE_CODE="true", WANDB__DISABLE_STATS="true")
import wandb
rows, out = int(sys.argv[1]), sys.argv[2]
run = wandb.init(project="rundiff-bench", dir=out, config={"lr": 1e-3, "rows": rows},
                 settings=wandb.Settings(x_disable_stats=True, console="off"))
for i in range(rows):
    run.log({"loss": 2.0 * math.exp(-5.0 * i / rows) + 0.01 * math.sin(i),
             "acc": 0.5 + 0.4 * i / rows, "lr": 1e-3 * 0.5 ** (i // 50000)})
run.finish()
"""


def ensure_run(rows: int) -> str:
    """The cached run folder for `rows` rows, written by the real client on first use."""
    out = os.path.join(HERE, "out", f"wandb-{rows}")
    found = sorted(glob.glob(os.path.join(out, "wandb", "offline-run-*")))
    if found and glob.glob(os.path.join(found[0], "*.wandb")) and os.path.exists(
        os.path.join(out, "done")
    ):
        return found[0]
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    print(f"writing {rows:,} rows with the real wandb client into {out} (once; a few minutes) …",
          flush=True)
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", GENERATOR, str(rows), out], check=True)
    print(f"  written in {time.perf_counter() - t:.0f} s", flush=True)
    open(os.path.join(out, "done"), "w").close()
    return sorted(glob.glob(os.path.join(out, "wandb", "offline-run-*")))[0]


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


def plain_loop(path: str) -> int:
    """Each record through wandb's protobuf classes, each history value through json.loads."""
    from wandb.proto import wandb_internal_pb2 as pb

    with open(path, "rb") as fh:
        data = fh.read()
    rows = []
    for payload in frames(data):
        rec = pb.Record()
        rec.ParseFromString(payload)
        if rec.WhichOneof("record_type") == "history":
            row = {}
            for item in rec.history.item:
                key = "/".join(item.nested_key) if item.nested_key else item.key
                row[key] = json.loads(item.value_json)
            rows.append(row)
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


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=333_334)
    ap.add_argument("--quick", action="store_true", help="33,334 rows")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    rows = 33_334 if args.quick else args.rows
    run_dir = ensure_run(rows)
    path = glob.glob(os.path.join(run_dir, "*.wandb"))[0]

    sys.path.insert(0, ROOT)
    from rundiff_core.resolve import load_run

    def rundiff_load():
        return load_run(run_dir).history()

    # interleaved, best of `repeat`: the machine may be shared, so each peer gets the same chances
    best: dict[str, list[float]] = {"rundiff": [1e9, 1e9], "plain": [1e9, 1e9], "leet": [1e9, 1e9]}
    counts: dict[str, int] = {}
    for i in range(args.repeat):
        runs = [("rundiff", rundiff_load), ("plain", lambda: plain_loop(path))]
        if i == 0:
            runs.append(("leet", lambda: leet_inspect(path)))
        for name, fn in runs:
            wall, cpu, out = timed(fn)
            best[name] = [min(best[name][0], wall), min(best[name][1], cpu)]
            counts[name] = len(out) if name == "rundiff" else out
    assert counts["rundiff"] == 3 * rows == counts["plain"] == counts["leet"], counts
    print(f"rows: {rows:,}  points: {counts['rundiff']:,}  file: {os.path.getsize(path) / 1e6:.1f} MB"
          f"  (best of {args.repeat}; leet once)")
    print("                                                          wall      CPU")
    labels = {"rundiff": "rundiff wandb load (metadata, config, status, every point)",
              "plain": "plain loop (wandb protobuf classes + json.loads)       ",
              "leet": "wandb leet inspect --json (+ json of history lines)    "}
    for name in ("rundiff", "plain", "leet"):
        print(f"{labels[name]}  {best[name][0]:7.3f} s {best[name][1]:7.3f} s")
    for name, target in (("plain", 4), ("leet", 10)):
        rw = best[name][0] / best["rundiff"][0]
        rc = best[name][1] / best["rundiff"][1]
        print(f"ratio vs {name:5s}: {rw:5.1f}× wall, {rc:5.1f}× CPU (target ≥ {target}×) — "
              f"{'MET' if rw >= target else 'NOT MET'}")
    from wholeprocess import compare, rundiff_ls

    compare({"rundiff": rundiff_ls(run_dir),
             "wandb leet inspect --json": [os.path.join(VENV_BIN, "wandb"), "leet", "inspect",
                                           "--json", path]},
            repeat=args.repeat, targets={"wandb leet inspect --json": 10})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
