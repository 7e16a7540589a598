"""Replay a neptune 1.x offline/async operation queue: `data-<version>.log` JSON lines.

Each line is `{"obj": {"type": …, "path": [...], …}, "version": N, "at": unix_seconds}`; the
client rotates files at 64 MiB (`data-<first version>.log`), so lines are replayed in `version`
order across files. `LogFloats` carries `{value, step, ts}` points; `step: null` means the last
step of that series + 1 (0 for the first point), which is what Neptune's server assigns.
`ClearFloatLog` and `DeleteAttribute` drop earlier points, as the server would; both are noted.
`metadata.json` gives the container id, type and creation time.

In async mode the client deletes files whose operations the server acknowledged, so a leftover
async folder may start past version 1: what was synced lives only on the server (noted).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd

from rundiff_core import InputError, empty_history

from .attributes import RunData, backward_steps, ms_to_iso
from .layout import DATA_LOG_RE

ASSIGN = {"AssignFloat", "AssignInt", "AssignBool", "AssignString"}
FILE_OPS = {"UploadFile", "UploadFileContent", "UploadFileSet", "DeleteFiles", "AssignArtifact",
            "TrackFilesToArtifact", "ClearArtifact"}
OTHER_SERIES = {"LogStrings": "string series", "LogImages": "image/file series"}
IGNORED = {"ConfigFloatSeries", "ClearStringLog", "ClearImageLog"}


def data_files(path: str) -> list[tuple[int, str]]:
    """(first version, file) for every `data-<n>.log`, in version order."""
    out = []
    for name in os.listdir(path):
        m = DATA_LOG_RE.match(name)
        if m:
            out.append((int(m["v"]), os.path.join(path, name)))
    return sorted(out)


def _lines(files: list[tuple[int, str]], notes: list[str]) -> Iterator[tuple[int, float | None, dict]]:
    """(version, at, op) from every well-formed line; bad lines are counted, a torn tail noted."""
    bad: list[str] = []
    decode = json.JSONDecoder().decode  # str input: skips json.loads' per-call encoding sniff
    for _first, path in files:
        name = os.path.basename(path)
        try:
            with open(path, encoding="utf-8", errors="replace", newline="") as fh:
                text = fh.read()
        except OSError as exc:
            notes.append(f"{name} unreadable ({type(exc).__name__}): its operations are missing")
            continue
        lines = text.split("\n")
        torn_at = len(lines) - 1 if lines[-1].strip() else -1  # no final newline: the writer was cut off
        for i, line in enumerate(lines):
            if not line or line.isspace():
                continue
            try:
                rec = decode(line)
                op = rec["obj"]
                version = int(rec["version"])
                if not isinstance(op, dict) or "type" not in op:
                    raise ValueError("no operation type")
            except (ValueError, KeyError, TypeError):
                if i == torn_at:
                    notes.append(f"{name}: truncated last line dropped (the run was still writing)")
                else:
                    bad.append(f"{name}:{i + 1}")
                continue
            at = rec.get("at")
            yield version, (float(at) if isinstance(at, int | float) else None), op
    if bad:
        notes.append(f"{len(bad)} corrupt operation line(s) skipped ({', '.join(bad[:5])}{' …' if len(bad) > 5 else ''})")


class _Series:
    """One float series being replayed; `seq` numbers its points in logged order across series."""

    __slots__ = ("steps", "values", "times", "seq", "last")

    def __init__(self) -> None:
        self.steps: list[float] = []
        self.values: list[float] = []
        self.times: list[float] = []
        self.seq: list[int] = []
        self.last = -1.0


def read_metadata(path: str) -> dict[str, Any]:
    try:
        with open(os.path.join(path, "metadata.json"), encoding="utf-8") as fh:
            data = json.load(fh)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def container_id(path: str, metadata: dict[str, Any] | None = None) -> str:
    """The run's id: metadata.json's containerId, else the uuid in `run__<uuid>__…`."""
    metadata = read_metadata(path) if metadata is None else metadata
    cid = metadata.get("containerId")
    if isinstance(cid, str) and cid:
        return cid
    name = os.path.basename(os.path.normpath(path))
    parts = name.split("__")
    return parts[1] if len(parts) > 1 and parts[0] in ("run", "model", "project", "model_version") else name


def read_container(path: str) -> RunData:
    """Replay one container folder into attributes and a full float-series history."""
    files = data_files(path)
    if not files:
        raise InputError(f"no data-*.log files in {path}", hint="a neptune 1.x run folder holds data-<n>.log files")
    metadata = read_metadata(path)
    notes: list[str] = []
    if not metadata:
        notes.append("metadata.json missing or unreadable: run id taken from the folder name")
    mode = metadata.get("mode") or os.path.basename(os.path.dirname(os.path.normpath(path)))
    ops = sorted(_lines(files, notes), key=lambda x: x[0])  # stable: equal versions keep file order
    if not ops and not any("corrupt" in n or "truncated" in n for n in notes):
        notes.append("the operation queue is empty")
    atoms: dict[str, Any] = {}
    sets: dict[str, set[str]] = {}
    series: dict[str, _Series] = {}
    seq = 0
    counts: dict[str, int] = {}
    cleared: dict[str, int] = {}
    deleted: dict[str, int] = {}
    copies: list[str] = []
    unknown: dict[str, int] = {}
    malformed = 0
    nan = float("nan")
    for _version, _at, op in ops:
        kind = op.get("type")
        segments = op.get("path") or ()
        try:
            key = "/".join(segments)
        except TypeError:
            key = "/".join(str(p) for p in segments)
        if kind in ASSIGN:
            atoms[key] = op.get("value")
        elif kind == "AssignDatetime":
            atoms[key] = ms_to_iso(op.get("value")) if isinstance(op.get("value"), int | float) else op.get("value")
        elif kind == "LogFloats":
            s = series.get(key)
            if s is None:
                s = series[key] = _Series()
            points = op.get("values")
            for point in points if isinstance(points, list) else ():
                step = point.get("step") if isinstance(point, dict) else False
                if step is None:
                    step = s.last + 1.0
                elif isinstance(step, int | float) and not isinstance(step, bool):
                    step = float(step)
                else:
                    malformed += 1
                    continue
                value = point.get("value")
                ts = point.get("ts")
                s.steps.append(step)
                s.values.append(float(value) if isinstance(value, int | float) else nan)
                s.times.append(float(ts) if isinstance(ts, int | float) else nan)
                s.seq.append(seq)
                seq += 1
                s.last = step
        elif kind == "ClearFloatLog":
            s = series.get(key)
            if s is not None and s.steps:
                cleared[key] = cleared.get(key, 0) + len(s.steps)
            series[key] = _Series()
        elif kind == "DeleteAttribute":
            if key in series:
                deleted[key] = deleted.get(key, 0) + len(series[key].steps)
                del series[key]
            atoms.pop(key, None)
            sets.pop(key, None)
        elif kind == "AddStrings":
            sets.setdefault(key, set()).update(str(v) for v in op.get("values") or [])
        elif kind == "RemoveStrings":
            sets.setdefault(key, set()).difference_update(str(v) for v in op.get("values") or [])
        elif kind == "ClearStringSet":
            sets[key] = set()
        elif kind in OTHER_SERIES:
            label = OTHER_SERIES[kind]
            counts[label] = counts.get(label, 0) + len(op.get("values") or [])
        elif kind == "CopyAttribute":
            copies.append(key)
        elif kind in FILE_OPS or kind in IGNORED:
            pass
        else:
            unknown[str(kind)] = unknown.get(str(kind), 0) + 1
    for key, values in sets.items():
        atoms[key] = sorted(values)
    history = _history(series)
    back, back_keys = backward_steps(history)
    if back:
        notes.append(f"{back} point(s) in {len(back_keys)} series have a step not above the previous one "
                     f"({', '.join(back_keys[:4])}); Neptune's server rejects those, rundiff keeps them")
    notes += _replay_notes(counts, cleared, deleted, copies, unknown)
    if malformed:
        notes.append(f"{malformed} LogFloats point(s) without a usable step skipped")
    first = files[0][0]
    if first > 1:  # data-1.log is gone: the client deleted files the server had acknowledged
        notes.append(
            f"operations before version {first} are gone from this {mode} folder (acknowledged by the "
            "server and deleted by the client): the history here is only what was not yet synced"
        )
    meta = {
        "path": path,
        "mode": metadata.get("mode"),
        "container_type": metadata.get("containerType"),
        "client_version": metadata.get("neptuneClientVersion"),
        "structure_version": metadata.get("structureVersion"),
    }
    if isinstance(metadata.get("createdAt"), str):
        atoms.setdefault("sys/creation_time", metadata["createdAt"])
    return RunData("neptune-1.x", container_id(path, metadata), atoms, notes, [], meta, history)


def _history(series: dict[str, _Series]) -> pd.DataFrame:
    """The surviving points of every series, back in logged order (by their sequence numbers)."""
    keys = sorted(k for k, s in series.items() if s.steps)
    if not keys:
        return empty_history()
    seq = np.concatenate([np.asarray(series[k].seq, dtype="int64") for k in keys])
    order = np.argsort(seq, kind="stable")
    steps = np.concatenate([np.asarray(series[k].steps, dtype="float64") for k in keys])[order]
    values = np.concatenate([np.asarray(series[k].values, dtype="float64") for k in keys])[order]
    times = np.concatenate([np.asarray(series[k].times, dtype="float64") for k in keys])[order]
    codes = np.concatenate([np.full(len(series[k].steps), i, dtype="int32") for i, k in enumerate(keys)])[order]
    return pd.DataFrame({
        "step": steps,
        "key": pd.Categorical.from_codes(codes, categories=keys),
        "value": values,
        "wall_time": times,
    })


def _replay_notes(counts, cleared, deleted, copies, unknown) -> list[str]:
    notes = []
    for key, n in sorted(cleared.items()):
        notes.append(f"{key}: cleared by the run (ClearFloatLog); {n} earlier point(s) dropped as Neptune does")
    for key, n in sorted(deleted.items()):
        notes.append(f"{key}: deleted by the run (DeleteAttribute); {n} point(s) dropped as Neptune does")
    for label, n in sorted(counts.items()):
        notes.append(f"not loaded (rundiff compares float series): {n} {label} point(s)")
    if copies:
        notes.append(f"{len(copies)} attribute(s) copied from another Neptune object cannot be resolved offline: "
                     + ", ".join(copies[:4]))
    if unknown:
        notes.append("unknown operation type(s) skipped: "
                     + ", ".join(f"{k} ×{n}" for k, n in sorted(unknown.items())))
    return notes
