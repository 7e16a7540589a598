"""mmengine / OpenMMLab 2.x work dirs: one `<timestamp>/` folder per launch holding
`vis_data/scalars.json` (JSON lines from `LocalVisBackend`, each row with its `step`; a copy as
`vis_data/<timestamp>.json`), `vis_data/config.py` and `<timestamp>.log`, beside the work dir's
`<config>.py` and checkpoints. Also a bare `vis_data/` (several launches' `<timestamp>.json`
and their `scalars.json` appended in one folder).

Train rows (with `lr` / `loss*`) have step = the iteration; validation rows have step = the epoch
when `LoggerHook(log_metric_by_epoch=True)` (the default), else the iteration. Config files are
read as text, never executed (rundiff_core.read_py_config).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

import rundiff_core
from rundiff_core import (
    Claimed,
    JsonLines,
    LayoutFolder,
    LayoutRun,
    config_differences,
    json_lines,
    read_py_config_file,
)
from rundiff_core import read_json_file as read_json

from ..common import Meta
from ..launches import (
    Launch,
    is_number,
    launch_events,
    merge_launches,
    scan_steps,
    split_launches,
)
from ..lazy import pd
from ..sniff import points_frame, read_head

_TS = re.compile(r"^\d{8}_\d{6}$")
_AXIS_FIELDS = ("step", "epoch", "iter")
_SHARED = ("time", "data_time", "epoch", "iter")  # names a val row shares with train rows


def _vis_logs(vis: str) -> list[str]:
    """The scalar files of a `vis_data/` folder: its `<timestamp>.json` files (one per launch)
    or, without them, `scalars.json`."""
    try:
        names = os.listdir(vis)
    except OSError:
        return []
    per_launch = sorted(f for f in names if f.endswith(".json") and _TS.match(f[:-5]))
    if per_launch:
        return per_launch
    return ["scalars.json"] if "scalars.json" in names else []


def _file(*parts: str) -> str | None:
    path = os.path.join(*parts)
    return path if os.path.isfile(path) else None


def _launch_file(folder: str, ts: str) -> str | None:
    return _file(folder, "vis_data", "scalars.json") or _file(folder, "vis_data", f"{ts}.json")


def _looks_like_rows(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            head = fh.read(2048)
    except OSError:
        return False
    return not head.strip() or head.lstrip().startswith(b"{")


def claim(folder: LayoutFolder) -> Claimed | None:
    def found(shape: str, why: str, consumed: set[str]) -> Claimed:
        files = [folder.join(f) for f in folder.files]
        return Claimed([LayoutRun(folder.path, "mmengine", files,
                                  f"mmengine LocalVisBackend: {why}", {"shape": shape})], consumed)

    ts_dirs = [d for d in folder.dirs if _TS.match(d)]
    launches = [d for d in ts_dirs if (f := _launch_file(folder.join(d), d)) and _looks_like_rows(f)]
    base = os.path.basename(folder.path)
    if launches:
        return found("work_dir", f"{len(launches)} launch folder(s) "
                     "<timestamp>/vis_data/scalars.json", set(ts_dirs))
    if "vis_data" in folder.dirs and (logs := _vis_logs(folder.join("vis_data"))) \
            and _looks_like_rows(folder.join("vis_data", logs[0])):
        if _TS.match(base) and logs == ["scalars.json"]:
            return found("launch", f"one launch folder ({base}/vis_data/scalars.json)",
                         {"vis_data"})
        return found("vis_root", f"vis_data/ with {', '.join(logs[:3])}"
                     f"{' …' if len(logs) > 3 else ''}", {"vis_data"})
    if base == "vis_data" and (logs := _vis_logs(folder.path)) \
            and _looks_like_rows(folder.join(logs[0])):
        return found("vis_self", "a vis_data/ folder", set())
    return None


@dataclass
class _LaunchFiles:
    label: str  # the timestamp, or the file name
    scalars: str | None  # its rows
    config: str | None = None  # its vis_data/config.py
    log: str | None = None  # its <timestamp>.log
    test: str | None = None  # <timestamp>/<timestamp>.json (a test launch's metrics)


def _launch_files(spec: LayoutRun) -> list[_LaunchFiles]:
    shape = spec.sniffs.get("shape", "work_dir")
    if shape in ("work_dir", "launch"):
        stamps = [os.path.basename(spec.path)] if shape == "launch" else \
            sorted(d for d in os.listdir(spec.path) if _TS.match(d)
                   and os.path.isdir(os.path.join(spec.path, d)))
        folders = [(ts, spec.path if shape == "launch" else os.path.join(spec.path, ts))
                   for ts in stamps]
        return [_LaunchFiles(ts, _launch_file(f, ts), _file(f, "vis_data", "config.py"),
                             _file(f, f"{ts}.log"), _file(f, f"{ts}.json")) for ts, f in folders]
    vis = spec.path if shape == "vis_self" else os.path.join(spec.path, "vis_data")
    out = [_LaunchFiles(n[:-5] if n != "scalars.json" else n, os.path.join(vis, n))
           for n in _vis_logs(vis)]
    if out:
        out[-1].config = _file(vis, "config.py")
    return out


def config_py(folder: str, name: Any) -> str | None:
    """The config `.py` the Runner dumps in a work dir: `name` when there, else the only `.py`."""
    if isinstance(name, str) and os.path.isfile(os.path.join(folder, name)):
        return os.path.join(folder, name)
    try:
        pys = [f for f in os.listdir(folder) if f.endswith(".py")]
    except OSError:
        return None
    return os.path.join(folder, pys[0]) if len(pys) == 1 else None


def _rel(spec: LayoutRun, path: str) -> str:
    return os.path.relpath(path, spec.path)


def meta(spec: LayoutRun) -> Meta:
    out = Meta()
    launches = _launch_files(spec)
    configs = [lf for lf in launches if lf.config]
    if configs:
        out.config, notes = read_py_config_file(configs[-1].config)  # type: ignore[arg-type]
        out.notes += [n.replace("config.py:", f"{_rel(spec, configs[-1].config)}:", 1)
                      for n in notes]
        if len(launches) > 1:
            out.notes.append("config: the last launch's (" + _rel(spec, configs[-1].config) + ")")
        if len(configs) > 1:
            first, _ = read_py_config_file(configs[0].config)  # type: ignore[arg-type]
            diff = config_differences(first, out.config)
            out.notes.append(f"the launches' config.py differ (first vs last) in {', '.join(diff)}"
                             if diff else "every launch's config.py is the same")
    elif spec.sniffs.get("shape") == "work_dir" and \
            (py := config_py(spec.path, os.path.basename(spec.path) + ".py")) is not None:
        out.config, notes = read_py_config_file(py)
        out.notes += notes
        out.notes.append(f"config: the work dir's {os.path.basename(py)} (the Runner dumps it at "
                         "every launch: the last launch's)")
    else:
        out.notes.append("no config.py in vis_data/ and no single .py in the work dir: no config")
    for lf in launches:
        if lf.test and isinstance(data := read_json(lf.test, out.notes), dict):
            got = {f"test/{k}": v for k, v in data.items() if is_number(v)}
            out.summary.update(got)
            out.notes.append(f"{_rel(spec, lf.test)} (a test launch's metrics) → summary as test/*")
    last_log = next((lf.log for lf in reversed(launches) if lf.log), None)
    if last_log:
        version = _mmengine_version(last_log)
        if version:
            out.meta["mmengine"] = version
    _status(spec, out)
    spans = []
    for lf in launches:
        if lf.scalars:
            for a, b, c in scan_steps(lf.scalars, b"step", _is_train_line):
                spans.append((a, b, f"{_rel(spec, lf.scalars)} line {c}"))
    out.events = launch_events(spans)
    hooks = out.config.get("default_hooks")
    hook = hooks.get("checkpoint") if isinstance(hooks, dict) else None
    if isinstance(hook, dict) and hook.get("save_best"):
        val_keys = _val_keys(launches)
        save_best_goals(out, hook, val_keys, lambda name: name if name in val_keys else
                        f"val/{name}" if f"val/{name}" in val_keys else None,
                        "mmengine CheckpointHook (config default_hooks.checkpoint)")
    return out


def _val_keys(launches: list[_LaunchFiles]) -> list[str]:
    """The metric names of the last launch's first validation row, in its order."""
    for lf in reversed(launches):
        if not lf.scalars:
            continue
        for _n, row in json_lines(lf.scalars, JsonLines("")):
            if not _is_train(row):
                return [k for k, v in row.items() if k not in _AXIS_FIELDS and k not in _SHARED
                        and is_number(v)]
    return []


def _mmengine_version(path: str) -> str | None:
    m = re.search(rb"^\s*MMEngine: (\S+)", read_head(path, 16384), re.M)
    return m.group(1).decode("utf-8", "replace") if m else None


def _status(spec: LayoutRun, out: Meta) -> None:
    """finished when `last_checkpoint` names the checkpoint of the config's last epoch or iteration
    (CheckpointHook always saves the last one)."""
    path = os.path.join(spec.path, "last_checkpoint")
    if not os.path.isfile(path):
        return
    name = os.path.basename(read_head(path, 4096).decode("utf-8", "replace").strip())
    out.meta["last_checkpoint"] = name
    m = re.match(r"^(epoch|iter)_(\d+)\.pth$", name)
    train_cfg = out.config.get("train_cfg")
    train_cfg = train_cfg if isinstance(train_cfg, dict) else {}
    want = {"epoch": train_cfg.get("max_epochs", out.config.get("max_epochs")),
            "iter": train_cfg.get("max_iters", out.config.get("max_iters"))}
    if m and is_number(want[m.group(1)]) and int(m.group(2)) >= int(want[m.group(1)]):
        out.status = "finished"
        out.notes.append(f"status finished: last_checkpoint names {name}, the config's last "
                         f"{m.group(1)} ({want[m.group(1)]})")
    else:
        out.notes.append(f"last_checkpoint names {name}: status unknown")


def _is_train_line(line: bytes) -> bool:
    return b'"lr"' in line or b'"loss' in line


def _is_train(row: dict[str, Any]) -> bool:
    return "lr" in row or any(k.startswith("loss") for k in row)


def history(spec: LayoutRun) -> tuple[pd.DataFrame, list[str]]:
    files = _launch_files(spec)
    notes: list[str] = []
    launches: list[Launch] = []
    sources: list[str] = []  # the file each launch came from (relative)
    axis_of: dict[str, str] = {}
    axis_conflict: set[str] = set()
    train_keys: set[str] = set()
    val_axes: list[str] = []
    degenerate: list[str] = []
    text_values = 0
    no_step = 0
    if not files:
        return rundiff_core.empty_history(), ["no scalars.json in any launch folder"]
    for lf in files:
        if lf.scalars is None:
            notes.append(f"launch {lf.label}: no vis_data/scalars.json (it stopped before its "
                         "first log interval, or ran no training)")
            continue
        rel = _rel(spec, lf.scalars)
        report = JsonLines(rel)
        rows = [row for _n, row in json_lines(lf.scalars, report)]
        stepped = [row for row in rows if is_number(row.get("step"))]
        no_step += len(rows) - len(stepped)
        segments = split_launches(stepped, lambda r: r["step"], _is_train) or [[]]
        notes += report.notes()
        for k, rows in enumerate(s for s in segments if s):
            label = lf.label if len(segments) == 1 else f"{lf.label} part {k + 1}"
            launch, axis, how, skipped = _read_launch(rows, label)
            text_values += skipped
            if launch is None:
                notes.append(f"{rel}: only validation rows (a val-only launch?); not read")
                continue
            launches.append(launch)
            sources.append(rel)
            train_keys.update(k for k, _s, _v in launch.points if not k.startswith("\0"))
            if axis:
                val_axes.append(axis)
            if how:
                degenerate.append(how)
    if not launches:
        return rundiff_core.empty_history(), notes
    # name the keys: a val row's time/data_time (and any name a train row has) get `val/`
    val_names: dict[str, str] = {}
    for launch in launches:
        points = []
        for key, step, value in launch.points:
            if key.startswith("\0"):
                raw, axis = key[1:].rsplit("\0", 1)
                name = f"val/{raw}" if raw in _SHARED or raw in train_keys else raw
                val_names[raw] = name
                if axis_of.get(name, axis) != axis:
                    axis_conflict.add(name)
                axis_of[name] = axis
                points.append((name, step, value))
            else:
                axis_of[key] = "iter"
                points.append((key, step, value))
        launch.points = points
    steps, keys, values, origin, merged = merge_launches(launches, axis_of,
                                                         "launches of this work dir")
    key_files: dict[str, list[str]] = {}
    for key, i in zip(keys, origin, strict=True):
        if sources[i] not in key_files.setdefault(key, []):
            key_files[key].append(sources[i])
    val = sorted(set(val_names.values()))
    train = sorted(train_keys)
    head = (f"{len(files)} launch file(s) read; train keys ({_some(train)}): x = step, the "
            "iteration (1-based)")
    if val:
        axis = val_axes[-1] if val_axes else "epoch"
        head += (f"; validation keys ({_some(val)}): x = "
                 + ("the epoch (mmengine logs validation by epoch: LoggerHook log_metric_by_epoch)"
                    if axis == "epoch" else "the iteration"))
    notes.insert(0, head)
    for how in degenerate:
        notes.append(how)
    if axis_conflict:
        notes.append(f"{_some(sorted(axis_conflict))}: launches logged them on different x "
                     "(epoch in some, iteration in others); the last launch's x is assumed")
    notes += merged
    if no_step:
        notes.append(f"{no_step} row(s) without a numeric step skipped")
    if text_values:
        notes.append(f"{text_values} non-numeric value(s) skipped")
    frame, notes = points_frame(steps, keys, values, None, notes, "scalars.json")
    if len({f for fs in key_files.values() for f in fs}) > 1:
        frame.attrs["key_files"] = {k: " + ".join(v) for k, v in key_files.items()}
    return frame, notes


def _some(keys: list[str], n: int = 4) -> str:
    return ", ".join(keys[:n]) + (f", … {len(keys) - n} more" if len(keys) > n else "")


def _read_launch(rows: list[dict[str, Any]], label: str
                 ) -> tuple[Launch | None, str | None, str | None, int]:
    """One launch's points: train keys at their step (iteration); val keys (marked `\\0name\\0axis`
    until they are named) at their step on the axis the rows show: the epoch, the iteration, or
    — when every val row has the same step (an iteration-based loop logging by epoch writes 0) —
    the step of the train row before each."""
    launch = Launch(label)
    trains = [r for r in rows if _is_train(r)]
    if not trains:
        return None, None, None, 0
    skipped = 0
    launch.starts["iter"] = float(trains[0]["step"])
    if is_number(trains[0].get("epoch")):
        launch.starts["epoch"] = float(trains[0]["epoch"])
    vals = [(i, r) for i, r in enumerate(rows) if not _is_train(r)]
    prev_train: dict[int, dict[str, Any]] = {}
    last = None
    for i, r in enumerate(rows):
        if _is_train(r):
            last = r
        elif last is not None:
            prev_train[i] = last
    votes = {"epoch": 0, "iter": 0}
    for i, r in vals:
        p = prev_train.get(i)
        if p is None:
            continue
        if is_number(p.get("epoch")) and r["step"] == p["epoch"] and r["step"] != p["step"]:
            votes["epoch"] += 1
        elif r["step"] >= p["step"] or (is_number(p.get("epoch")) and r["step"] > p["epoch"]):
            votes["iter"] += 1
    axis = "iter" if votes["iter"] > votes["epoch"] else "epoch"
    how = None
    same = {r["step"] for _i, r in vals}
    stuck = len(vals) > 1 and len(same) == 1 and len(trains) > 1
    if stuck:
        axis = "iter"
        how = (f"launch {label}: its {len(vals)} validation rows all have step "
               f"{next(iter(same)):g} (an iteration-based loop with log_metric_by_epoch: the "
               "epoch counter stays 0): each is placed at the iteration of the train row "
               "before it")
    for i, r in enumerate(rows):
        train = _is_train(r)
        step = float(r["step"])
        if not train and stuck and i in prev_train:
            step = float(prev_train[i]["step"])
        for k, v in r.items():
            if k in _AXIS_FIELDS:
                continue
            if not is_number(v):
                skipped += 1
                continue
            launch.points.append((k if train else f"\0{k}\0{axis}", step, float(v)))
    if vals and axis == "epoch" and "epoch" not in launch.starts:
        launch.starts["epoch"] = float(vals[0][1]["step"])
    steps = [s for k, s, _v in launch.points if not k.startswith("\0")]
    launch.span = f"{label} ({len(rows)} rows" + (f", steps {min(steps):g}–{max(steps):g})"
                                                  if steps else ")")
    return launch, axis if vals else None, how, skipped


# -- declared directions --------------------------------------------------------------------------
# mmengine's CheckpointHook and mmcv's EvalHook infer a missing `rule` from the key's name:
_GREATER = ("acc", "top", "ar@", "auc", "precision", "map", "mdice", "miou", "macc", "aacc")
_LESS = ("loss",)


def save_best_goals(out: Meta, hook: Any, metric_keys: list[str], to_key: Any, who: str) -> None:
    """The goals a hook config declares with `save_best` (+ `rule`, else the framework's own rule
    by name) into `out`; `to_key(name)` maps the hook's metric name to the history key (None: not
    logged). `auto` is the first metric the evaluator returned (the first of `metric_keys`)."""
    if not isinstance(hook, dict) or not hook.get("save_best"):
        return
    best = hook["save_best"]
    best = [best] if isinstance(best, str) else [b for b in best if isinstance(b, str)] \
        if isinstance(best, list) else []
    rules = hook.get("rule")
    rules = [rules] * len(best) if not isinstance(rules, list) else rules
    for i, name in enumerate(best):
        rule = rules[i] if i < len(rules) else None
        auto = name == "auto"
        if auto:
            if not metric_keys:
                continue
            key = metric_keys[0]
            metric = key.split("/", 1)[1] if key.startswith("val/") else key
        else:
            metric, key = name, to_key(name)
        if key is None:
            out.notes.append(f"{who} save_best={name!r}: no such key logged; no direction taken")
            continue
        how = f"rule={rule!r}"
        if rule not in ("greater", "less"):
            low = metric.lower()
            rule = "greater" if low in _GREATER else "less" if low in _LESS else \
                "greater" if any(g in low for g in _GREATER) else \
                "less" if any(g in low for g in _LESS) else None
            how = "its rule inferred from the name, as the hook does"
            if rule is None:
                continue
        out.goals[key] = "max" if rule == "greater" else "min"
        out.goal_sources[key] = (f"{who} save_best={name!r}" + (f" (= {metric})" if auto else "")
                                 + f", {how}")
