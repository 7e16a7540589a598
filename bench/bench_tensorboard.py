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
Baseline: the raw TFRecord record loop over the same bytes — each record's length and both
masked CRC32Cs checked (the C `crc32c` package), the Event parsed by protobuf's C parser
(`Event.FromString`), each scalar's tag, step, value and wall time appended to lists — the
fastest plain reader Python has. Goal: rundiff within 1.5× of it. The log is written by each
SummaryWriter installed — tensorboardX's and torch's `torch.utils.tensorboard` — and benched
once per writer, its version printed (TF2's `tf.summary` needs TensorFlow, which the project does
not install; the bench says so). A ratio under its goal is printed as "below goal".
Usage: python bench/bench_tensorboard.py [--events N] [--quick] [--repeat R] [--writer tensorboardX|torch]…
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
RAW_GOAL = 1.5  # rundiff's time over the raw record loop's, at most
_MASK_DELTA = 0xA282EAD8


WRITERS = ("tensorboardX", "torch")  # the SummaryWriters users have; TF2's needs TensorFlow


def writer_versions(writer: str) -> str:
    """Which writer made the log, and whether TF2's `tf.summary` is here."""
    from importlib.metadata import PackageNotFoundError, version

    if writer == "torch":
        out = f"torch {version('torch')} torch.utils.tensorboard.SummaryWriter (add_scalar)"
    else:
        out = f"tensorboardX {version('tensorboardX')} SummaryWriter (add_scalar)"
    try:
        out += f"; TF2 writer installed (tensorflow {version('tensorflow')}) but not benched"
    except PackageNotFoundError:
        out += "; TF2 writer (tensorflow) not installed: not benched"
    return out


def has_writer(writer: str) -> bool:
    import importlib.util

    return importlib.util.find_spec("torch" if writer == "torch" else "tensorboardX") is not None


def raw_record_loop(run_dir: str) -> int:
    """The raw TFRecord loop: framing with both CRCs, Event.FromString, scalars into lists."""
    import struct

    import crc32c
    from tensorboard.compat.proto import event_pb2

    def masked(data) -> int:
        c = crc32c.crc32c(data)
        return (((c >> 15) | (c << 17)) + _MASK_DELTA) & 0xFFFFFFFF

    u64, u32 = struct.Struct("<Q"), struct.Struct("<I")
    parse = event_pb2.Event.FromString
    tags: list[str] = []
    steps: list[int] = []
    values: list[float] = []
    walls: list[float] = []
    for name in sorted(os.listdir(run_dir)):
        with open(os.path.join(run_dir, name), "rb") as fh:
            data = fh.read()
        mv, pos, n = memoryview(data), 0, len(data)
        while pos + 12 <= n:
            (length,) = u64.unpack_from(data, pos)
            if u32.unpack_from(data, pos + 8)[0] != masked(mv[pos : pos + 8]):
                raise ValueError("length CRC mismatch")
            body = mv[pos + 12 : pos + 12 + length]
            if u32.unpack_from(data, pos + 12 + length)[0] != masked(body):
                raise ValueError("data CRC mismatch")
            pos += 16 + length
            ev = parse(body)
            for v in ev.summary.value:
                if v.WhichOneof("value") == "simple_value":
                    tags.append(v.tag)
                    steps.append(ev.step)
                    values.append(v.simple_value)
                    walls.append(ev.wall_time)
    columns = (tags, np.asarray(steps, dtype="float64"), np.asarray(values), np.asarray(walls))
    return len(columns[2])


def write_log(run_dir: str, events: int, writer: str = "tensorboardX") -> None:
    """One run written by `writer`'s SummaryWriter, tags interleaved like a training loop logs
    them."""
    if writer == "torch":
        from torch.utils.tensorboard import SummaryWriter
    else:
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
    ap.add_argument("--writer", choices=WRITERS, action="append",
                    help="the SummaryWriter(s) to write the log with (default: every one installed)")
    args = ap.parse_args()
    events = 100_000 if args.quick else args.events
    ok = True
    for writer in args.writer or [w for w in WRITERS if has_writer(w)]:
        print(f"\n== log written by {writer} ==", flush=True)
        ok &= bench_one(writer, events, args.repeat)
    return 0 if ok else 1


def bench_one(writer: str, events: int, repeat: int) -> bool:
    """One log written by `writer`: in process against both peers and the raw loop, then whole
    process. True when every ratio met its goal."""
    args = argparse.Namespace(repeat=repeat)
    suffix = "" if writer == "tensorboardX" else f"-{writer}"  # tensorboardX logs keep their cache
    run_dir = os.path.join(HERE, "out", f"tb-{events}{suffix}", "run")
    if not os.path.isdir(run_dir):
        os.makedirs(os.path.dirname(run_dir), exist_ok=True)
        print(f"writing {events:,} scalar events with {writer} to {run_dir} (cached) …",
              flush=True)
        t = time.perf_counter()
        write_log(run_dir, events, writer)
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
    best_raw: tuple[float, float, int] | None = None
    for _ in range(max(1, args.repeat)):  # interleaved with the raw loop, best of R for each
        got = timed(rundiff_load)
        best = got if best is None or got[0] < best[0] else best
        raw = timed(lambda: raw_record_loop(run_dir))
        best_raw = raw if best_raw is None or raw[0] < best_raw[0] else best_raw
    t_rd, c_rd, (run, hist) = best
    t_raw, c_raw, raw_points = best_raw

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
    assert raw_points == events, (raw_points, events)
    print(f"written by {writer_versions(writer)}")
    print(f"events: {events:,}  tags: {len(ea)}  file: {size / 1e6:.1f} MB  records: "
          f"{sum(f['records'] for f in files):,} (both CRCs of each verified; damage notes: "
          f"{len(damaged)})")
    print(f"rundiff load_run(...).history():        {t_rd:7.3f} s wall  {c_rd:7.3f} s cpu  "
          f"(best of {args.repeat})")
    print(f"EventAccumulator Reload + Scalars(tag):  {t_ea:7.3f} s wall  {c_ea:7.3f} s cpu")
    print(f"tbparse SummaryReader(...).scalars:      {t_tp:7.3f} s wall  {c_tp:7.3f} s cpu")
    print(f"raw TFRecord loop (CRCs, Event.FromString): {t_raw:7.3f} s wall  {c_raw:7.3f} s cpu  "
          f"(best of {args.repeat})")
    ok = True
    for name, t, c in (("EventAccumulator", t_ea, c_ea), ("tbparse", t_tp, c_tp)):
        ratio = t / t_rd
        ok &= ratio >= TARGET
        print(f"ratio: rundiff is {ratio:.1f}× faster than {name} (cpu {c / c_rd:.1f}×; target "
              f"≥ {TARGET:.0f}×) — {'MET' if ratio >= TARGET else 'NOT MET'}")
        if ratio < TARGET:
            print(f"below goal: {ratio:.1f}× {name} in process (goal ≥ {TARGET:.0f}×)")
    over = t_rd / t_raw
    print(f"raw parse: rundiff takes {over:.2f}× the raw TFRecord loop's time (cpu "
          f"{c_rd / c_raw:.2f}×; goal ≤ {RAW_GOAL:g}×) — "
          + ("met" if over <= RAW_GOAL else "below goal"))
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
    for name, r in ratios.items():
        if r < TARGET:
            print(f"below goal: {r:.1f}× {name} whole process (goal ≥ {TARGET:.0f}×)")
    ok &= all(r >= TARGET for r in ratios.values())
    return ok


if __name__ == "__main__":
    raise SystemExit(main())
