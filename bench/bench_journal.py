"""Journal adapter vs pandas.read_json(lines=True) on a 1,000,000-row metrics.jsonl.

In-process, both read the same file in one interpreter; rundiff also reshapes to the long history
frame (every point), so it does strictly more work than the peer. Whole-process, each is a fresh
interpreter: `rundiff ls RUN --format json` (every point counted) against a `python -c` that reads
the file with pandas; `rundiff ls` on a 5-line run and `import numpy` show the start-up floor.
Target: ≥ 5× faster, whole process. Usage: python bench/bench_journal.py [--rows N] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np
import pandas as pd

HERE = os.path.dirname(os.path.abspath(__file__))


def write_metrics(path: str, rows: int) -> None:
    rng = np.random.default_rng(0)
    loss = 2.0 * np.exp(-np.arange(rows) / rows * 5) + rng.normal(0, 0.01, rows)
    with open(path, "w") as fh:
        for i in range(rows):
            rec = {"step": i, "loss": round(float(loss[i]), 6), "lr": 3e-4, "time": 1.7e9 + i * 0.1}
            if i % 100 == 0:
                rec["eval/acc"] = round(float(0.5 + i / rows / 3), 6)
            fh.write(json.dumps(rec) + "\n")


def best_of(fn, repeat: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


RAW_GOAL = 1.5  # rundiff's read over the fastest library's raw parse of the same bytes, at most


def raw_parse(run_dir: str, path: str, repeat: int) -> float:
    """The journal's read to columns (every point, no DataFrame) against `polars.read_ndjson` of
    the same file — the fastest JSON-lines parser Python has (Rust, all cores), which only parses:
    no keys per point, no step checks, no notes. Interleaved, best of `repeat`, CPU beside wall."""
    import polars as pl

    from rundiff_core.resolve import load_run

    def timed(fn):
        w, c = time.perf_counter(), time.process_time()
        out = fn()
        return time.perf_counter() - w, time.process_time() - c, out

    best = {"rundiff": (1e9, 1e9), "polars": (1e9, 1e9)}
    for _ in range(repeat):
        for name, fn in (("rundiff", lambda: load_run(f"journal:{run_dir}").n_points()),
                         ("polars", lambda: pl.read_ndjson(path).height)):
            w, c, _out = timed(fn)
            if w < best[name][0]:
                best[name] = (w, c)
    ratio = best["rundiff"][0] / best["polars"][0]
    print(f"raw parse: rundiff columns {best['rundiff'][0]:.3f} s wall / {best['rundiff'][1]:.3f} s CPU, "
          f"polars {pl.__version__} read_ndjson {best['polars'][0]:.3f} s wall / {best['polars'][1]:.3f} s CPU "
          f"(its threads summed): rundiff takes {ratio:.2f}× its wall time, "
          f"{best['rundiff'][1] / best['polars'][1]:.2f}× its CPU "
          f"({'met' if ratio <= RAW_GOAL else 'below goal'}: goal ≤ {RAW_GOAL}×)")
    return ratio


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--quick", action="store_true", help="100,000 rows")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    rows = 100_000 if args.quick else args.rows
    run_dir = os.path.join(HERE, "out", f"journal-{rows}")
    path = os.path.join(run_dir, "metrics.jsonl")
    if not os.path.exists(path):
        os.makedirs(run_dir, exist_ok=True)
        print(f"writing {rows:,} rows to {path} …")
        write_metrics(path, rows)

    sys.path.insert(0, os.path.dirname(HERE))
    from rundiff_core.resolve import load_run

    def rundiff_load():
        return load_run(f"journal:{run_dir}").history()

    def pandas_load():
        return pd.read_json(path, lines=True)

    t_rd, hist = best_of(rundiff_load, args.repeat)
    t_pd, frame = best_of(pandas_load, max(1, args.repeat - 1))
    expected_points = int(frame[["loss", "lr", "time"]].count().sum() - frame["time"].count()
                          + frame["eval/acc"].count())
    assert len(hist) == expected_points, (len(hist), expected_points)
    print(f"rows: {rows:,}  points: {len(hist):,}  file: {os.path.getsize(path) / 1e6:.1f} MB")
    print(f"rundiff journal load (long frame): {t_rd:.3f} s")
    print(f"pandas.read_json(lines=True):      {t_pd:.3f} s")
    ratio = t_pd / t_rd
    print(f"in-process ratio: rundiff is {ratio:.1f}× faster than pandas.read_json (target ≥ 5×) — "
          f"{'MET' if ratio >= 5 else 'NOT MET'}")
    raw_parse(run_dir, path, args.repeat)
    from wholeprocess import compare, python_code, rundiff_ls

    tiny_dir = os.path.join(HERE, "out", "journal-5")
    if not os.path.exists(os.path.join(tiny_dir, "metrics.jsonl")):
        os.makedirs(tiny_dir, exist_ok=True)
        write_metrics(os.path.join(tiny_dir, "metrics.jsonl"), 5)
    compare({"rundiff": rundiff_ls(f"journal:{run_dir}"),
             "pandas.read_json": python_code(
                 f"import pandas as pd; pd.read_json({path!r}, lines=True)"),
             "python -c 'import pandas'": python_code("import pandas"),
             "rundiff ls, 5-line run (start-up)": rundiff_ls(f"journal:{tiny_dir}"),
             "python -c 'import numpy'": python_code("import numpy")},
            repeat=args.repeat, targets={"pandas.read_json": 5})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
