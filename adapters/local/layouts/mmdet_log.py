"""mmcv 1.x / MMDetection 2.x (and the other OpenMMLab 1.x codebases) `<timestamp>.log.json`: JSON
lines from mmcv's `TextLoggerHook`. Line 1 is usually the runner's meta
(`{"env_info": …, "config": "<the whole .py as one string>", "seed": …, "exp_name": …}`), then
rows with `"mode": "train"` (`epoch`, `iter` within the epoch, `lr`, losses) and `"mode": "val"`
(`bbox_mAP`…, logged once per evaluation with `iter` = the epoch's length).

Each file is one launch and one run: its header holds that launch's config (the work dir's `.py`
is rewritten by every launch, so it may belong to another one).
"""

from __future__ import annotations

import io
import os
import re
from typing import Any

import rundiff_core
from rundiff_core import (
    Claimed,
    JsonLines,
    LayoutFolder,
    LayoutRun,
    config_differences,
    json_lines,
    read_py_config,
    read_py_config_file,
)

from ..common import Meta
from ..launches import is_number
from ..lazy import pd
from ..sniff import points_frame, read_head
from .mmengine import config_py, save_best_goals

_HEAD = re.compile(rb'^\s*\{\s*"(env_info|config|exp_name|seed|mmdet_version|CLASSES)"\s*:')
_ROW = re.compile(rb'^\s*\{[^\n]*"mode"\s*:\s*"(train|val)"')
_AXIS = ("mode", "epoch", "iter")
_ENV_KEYS = ("Python", "PyTorch", "TorchVision", "OpenCV")


def _is_log_json(path: str, head: bytes | None = None) -> bool:
    if not path.endswith(".log.json"):
        return False
    head = read_head(path, 4096) if head is None else head
    return bool(_HEAD.match(head) or _ROW.match(head))


def _run(path: str) -> LayoutRun:
    files = [path]
    text_log = path[: -len(".json")]
    if os.path.isfile(text_log):
        files.append(text_log)
    return LayoutRun(path, "mmdet-log", files,
                     "mmcv TextLoggerHook log (<timestamp>.log.json, JSON lines with mode train/val)")


def claim(folder: LayoutFolder) -> Claimed | None:
    runs = [_run(folder.join(f)) for f in sorted(folder.files)
            if f.endswith(".log.json") and _is_log_json(f, folder.head(f))]
    return Claimed(runs) if runs else None


def claim_file(path: str) -> list[LayoutRun] | None:
    return [_run(path)] if _is_log_json(path) else None


def _header(path: str) -> tuple[dict[str, Any] | None, str]:
    """The first line when it is the runner's meta (no `mode`), and what went wrong if not."""
    report = JsonLines("")
    n, row = next(json_lines(path, report), (0, {}))
    if report.error:
        return None, report.error.removesuffix("; not read")
    if n != 1 and 1 not in report.not_objects:  # line 1 empty, cut short or not JSON
        return None, "line 1 is not valid JSON (cut short?)"
    return (row, "") if n == 1 and "mode" not in row else (None, "")


def _tail_rows(path: str, n: int = 65536) -> list[dict[str, Any]]:
    """The complete JSON rows in the last `n` bytes (for status and `save_best: auto`)."""
    try:
        with open(path, "rb") as fh:
            size = fh.seek(0, 2)
            fh.seek(max(0, size - n))
            tail = io.BytesIO(fh.read())
    except OSError:
        return []
    if size > n:
        tail.readline()  # the first is a partial line
    return [row for _n, row in json_lines(tail, JsonLines("")) if row.get("mode") in ("train", "val")]


def meta(spec: LayoutRun) -> Meta:
    out = Meta()
    base = os.path.basename(spec.path)
    folder = os.path.dirname(spec.path)
    header, problem = _header(spec.path)
    if problem:
        out.notes.append(f"{base}: {problem}; no header read")
    header = header or {}
    side = config_py(folder, header.get("exp_name"))
    cfg_text = header.get("config")
    if isinstance(cfg_text, str) and cfg_text.strip():
        out.config, notes = read_py_config(cfg_text, f"{base} header's config")
        out.notes += notes
        if side is not None:
            other, _ = read_py_config_file(side)
            diff = config_differences(out.config, other)
            name = os.path.basename(side)
            out.notes.append(f"{name} beside it equals the header's config" if not diff else
                             f"{name} beside it differs from the header's config in "
                             f"{', '.join(diff)} (the work dir's .py is rewritten by every "
                             "launch); not read")
    elif isinstance(cfg_text, dict):
        out.config = cfg_text
        out.notes.append(f"{base} header's config (a mapping) → config")
    elif side is not None:
        out.config, notes = read_py_config_file(side)
        out.notes += notes
        out.notes.append(f"{base} has no header config: {os.path.basename(side)} beside it → "
                         "config (it is the last launch's; this launch may have used another)")
    else:
        out.notes.append(f"{base}: no header config and no single .py beside it: no config")
    seed = header.get("seed")
    if is_number(seed) and "seed" not in out.config:
        out.config["seed"] = seed
        out.notes.append(f"seed {seed} from the header")
    for k in ("exp_name", "mmdet_version"):
        if isinstance(header.get(k), str):
            out.meta[k] = header[k]
    env = header.get("env_info")
    if isinstance(env, str):
        found = {}
        for line in env.splitlines():
            k, sep, v = line.partition(": ")
            if sep and (k in _ENV_KEYS or k.startswith("MM")) and len(v) < 80:
                found[k] = v.strip()
        if found:
            out.meta["env"] = found
    resumed = out.config.get("resume_from")
    if isinstance(resumed, str) and resumed:
        from rundiff_core import RunEvent

        out.events.append(RunEvent("resume", payload={"resume_from": resumed}))
        out.notes.append(f"config resume_from={resumed!r}: this launch resumed another; the "
                         "earlier epochs are in that launch's log")
    tail = _tail_rows(spec.path)
    _status(out, tail, base)
    val = [r for r in tail if r.get("mode") == "val"]
    val_keys = [f"val/{k}" for k, v in (val[-1].items() if val else ())
                if k not in _AXIS and k != "lr" and is_number(v)]
    save_best_goals(out, out.config.get("evaluation"), val_keys,
                    lambda name: f"val/{name}" if f"val/{name}" in val_keys or not val_keys else None,
                    "mmcv EvalHook (the config's evaluation=dict(…))")
    return out


def _max_epochs(config: dict[str, Any]) -> tuple[str, int] | None:
    runner = config.get("runner")
    if isinstance(runner, dict):
        if is_number(runner.get("max_epochs")):
            return "epoch", int(runner["max_epochs"])
        if is_number(runner.get("max_iters")):
            return "iter", int(runner["max_iters"])
    if is_number(config.get("total_epochs")):
        return "epoch", int(config["total_epochs"])
    return None


def _status(out: Meta, tail: list[dict[str, Any]], base: str) -> None:
    """finished when the last evaluation is at the configured last epoch (or iteration)."""
    end = _max_epochs(out.config)
    if end is None or not tail:
        return
    unit, n = end
    val = [r for r in tail if r.get("mode") == "val"]
    train = [r for r in tail if r.get("mode") == "train"]
    field = "epoch" if unit == "epoch" else "iter"
    last_val = val[-1].get(field) if val else None
    if is_number(last_val) and int(last_val) >= n:
        out.status = "finished"
        out.notes.append(f"status finished: {base} holds the evaluation of {unit} {n}, the "
                         "config's last")
    elif train and is_number(train[-1].get(field)):
        out.notes.append(f"{base} ends in {unit} {train[-1][field]} of the config's {n}: status "
                         "unknown")


def history(spec: LayoutRun) -> tuple[pd.DataFrame, list[str]]:
    base = os.path.basename(spec.path)
    report = JsonLines(base)
    train: list[tuple[float, float, dict[str, float]]] = []
    val: list[tuple[float, float, dict[str, float]]] = []
    header = False
    no_mode = 0
    text_values: dict[str, int] = {}
    modes: dict[str, int] = {}
    for n, row in json_lines(spec.path, report):
        mode = row.get("mode")
        if mode not in ("train", "val"):
            if n == 1 and ("env_info" in row or "config" in row or "exp_name" in row):
                header = True
            elif mode is not None:
                modes[str(mode)] = modes.get(str(mode), 0) + 1
            else:
                no_mode += 1
            continue
        epoch, it = row.get("epoch", 1), row.get("iter")
        if not is_number(it) or not is_number(epoch):
            no_mode += 1
            continue
        values = {}
        for k, v in row.items():
            if k in _AXIS or (mode == "val" and k == "lr"):
                continue
            if is_number(v):
                values[k] = float(v)
            else:
                text_values[k] = text_values.get(k, 0) + 1
        (train if mode == "train" else val).append((float(epoch), float(it), values))
    notes = report.notes()
    if header:
        notes.insert(0, f"{base}: line 1 is the runner's header (env_info, config, seed, exp_name), "
                        "not a metric row")
    if not train and not val:
        notes.append(f"{base}: no train or val rows (the launch stopped before its first log "
                     "interval): no points")
        return rundiff_core.empty_history(), notes
    steps: list[float] = []
    keys: list[str] = []
    vals: list[float] = []
    epochs = {e for e, _i, _v in train + val}
    val_epochs = [e for e, _i, _v in val]
    iter_based = len(epochs) == 1 and len(val) > 1 and len(set(val_epochs)) == 1
    if iter_based:
        x_train = x_val = lambda e, i: i  # noqa: E731 - IterBasedRunner: iter is global
        notes.append(f"{base}: every row is in epoch {next(iter(epochs)):g} with several val rows "
                     "(an IterBasedRunner): x = iter, the global iteration, for train and val")
    else:
        lengths = sorted({i for _e, i, _v in val})
        if lengths:
            length = lengths[-1]
            how = f"the val rows' iter{' (they differ: ' + ', '.join(f'{x:g}' for x in lengths) + '; the largest taken)' if len(lengths) > 1 else ''}"
        else:
            length = max(i for _e, i, _v in train)
            how = "estimated as the largest train iter logged (no val row)"
        x_train = lambda e, i: (e - 1) * length + i  # noqa: E731
        x_val = lambda e, i: e * length  # noqa: E731
        notes.append(f"{base}: x = the global iteration: train rows at (epoch-1)×{length:g} + iter "
                     f"(iter counts within the epoch; {length:g} iterations per epoch: {how}); "
                     f"val rows at the end of their epoch (epoch×{length:g})")
    for rows, prefix, x in ((train, "train/", x_train), (val, "val/", x_val)):
        for e, i, values in rows:
            s = float(x(e, i))
            for k, v in values.items():
                steps.append(s)
                keys.append(prefix + k)
                vals.append(v)
    notes.append(f"{base}: {len(train)} train row(s) → train/<key>, {len(val)} val row(s) → "
                 "val/<key> (the row's mode as prefix; a val row's lr, epoch and iter are not "
                 "metrics)")
    sentinel = sorted(k for k in {k for _e, _i, v in val for k in v}
                      if all(v.get(k) == -1.0 for _e, _i, v in val if k in v))
    if sentinel:
        notes.append(f"{base}: {', '.join('val/' + k for k in sentinel)} -1.0 in every val row "
                     "(COCOeval's 'no objects of that size'); kept as logged")
    if text_values:
        notes.append(f"{base}: text values skipped: " + ", ".join(
            f"{k} ({n} rows)" for k, n in sorted(text_values.items())))
    if no_mode:
        notes.append(f"{base}: {no_mode} row(s) without mode/epoch/iter skipped")
    if modes:
        notes.append(f"{base}: rows of other modes skipped: " + ", ".join(
            f"{m} ({n})" for m, n in sorted(modes.items())))
    return points_frame(steps, keys, vals, None, notes, base)
