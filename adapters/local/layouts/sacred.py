"""Sacred FileStorageObserver run folders: `run.json` beside `config.json`/`metrics.json`/
`cout.txt` (PyMARL's `info.json` series too)."""

from __future__ import annotations

import os
from typing import Any

from rundiff_core import Claimed, LayoutFolder, LayoutRun, read_config_json, read_json_file

from ..common import Meta, iso_seconds
from ..lazy import pd
from ..sniff import points_frame


def claim(folder: LayoutFolder) -> Claimed | None:
    if folder.has("run.json") and folder.any("config.json", "metrics.json", "cout.txt"):
        return Claimed([LayoutRun(folder.path, "sacred", [folder.join(f) for f in folder.files],
                                  "Sacred FileStorageObserver run (run.json)")], {"_sources"})
    return None


_SACRED_STATUS = {"COMPLETED": "finished", "RUNNING": "running", "FAILED": "crashed",
                  "INTERRUPTED": "crashed", "TIMEOUT": "crashed", "QUEUED": "unknown"}


def meta(spec: LayoutRun) -> Meta:
    from rundiff_core import RunEvent

    out = Meta()
    run = read_json_file(os.path.join(spec.path, "run.json"), out.notes) or {}
    cfg_path = os.path.join(spec.path, "config.json")
    cfg_notes: list[str] = []
    if os.path.isfile(cfg_path) and isinstance(cfg := read_config_json(cfg_path, cfg_notes), dict):
        out.config = {k: v for k, v in cfg.items() if k != "__doc__"}
    status = str(run.get("status", "")).upper()
    out.status = _SACRED_STATUS.get(status, "unknown")
    exp = run.get("experiment") or {}
    out.arm = exp.get("name") if isinstance(exp, dict) else None
    said = f"experiment {out.arm!r}"
    if isinstance(out.arm, str) and out.arm.isdigit():
        # `Experiment(str(random))`: a number drawn per run names no experiment
        main = exp.get("mainfile") if isinstance(exp.get("mainfile"), str) else None
        stem = os.path.splitext(os.path.basename(main))[0] if main else None
        said = (f"experiment {out.arm!r} (a bare number, drawn per run?: seeds are grouped by "
                f"{'the main file ' + repr(main) + ' and ' if stem else ''}the config)")
        out.meta["experiment_name"] = out.arm
        out.arm = stem
    if isinstance(run.get("result"), int | float) and not isinstance(run.get("result"), bool):
        out.summary["result"] = run["result"]
    out.meta.update({k: run.get(k) for k in ("start_time", "stop_time", "command", "heartbeat")
                     if run.get(k)})
    if isinstance(run.get("host"), dict):
        out.meta["host"] = {k: run["host"].get(k) for k in ("hostname", "os", "python_version", "gpus")
                            if k in run["host"]}
    trace = run.get("fail_trace")
    if status in ("FAILED", "INTERRUPTED"):
        last = trace[-1].strip() if isinstance(trace, list) and trace else status.lower()
        out.events.append(RunEvent("crash" if status == "FAILED" else "kill",
                                   payload={"status": status, "reason": last[:200]}))
        out.notes.append(f"Sacred status {status}: {last[:160]}")
    out.notes[:0] = [f"{said}; config.json → config", *cfg_notes]
    return out


def _jsonpickled(v: Any) -> Any:
    if isinstance(v, dict) and "py/object" in v and "value" in v:
        return v["value"]
    return v


def history(spec: LayoutRun) -> tuple[pd.DataFrame, list[str]]:
    notes: list[str] = []
    steps, keys, values, wall = [], [], [], []
    metrics = read_json_file(os.path.join(spec.path, "metrics.json"), notes) \
        if os.path.isfile(os.path.join(spec.path, "metrics.json")) else None
    for name, m in (metrics or {}).items():
        if not isinstance(m, dict):
            continue
        vs, ss, ts = m.get("values") or [], m.get("steps") or [], m.get("timestamps") or []
        for i, v in enumerate(vs):
            v = _jsonpickled(v)
            if not isinstance(v, int | float) or isinstance(v, bool):
                continue
            steps.append(float(ss[i]) if i < len(ss) and isinstance(ss[i], int | float) else float(i))
            keys.append(str(name))
            values.append(float(v))
            wall.append(iso_seconds(ts[i]) if i < len(ts) else float("nan"))
    if metrics is not None:
        notes.append(f"metrics.json: {len(metrics)} series (Sacred's steps/values/timestamps)")
    info_path = os.path.join(spec.path, "info.json")
    info = read_json_file(info_path, notes) if os.path.isfile(info_path) else None
    if isinstance(info, dict):
        n = 0
        for k, vs in info.items():
            ts = info.get(f"{k}_T")
            if k.endswith("_T") or not isinstance(vs, list) or not isinstance(ts, list):
                continue
            n += 1
            for s, v in zip(ts, vs, strict=False):
                v = _jsonpickled(v)
                if isinstance(v, int | float) and not isinstance(v, bool) and isinstance(s, int | float):
                    steps.append(float(s))
                    keys.append(k)
                    values.append(float(v))
                    wall.append(float("nan"))
        if n:
            notes.append(f"info.json: {n} PyMARL-style series (k with k_T env steps; jsonpickled "
                         "numpy scalars read as numbers)")
    return points_frame(steps, keys, values, wall, notes, "metrics.json")
