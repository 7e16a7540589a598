"""Stable-Baselines3 logger folders: `progress.csv` and the `*monitor.csv` files of its envs."""

from __future__ import annotations

import json
import os
from typing import Any

import rundiff_core  # the data model (numpy) loads when a log is read, not to sniff
from rundiff_core import Claimed, LayoutFolder, LayoutRun

from ..lazy import np, pd
from ..sniff import read_columns, read_head, read_table, sniff_table
from .common import Meta, read_json, read_yaml, subdirs


def claim(folder: LayoutFolder) -> Claimed | None:
    monitors = [f for f in folder.files if f.endswith("monitor.csv")]
    if not (folder.has("progress.csv") or monitors):
        return None
    what = (["progress.csv"] if folder.has("progress.csv") else []) + (
        [f"{len(monitors)} monitor file(s)"] if monitors else [])
    return Claimed([LayoutRun(folder.path, "sb3", [folder.join(f) for f in folder.files],
                              "Stable-Baselines3 logger: " + ", ".join(what))])


def meta(spec: LayoutRun) -> Meta:
    out = Meta()
    monitors = sorted(f for f in spec.files if f.endswith("monitor.csv"))
    info: dict[str, Any] = {}
    for f in monitors:
        head = read_head(f, 4096).split(b"\n", 1)[0]
        if head.startswith(b"#"):
            try:
                info = json.loads(head[1:])
            except ValueError:
                out.notes.append(f"{os.path.basename(f)}: comment line is not JSON")
            break
    env_id = info.get("env_id") if isinstance(info, dict) else None
    cfg_dirs = [spec.path] + ([os.path.join(spec.path, str(env_id))] if env_id else [])
    cfg_dirs += [os.path.join(spec.path, d) for d in subdirs(spec.path)
                 if os.path.isfile(os.path.join(spec.path, d, "config.yml"))]
    for d in dict.fromkeys(cfg_dirs):
        for name in ("args.yml", "config.yml", "config.yaml", "config.json"):
            p = os.path.join(d, name)
            if os.path.isfile(p):
                data = read_json(p, out.notes) if name.endswith(".json") else read_yaml(p, out.notes)
                if isinstance(data, dict):
                    key = "hyperparams" if name == "config.yml" else None
                    if key:
                        out.config[key] = data
                    else:
                        out.config.update(data)
                    out.notes.append(f"{os.path.relpath(p, spec.path)} → config"
                                     + (f".{key}" if key else ""))
    if env_id:
        out.config.setdefault("env_id", env_id)
    parts = []
    if os.path.join(spec.path, "progress.csv") in spec.files:
        parts.append("progress.csv → history (x = time/total_timesteps)")
    if monitors:
        parts.append(f"{len(monitors)} Monitor file(s) → episode/reward, episode/length")
    out.notes[:0] = parts
    return out


def history(spec: LayoutRun) -> tuple[pd.DataFrame, list[str]]:
    frames, notes = [], []
    progress = os.path.join(spec.path, "progress.csv")
    if progress in spec.files:
        f, n = read_table(progress, step="time/total_timesteps")
        frames.append(f)
        notes += n
    monitors = sorted(f for f in spec.files if f.endswith("monitor.csv"))
    if monitors:
        f, n = monitor_history(monitors)
        frames.append(f)
        notes += n
    frames = [f for f in frames if len(f)]
    return (pd.concat(frames, ignore_index=True) if frames else rundiff_core.empty_history()), notes


def monitor_history(paths: list[str]) -> tuple[pd.DataFrame, list[str]]:
    """SB3 Monitor files of one run (one per parallel env) merged into episode series.

    x is the env steps done when each episode ended, summed over envs in end-time order (the
    `t` column is seconds since the file's `t_start`, so end time = t_start + t).
    """
    notes: list[str] = []
    ends, rewards, lengths = [], [], []
    for p in paths:
        head = read_head(p, 4096).split(b"\n", 1)[0]
        t_start = 0.0
        try:
            t_start = float(json.loads(head[1:]).get("t_start", 0.0)) if head.startswith(b"#") else 0.0
        except (ValueError, AttributeError, TypeError):
            notes.append(f"{os.path.basename(p)}: comment line is not JSON; times relative")
        sniff = sniff_table(p)
        if sniff is None:
            notes.append(f"{os.path.basename(p)}: not a Monitor CSV; skipped")
            continue
        cols, more = read_columns(p, sniff)
        notes += more
        named = dict(zip(cols.names, zip(cols.values, cols.valid, strict=True), strict=True))
        if not {"r", "l", "t"} <= set(named):
            notes.append(f"{os.path.basename(p)}: lacks r,l,t columns; skipped")
            continue
        ok = named["r"][1] & named["l"][1] & named["t"][1]
        ends.append(named["t"][0][ok] + t_start)
        rewards.append(named["r"][0][ok])
        lengths.append(named["l"][0][ok])
    if not ends:
        return rundiff_core.empty_history(), notes
    end = np.concatenate(ends)
    order = np.argsort(end, kind="stable")
    end, r, ln = end[order], np.concatenate(rewards)[order], np.concatenate(lengths)[order]
    step = np.cumsum(ln)
    n = len(end)
    key = pd.Categorical.from_codes(np.repeat(np.array([0, 1], dtype=np.int32), n),
                                    categories=["episode/reward", "episode/length"])
    frame = rundiff_core.make_history(np.concatenate([step, step]), key, np.concatenate([r, ln]),
                         np.concatenate([end, end]))
    notes.append(f"{len(paths)} Monitor file(s) read as CSV after their JSON comment line; "
                 f"{n} episodes; x = env steps summed over envs at each episode's end "
                 "(unfinished episodes are never written)")
    return frame, notes
