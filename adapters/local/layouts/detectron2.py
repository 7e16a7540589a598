"""Detectron2 output folders: `metrics.json` (JSON lines from `JSONWriter`, one object per write
with its `iteration`) beside `config.yaml`, `log.txt` and/or `last_checkpoint`.

Every launch into the same OUTPUT_DIR appends to `metrics.json`; a launch shows as a training row
(one with `total_loss`) whose iteration is below the previous training row's. Evaluation rows
(`bbox/AP`, `segm/AP50`, … at the evaluation's iteration, in percent) have keys of their own.
"""

from __future__ import annotations

import os
import re
from typing import Any

import rundiff_core
from rundiff_core import Claimed, JsonLines, LayoutFolder, LayoutRun, first_json_object, json_lines
from rundiff_core import read_config_yaml as read_yaml

from ..common import Meta
from ..launches import Launch, is_number, launch_events, merge_launches, scan_steps, split_launches
from ..lazy import pd
from ..sniff import points_frame, read_head

_SIDE = ("config.yaml", "log.txt", "last_checkpoint")
# Detectron2's evaluators' result names (flattened as `<task>/<name>`); Detectron2 < 0.3 repeats
# the latest evaluation result in every later row.
_EVAL_NAME = re.compile(r"^(AP\w*|AP-.*|AR\w*|PQ\w*|SQ\w*|RQ\w*|mIoU|fwIoU|mACC|pACC|IoU-.*|ACC-.*)$")
_LOG_BYTES = 256 << 20


def claim(folder: LayoutFolder) -> Claimed | None:
    if not (folder.has("metrics.json") and folder.any(*_SIDE)):
        return None
    head = folder.head("metrics.json", 8192)
    row = first_json_object(head)
    if row is None:
        first = head.split(b"\n", 1)[0]
        if b"\n" in head or not (first.lstrip().startswith(b"{") and b'"iteration"' in first):
            return None  # not JSON lines (Sacred's metrics.json is one object, no iteration)
    elif not is_number(row.get("iteration")):
        return None
    side = folder.any(*_SIDE)
    return Claimed([LayoutRun(folder.path, "detectron2", [folder.join(f) for f in folder.files],
                              f"Detectron2 output: metrics.json (JSON lines) + {', '.join(side)}")],
                   {"inference"})


def meta(spec: LayoutRun) -> Meta:
    out = Meta()
    cfg = os.path.join(spec.path, "config.yaml")
    if os.path.isfile(cfg):
        data = read_yaml(cfg, out.notes)
        if isinstance(data, dict):
            out.config = data
            out.notes.append("config.yaml → config (Detectron2 rewrites it at every launch, "
                             "evaluation-only ones too: it is the last launch's)")
        elif data is not None:
            out.notes.append("config.yaml: not a mapping; ignored")
    else:
        out.notes.append("no config.yaml beside metrics.json: no config")
    last = os.path.join(spec.path, "last_checkpoint")
    if os.path.isfile(last):
        name = read_head(last, 4096).decode("utf-8", "replace").strip()
        out.meta["last_checkpoint"] = name
        if os.path.basename(name) == "model_final.pth":
            out.status = "finished"
            out.notes.append("status finished: last_checkpoint names model_final.pth (Detectron2 "
                             "saves model_final when training reaches MAX_ITER)")
        else:
            out.notes.append(f"last_checkpoint names {name[:80]!r} (not model_final.pth): "
                             "status unknown")
    log = os.path.join(spec.path, "log.txt")
    if os.path.isfile(log):
        out.notes += _log_notes(log, out.meta)
    spans = scan_steps(os.path.join(spec.path, "metrics.json"), b"iteration",
                       lambda line: b'"total_loss"' in line)
    out.events = launch_events([(a, b, f"metrics.json line {c}") for a, b, c in spans])
    return out


def _log_notes(path: str, meta: dict[str, Any]) -> list[str]:
    """What log.txt says about its launches (banners, training starts, tracebacks, the last
    `copypaste` evaluation); read line by line, never whole."""
    banners = 0
    starts: list[str] = []
    tracebacks = 0
    version = None
    copypaste: list[str] = []
    last_eval: tuple[str, list[str]] | None = None
    read = 0
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                read += len(line)
                if read > _LOG_BYTES:
                    break
                if "Rank of current process" in line:
                    banners += 1
                elif "Starting training from iteration" in line:
                    starts.append(line.rsplit(" ", 1)[-1].strip())
                elif line.startswith("Traceback (most recent call last)"):
                    tracebacks += 1
                elif version is None and line.startswith("detectron2 "):
                    version = line.split()[1] if len(line.split()) > 1 else None
                elif "copypaste: " in line:
                    copypaste.append(line.split("copypaste: ", 1)[1].strip())
                    if len(copypaste) >= 3 and copypaste[-3].startswith("Task: ") \
                            and not copypaste[-1][:1].isalpha():
                        when = line[1:15] if line.startswith("[") else ""
                        last_eval = (when, copypaste[-3:])
    except OSError as exc:
        return [f"log.txt: unreadable ({exc.strerror or exc}); not read"]
    if version:
        meta["detectron2"] = version
    parts = [f"{banners} launch(es) started ('Rank of current process' banners)"]
    if starts:
        parts.append(f"{len(starts)} began training (from iteration {', '.join(starts[:8])})")
    if tracebacks:
        parts.append(f"{tracebacks} Python traceback(s)")
    if version:
        parts.append(f"detectron2 {version}")
    notes = ["log.txt: " + "; ".join(parts) + (" (first 256 MiB read)" if read > _LOG_BYTES else "")]
    if last_eval is not None:
        when, (task, names, values) = last_eval
        pairs = ", ".join(f"{n}={v}" for n, v in zip(names.split(","), values.split(","),
                                                      strict=False))
        notes.append(f"log.txt: the last evaluation it printed ({when}, {task}): {pairs} "
                     "(log text only; metrics.json holds what the trainer wrote)")
    return notes


def history(spec: LayoutRun) -> tuple[pd.DataFrame, list[str]]:
    report = JsonLines("metrics.json")
    rows = []
    for n, row in json_lines(os.path.join(spec.path, "metrics.json"), report):
        rows.append((n, float(row["iteration"]), row) if is_number(row.get("iteration")) else None)
    no_iteration = rows.count(None)
    parts = split_launches([r for r in rows if r], lambda r: r[1], lambda r: "total_loss" in r[2])
    launches = []
    evals = partial = stale = text_values = 0
    for part in parts:
        its = [it for _n, it, _r in part]
        launch = Launch(f"line {part[0][0]}", f"lines {part[0][0]}–{part[-1][0]}, iterations "
                        f"{min(its):g}–{max(its):g}", starts={"": part[0][1]})
        last_value: dict[str, float] = {}
        for _n, it, row in part:
            train = "total_loss" in row
            if not train and any(_is_eval(k) for k in row if k != "iteration"):
                evals += 1
            elif not train:
                partial += 1
            for k, v in row.items():
                if k == "iteration":
                    continue
                if not is_number(v):
                    text_values += 1
                elif train and _is_eval(k) and last_value.get(k) == v:
                    stale += 1  # Detectron2 < 0.3: the latest evaluation, repeated
                else:
                    last_value[k] = float(v)
                    launch.points.append((k, it, float(v)))
        launches.append(launch)
    notes = report.notes()
    if not launches:
        return rundiff_core.empty_history(), notes + ["metrics.json: no rows with an iteration"]
    # every key is on the one iteration axis (axis "": an empty axis map)
    steps, keys, values, _origin, merged = merge_launches(
        launches, {}, "metrics.json (every launch appends to it; a training row whose iteration "
        "goes back starts one)", "metrics.json")
    head = (f"metrics.json: {report.lines} line(s), x = iteration (Detectron2's 0-based "
            "iteration counter, as logged)")
    if evals:
        head += f"; {evals} evaluation row(s) (their keys, e.g. bbox/AP in percent, apart from " \
                "the training keys)"
    if partial:
        head += f"; {partial} row(s) without total_loss (a partial write, not a restart)"
    notes.insert(0, head)
    notes += merged
    if stale:
        notes.append(f"metrics.json: {stale} repeated evaluation value(s) in training rows skipped "
                     "(Detectron2 < 0.3 repeats the latest evaluation result in every later row)")
    if no_iteration:
        notes.append(f"metrics.json: {no_iteration} row(s) without an iteration skipped")
    if text_values:
        notes.append(f"metrics.json: {text_values} non-numeric value(s) skipped")
    return points_frame(steps, keys, values, None, notes, "metrics.json")


def _is_eval(key: str) -> bool:
    return "/" in key and bool(_EVAL_NAME.match(key.rsplit("/", 1)[1]))
