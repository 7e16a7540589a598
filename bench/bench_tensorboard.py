"""TensorBoard adapter vs tbparse and EventAccumulator on one run of 1,000,000 scalar events.

The log (3 tags, 1,000,000 scalar events in total) is written once by a real writer
(tensorboardX's SummaryWriter) and cached under bench/out/. In one process, each reader loads
every point:
  - rundiff: `load_run("tb:RUN").history()` — TFRecord framing with both CRCs of every record
    verified (in numpy for short records, by the C crc32c package for long ones), Event protos
    decoded vectorised, the history columns built;
  - tbparse: `SummaryReader(RUN).scalars` (`.tensors` for a TF2 log: tbparse puts TF2's
    tensor-encoded scalars there, not under `.scalars`);
  - EventAccumulator: `EventAccumulator(RUN, size_guidance={'scalars': 0, 'tensors': 0}).Reload()`
    then `Scalars(tag)` for every tag, and for a tensor tag whose plugin is 'scalars' (how TF2
    writes a scalar) `Tensors(tag)` with `tensor_util.make_ndarray` on each value.
All three must return the same points (checked). Target: rundiff ≥ 10× faster than both.
Baseline: the raw TFRecord record loop over the same bytes — each record's length and both
masked CRC32Cs checked (the C `crc32c` package), the Event parsed by protobuf's C parser
(`Event.FromString`), each scalar's tag, step, value and wall time appended to lists (a TF2
scalar's float from its tensor_content by `struct`) — the fastest plain reader Python has.
Goal: rundiff within 1.5× of it.

The log is written by each writer users have, and benched once per writer, the version that made
it printed (kept in `writer.txt` beside the cached log): tensorboardX's and torch's
`torch.utils.tensorboard` SummaryWriter (`add_scalar`: `simple_value` scalars), and TF2's
`tf.summary.create_file_writer` + `tf.summary.scalar` (tensor summaries, plugin 'scalars').
TensorFlow is too heavy for the project's venv, so the bench makes a venv of its own once,
bench/out/tf2-venv-<version>/ with `tensorflow-cpu==TF_VERSION` from the package index
(`--tf-find-links DIR` adds a folder of wheels), and runs bench/tf2_writer.py in it; when that
venv can't be made the bench says why and goes on with the other writers. A ratio under its goal
is printed as "below goal".
Usage: python bench/bench_tensorboard.py [--events N] [--quick] [--repeat R]
       [--writer tensorboardX|torch|tf2]… [--no-tf2] [--tf-find-links DIR]
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


WRITERS = ("tensorboardX", "torch", "tf2")  # the writers users have
TF_VERSION = "2.20.0"  # tensorflow-cpu for the TF2 writer's venv (2.21.0 is the newest on PyPI)
TF_VENV = os.path.join(HERE, "out", f"tf2-venv-{TF_VERSION}")
WRITER_API = {
    "tensorboardX": "SummaryWriter (add_scalar)",
    "torch": "torch.utils.tensorboard.SummaryWriter (add_scalar)",
    "tf2": "tf.summary.create_file_writer + tf.summary.scalar (tensor summaries, plugin 'scalars')",
}


def writer_versions(writer: str, log_root: str | None = None) -> str:
    """Which writer made the log: the version recorded when it was written, else the installed
    one."""
    from importlib.metadata import version

    recorded = os.path.join(log_root, "writer.txt") if log_root else None
    if recorded and os.path.isfile(recorded):
        with open(recorded) as fh:
            made_by = fh.read().strip()
    elif writer == "tf2":
        made_by = f"tensorflow-cpu {TF_VERSION}"
    else:
        name = "torch" if writer == "torch" else "tensorboardX"
        made_by = f"{name} {version(name)} (installed; the cached log predates writer.txt)"
    return f"{made_by} {WRITER_API[writer]}"


def has_writer(writer: str) -> bool:
    import importlib.util

    if writer == "tf2":  # in a venv of its own, made when the log is first written
        return True
    return importlib.util.find_spec("torch" if writer == "torch" else "tensorboardX") is not None


def tf2_python(find_links: str | None) -> tuple[str | None, str]:
    """The TF2 writer venv's python, made once under bench/out/ — or (None, why it can't be)."""
    import subprocess

    py = os.path.join(TF_VENV, "bin", "python")
    ready = os.path.join(TF_VENV, ".ready")
    if os.path.isfile(ready):
        return py, f"cached {TF_VENV}"
    import shutil

    shutil.rmtree(TF_VENV, ignore_errors=True)  # a half-made venv from an interrupted run
    print(f"making the TF2 writer's venv {TF_VENV} (tensorflow-cpu=={TF_VERSION}, ~1.5 GB, "
          "once) …", flush=True)
    steps = [[sys.executable, "-m", "venv", TF_VENV],
             [py, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
              f"tensorflow-cpu=={TF_VERSION}", *(["--find-links", find_links] if find_links
                                                  else [])]]
    t = time.perf_counter()
    for argv in steps:
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=1800)
        except (OSError, subprocess.TimeoutExpired) as e:
            return None, f"{argv[2] if argv[1] == '-m' else argv[0]}: {e}"
        if done.returncode:
            tail = [ln for ln in (done.stderr or done.stdout).splitlines()
                    if ln.strip() and "is ignored" not in ln][-3:]
            shutil.rmtree(TF_VENV, ignore_errors=True)
            return None, f"`{' '.join(argv[1:4])}` failed: " + " / ".join(tail)
    open(ready, "w").close()
    print(f"  made in {time.perf_counter() - t:.0f} s")
    return py, f"made {TF_VENV}"


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
    as_scalar = {1: struct.Struct("<f").unpack, 2: struct.Struct("<d").unpack}  # DT_FLOAT, DOUBLE
    plugin_of: dict[str, str] = {}  # a tag's plugin, from its first value with metadata
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
                kind = v.WhichOneof("value")
                if kind == "simple_value":
                    tags.append(v.tag)
                    steps.append(ev.step)
                    values.append(v.simple_value)
                    walls.append(ev.wall_time)
                elif kind == "tensor":  # TF2: a scalar is a tensor of the 'scalars' plugin
                    plugin = plugin_of.get(v.tag)
                    if plugin is None and v.HasField("metadata"):
                        plugin = plugin_of[v.tag] = v.metadata.plugin_data.plugin_name
                    if plugin != "scalars":
                        continue
                    t = v.tensor
                    unpack = as_scalar.get(t.dtype)
                    if unpack is not None and t.tensor_content and not t.tensor_shape.dim:
                        value = unpack(t.tensor_content)[0]
                    else:  # any other encoding: what EventAccumulator's users call
                        from tensorboard.util import tensor_util

                        value = tensor_util.make_ndarray(t).item()
                    tags.append(v.tag)
                    steps.append(ev.step)
                    values.append(value)
                    walls.append(ev.wall_time)
    columns = (tags, np.asarray(steps, dtype="float64"), np.asarray(values), np.asarray(walls))
    return len(columns[2])


def write_log(run_dir: str, events: int, writer: str = "tensorboardX",
              tf_find_links: str | None = None) -> str | None:
    """One run written by `writer`, tags interleaved like a training loop logs them. Returns
    the writer's version (also kept in writer.txt beside `run_dir`), or None with why not
    printed when the TF2 writer's venv can't be made."""
    tmp = run_dir + ".partial"
    if os.path.isdir(tmp):
        for f in os.listdir(tmp):
            os.remove(os.path.join(tmp, f))
    if writer == "tf2":
        import subprocess

        py, how = tf2_python(tf_find_links)
        if py is None:
            print(f"TF2 writer: no venv with tensorflow-cpu=={TF_VERSION} ({how}): not benched")
            return None
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", OMP_NUM_THREADS="1")
        done = subprocess.run([py, os.path.join(HERE, "tf2_writer.py"), tmp, str(events)],
                              capture_output=True, text=True, env=env)
        if done.returncode:
            print(f"TF2 writer failed (exit {done.returncode}): not benched\n"
                  + "\n".join(done.stderr.splitlines()[-5:]))
            return None
        made_by = done.stdout.strip().splitlines()[-1]
    else:
        from importlib.metadata import version

        if writer == "torch":
            from torch.utils.tensorboard import SummaryWriter
            made_by = f"torch {version('torch')}"
        else:
            from tensorboardX import SummaryWriter
            made_by = f"tensorboardX {version('tensorboardX')}"
        rng = np.random.default_rng(0)
        values = (2.0 * np.exp(-np.arange(events) / events * 5)
                  + rng.normal(0, 0.01, events)).tolist()
        w = SummaryWriter(tmp, max_queue=10_000, flush_secs=3600)
        t0 = 1.7e9
        for i in range(events):
            w.add_scalar(TAGS[i % 3], values[i], i // 3, walltime=t0 + i * 0.01)
        w.close()
    with open(os.path.join(os.path.dirname(run_dir), "writer.txt"), "w") as fh:
        fh.write(made_by + "\n")
    os.replace(tmp, run_dir)
    return made_by


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
                    help="the writer(s) to write the log with (default: every one there)")
    ap.add_argument("--no-tf2", action="store_true",
                    help="skip the TF2 writer (whose venv is made on first use)")
    ap.add_argument("--tf-find-links", metavar="DIR",
                    help="a folder of wheels for pip to use first when making the TF2 venv")
    args = ap.parse_args()
    events = 100_000 if args.quick else args.events
    ok = True
    writers = args.writer or [w for w in WRITERS if has_writer(w)
                              and not (w == "tf2" and args.no_tf2)]
    benched, not_benched = [], [w for w in WRITERS if w not in writers]
    for writer in writers:
        print(f"\n== log written by {writer} ==", flush=True)
        got = bench_one(writer, events, args.repeat, args.tf_find_links)
        if got is None:
            not_benched.append(writer)
        else:
            ok &= got
            benched.append(writer)
    print(f"\nwriters benched: {', '.join(benched) or 'none'}; not benched: "
          f"{', '.join(not_benched) or 'none'}")
    return 0 if ok else 1


def bench_one(writer: str, events: int, repeat: int, tf_find_links: str | None = None
              ) -> bool | None:
    """One log written by `writer`: in process against both peers and the raw loop, then whole
    process. True when every ratio met its goal; None when the log could not be written."""
    args = argparse.Namespace(repeat=repeat)
    suffix = {"tensorboardX": "", "torch": "-torch",  # tensorboardX logs keep their cache
              "tf2": f"-tf2-{TF_VERSION}"}[writer]
    run_dir = os.path.join(HERE, "out", f"tb-{events}{suffix}", "run")
    if not os.path.isdir(run_dir):
        os.makedirs(os.path.dirname(run_dir), exist_ok=True)
        print(f"writing {events:,} scalar events with {writer} to {run_dir} (cached) …",
              flush=True)
        t = time.perf_counter()
        if write_log(run_dir, events, writer, tf_find_links) is None:
            return None
        print(f"  written in {time.perf_counter() - t:.0f} s")
    tensors = writer == "tf2"  # TF2's scalars are tensors: tbparse and EventAccumulator say so

    sys.path.insert(0, os.path.dirname(HERE))
    import tbparse
    from tensorboard.backend.event_processing.event_accumulator import (
        EventAccumulator,
        ScalarEvent,
    )
    from tensorboard.util.tensor_util import make_ndarray

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
        out = {tag: acc.Scalars(tag) for tag in acc.Tags()["scalars"]}
        for tag in acc.Tags()["tensors"]:  # TF2: scalars are tensors of the 'scalars' plugin
            if acc.SummaryMetadata(tag).plugin_data.plugin_name == "scalars":
                out[tag] = [ScalarEvent(e.wall_time, e.step, make_ndarray(e.tensor_proto).item())
                            for e in acc.Tensors(tag)]
        return out

    tp_attr = "tensors" if tensors else "scalars"
    t_ea, c_ea, ea = timed(ea_load)
    t_tp, c_tp, tp = timed(lambda: getattr(tbparse.SummaryReader(run_dir), tp_attr))

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
    print(f"written by {writer_versions(writer, os.path.dirname(run_dir))}")
    print(f"events: {events:,}  tags: {len(ea)}  file: {size / 1e6:.1f} MB  records: "
          f"{sum(f['records'] for f in files):,} (both CRCs of each verified; damage notes: "
          f"{len(damaged)})")
    ea_label = "Reload + Tensors(tag) + make_ndarray" if tensors else "Reload + Scalars(tag)"
    print(f"rundiff load_run(...).history():        {t_rd:7.3f} s wall  {c_rd:7.3f} s cpu  "
          f"(best of {args.repeat})")
    print(f"EventAccumulator {ea_label}:  {t_ea:7.3f} s wall  {c_ea:7.3f} s cpu")
    print(f"tbparse SummaryReader(...).{tp_attr}:      {t_tp:7.3f} s wall  {c_tp:7.3f} s cpu")
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

    ea_code = ("from tensorboard.backend.event_processing.event_accumulator import "
               f"EventAccumulator as E; a = E({run_dir!r}, size_guidance={{'scalars': 0, "
               "'tensors': 0}); a.Reload(); [a.Scalars(t) for t in a.Tags()['scalars']]")
    if tensors:
        ea_code += ("; from tensorboard.util.tensor_util import make_ndarray as m; "
                    "[[m(e.tensor_proto).item() for e in a.Tensors(t)] for t in a.Tags()"
                    "['tensors'] if a.SummaryMetadata(t).plugin_data.plugin_name == 'scalars']")
    ratios = compare(
        {"rundiff": rundiff_ls(f"tb:{run_dir}"),
         "tbparse": python_code(f"import tbparse; tbparse.SummaryReader({run_dir!r}).{tp_attr}"),
         "EventAccumulator": python_code(ea_code)},
        repeat=args.repeat, targets={"tbparse": TARGET, "EventAccumulator": TARGET})
    for name, r in ratios.items():
        if r < TARGET:
            print(f"below goal: {r:.1f}× {name} whole process (goal ≥ {TARGET:.0f}×)")
    ok &= all(r >= TARGET for r in ratios.values())
    return ok


if __name__ == "__main__":
    raise SystemExit(main())
