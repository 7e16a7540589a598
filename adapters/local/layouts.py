"""Readers of the named layouts: each turns a RunSpec into metadata and a full history.

Every reader says what it inferred in notes (kept in `Run.fidelity`): which file was read as
what, which x was used, what was present but not read and why.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
import pandas as pd

from rundiff_core import empty_history, flatten, make_history, seed_stem
from rundiff_core import seed_from_name as _seed_from_name

from .discover import CONFIG_FILES, RunSpec, checkpoints
from .sniff import (
    Sniff,
    one_row,
    points_frame,
    read_columns,
    read_head,
    read_table,
    sniff_table,
    to_long,
)
from .textlog import read_text_log

MAX_JSON_BYTES = 512 << 20


def _stem(name: str) -> str:
    """A log file's name without its extension (`ppo_s3.log` → `ppo_s3`); folders unchanged."""
    return os.path.splitext(name)[0] if "." in name[-6:] else name


def seed_from_name(name: str) -> int | None:
    """`seed-3`, `seed_3`, `seed3`, `ppo_s3` → 3: the one seed rule (rundiff_core.seed_from_name)
    on the folder name or file stem."""
    return _seed_from_name(_stem(name))


def strip_seed(name: str) -> str:
    """The arm part of a run name: `ppo_s3` → `ppo`, `run-seed_2` → `run`."""
    return seed_stem(_stem(name)) or name


@dataclass
class Meta:
    config: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    status: str = "unknown"
    notes: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    arm: str | None = None  # the experiment name shared by seeds (default: the folder name sans seed)
    events: list[Any] = field(default_factory=list)


# -- small readers --------------------------------------------------------------------------------


def read_json(path: str, notes: list[str]) -> Any:
    name = os.path.basename(path)
    try:
        if os.path.getsize(path) > MAX_JSON_BYTES:
            notes.append(f"{name}: larger than {MAX_JSON_BYTES >> 20} MiB; not read")
            return None
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except (ValueError, UnicodeDecodeError, RecursionError, OSError) as exc:
        notes.append(f"{name}: not valid JSON ({str(exc)[:80]}); skipped")
        return None


def read_yaml(path: str, notes: list[str]) -> Any:
    from rundiff_core import YamlRefused, load_yaml_file

    try:
        return load_yaml_file(path)
    except YamlRefused as exc:
        notes.append(str(exc))
    except Exception as exc:  # malformed YAML: PyYAML raises many types
        notes.append(f"{os.path.basename(path)}: unreadable YAML ({type(exc).__name__}); ignored")
    return None


def read_config_files(folder: str, names: tuple[str, ...] = CONFIG_FILES) -> tuple[dict, list[str]]:
    """A run's config from the config files beside it, each named in a note."""
    config: dict[str, Any] = {}
    notes: list[str] = []
    for name in names:
        path = os.path.join(folder, name)
        if not os.path.isfile(path):
            continue
        data = read_json(path, notes) if name.endswith(".json") else read_yaml(path, notes)
        if isinstance(data, dict):
            config.update(data)
            notes.append(f"{name} → config")
        elif data is not None:
            notes.append(f"{name}: not a mapping; ignored")
    return config, notes


def _scalars(d: dict[str, Any], sep: str = "/") -> dict[str, Any]:
    return {k: v for k, v in flatten(d, sep=sep).items()
            if isinstance(v, int | float | str | bool) or v is None}


def _numbers(d: dict[str, Any], sep: str = "/") -> dict[str, float]:
    return {k: v for k, v in _scalars(d, sep).items()
            if isinstance(v, int | float) and not isinstance(v, bool)}


# -- HF Trainer -----------------------------------------------------------------------------------

_HF_FINAL_KEYS = {"train_runtime", "train_samples_per_second", "train_steps_per_second",
                  "train_loss", "total_flos"}
_HF_STATE_SUMMARY = ("best_metric", "best_global_step", "best_model_checkpoint", "global_step",
                     "epoch", "total_flos")


def hf_state_path(spec: RunSpec) -> tuple[str, str]:
    """The newest trainer_state.json of a Trainer output folder, and why it was chosen."""
    if os.path.isfile(spec.path):
        return spec.path, "the given file"
    root = os.path.join(spec.path, "trainer_state.json")
    try:
        dirs = [d for d in os.listdir(spec.path) if os.path.isdir(os.path.join(spec.path, d))]
    except OSError:
        dirs = []
    ckpts = checkpoints(spec.path, dirs)
    candidates = [(p, os.path.join(p, "trainer_state.json")) for _, p in ckpts]
    best = None
    if os.path.isfile(root):
        best = (_global_step(root), 1, root, "trainer_state.json")
    for folder, path in candidates:
        key = (_global_step(path), 0, path, f"{os.path.basename(folder)}/trainer_state.json")
        if best is None or key[:2] > best[:2]:
            best = key
    assert best is not None
    n = len(candidates)
    why = f"{best[3]} (global_step {best[0]:g}"
    why += f"; {n} checkpoint-* snapshot(s) of the same run not read again)" if n else ")"
    return best[2], why


def _global_step(path: str) -> float:
    head = read_head(path, 1 << 20)
    m = re.search(rb'"global_step"\s*:\s*(\d+)', head)
    if m:
        return float(m.group(1))
    data = read_json(path, [])
    return float(data.get("global_step", -1)) if isinstance(data, dict) else -1.0


def hf_meta(spec: RunSpec) -> Meta:
    path, why = hf_state_path(spec)
    out = Meta()
    state = read_json(path, out.notes)
    if not isinstance(state, dict):
        return out
    folder = os.path.dirname(path) if os.path.isfile(spec.path) else spec.path
    out.config = {k: v for k, v in state.items()
                  if k not in _HF_STATE_SUMMARY and k != "log_history"
                  and (isinstance(v, int | float | str | bool) or v is None)}
    out.summary = {k: state[k] for k in _HF_STATE_SUMMARY if state.get(k) is not None}
    rows = [r for r in state.get("log_history") or [] if isinstance(r, dict)]
    train = sum(1 for r in rows if "loss" in r)
    evals = sum(1 for r in rows if any(str(k).startswith("eval_") for k in r))
    final = [r for r in rows if "loss" not in r and _HF_FINAL_KEYS & set(r)]
    for r in final:
        out.summary.update({k: v for k, v in r.items() if k not in ("step", "epoch")})
    out.status = "finished" if final else "unknown"
    out.notes.append(f"HF Trainer layout: read {why}; log_history: {train} train row(s), "
                     f"{evals} eval row(s), {len(final)} final summary row(s) → summary")
    model_cfg, notes = read_config_files(folder, ("config.json",))
    if model_cfg:
        out.config["model"] = model_cfg
        out.notes += [n.replace("→ config", "→ config.model") for n in notes]
    adapter, notes = read_config_files(folder, ("adapter_config.json",))
    if adapter:
        out.config["adapter"] = adapter
        out.notes.append("adapter_config.json → config.adapter")
    for name in ("all_results.json",):
        p = os.path.join(folder, name)
        if os.path.isfile(p) and isinstance(data := read_json(p, out.notes), dict):
            out.summary.update(_scalars(data))
            out.notes.append(f"{name} → summary")
    others = sorted(os.path.basename(f) for f in spec.files if os.path.basename(f) not in
                    {"trainer_state.json", "config.json", "adapter_config.json", "all_results.json"}
                    and f.endswith((".json", ".jsonl", ".csv")))
    if others:
        out.notes.append("also present, not read (trainer_state.json holds the history): "
                         + ", ".join(others[:4]) + (f" and {len(others) - 4} more" if len(others) > 4 else ""))
    out.meta["state_file"] = path
    return out


def hf_history(spec: RunSpec) -> tuple[pd.DataFrame, list[str]]:
    path, _ = hf_state_path(spec)
    notes: list[str] = []
    state = read_json(path, notes)
    rows = [r for r in (state or {}).get("log_history") or [] if isinstance(r, dict)]
    steps, keys, values = [], [], []
    seen_epoch: set[float] = set()
    for r in rows:
        if "loss" not in r and _HF_FINAL_KEYS & set(r):
            continue  # the final summary row: in summary
        step = r.get("step")
        if not isinstance(step, int | float):
            continue
        for k, v in r.items():
            if k == "step" or not isinstance(v, int | float) or isinstance(v, bool):
                continue
            if k == "epoch":
                if step in seen_epoch:
                    continue  # train and eval rows at one step both carry the epoch
                seen_epoch.add(step)
            steps.append(float(step))
            keys.append(str(k))
            values.append(float(v))
    notes.append("trainer_state.json log_history: x = step; train and eval rows kept as their own "
                 "keys (eval_*)")
    return points_frame(steps, keys, values, None, notes, "trainer_state.json")


# -- Spinning Up / garage / rllab -----------------------------------------------------------------


def _progress(spec: RunSpec) -> str | None:
    for name in ("progress.txt", "progress.csv"):
        p = os.path.join(spec.path, name)
        if os.path.isfile(p):
            return p
    return None


def spinningup_meta(spec: RunSpec) -> Meta:
    out = Meta()
    out.config, out.notes = read_config_files(spec.path, ("config.json", "variant.json",
                                                          "params.json"))
    for f in spec.files:
        base = os.path.basename(f)
        if base in ("progress.txt", "progress.csv") or base in CONFIG_FILES:
            continue
        sniff = sniff_table(f)
        if sniff is not None and (row := one_row(f, sniff)):
            stem = os.path.splitext(base)[0]
            out.summary.update({f"{stem}/{k}": v for k, v in row.items()})
            out.notes.append(f"{base} (one row, no step column) → summary as {stem}/*")
    return out


def spinningup_history(spec: RunSpec) -> tuple[pd.DataFrame, list[str]]:
    path = _progress(spec)
    return read_table(path) if path else (empty_history(), ["no progress file"])


# -- Stable-Baselines3 ----------------------------------------------------------------------------


def sb3_meta(spec: RunSpec) -> Meta:
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
    cfg_dirs += [os.path.join(spec.path, d) for d in _subdirs(spec.path)
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


def _subdirs(path: str) -> list[str]:
    try:
        return sorted(d for d in os.listdir(path) if os.path.isdir(os.path.join(path, d)))
    except OSError:
        return []


def sb3_history(spec: RunSpec) -> tuple[pd.DataFrame, list[str]]:
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
    return (pd.concat(frames, ignore_index=True) if frames else empty_history()), notes


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
        return empty_history(), notes
    end = np.concatenate(ends)
    order = np.argsort(end, kind="stable")
    end, r, ln = end[order], np.concatenate(rewards)[order], np.concatenate(lengths)[order]
    step = np.cumsum(ln)
    n = len(end)
    key = pd.Categorical.from_codes(np.repeat(np.array([0, 1], dtype=np.int32), n),
                                    categories=["episode/reward", "episode/length"])
    frame = make_history(np.concatenate([step, step]), key, np.concatenate([r, ln]),
                         np.concatenate([end, end]))
    notes.append(f"{len(paths)} Monitor file(s) read as CSV after their JSON comment line; "
                 f"{n} episodes; x = env steps summed over envs at each episode's end "
                 "(unfinished episodes are never written)")
    return frame, notes


# -- DVCLive --------------------------------------------------------------------------------------


def _dvclive_dir(spec: RunSpec) -> str:
    sub = os.path.join(spec.path, "dvclive")
    return sub if os.path.isdir(sub) else spec.path


def dvclive_meta(spec: RunSpec) -> Meta:
    out = Meta()
    d = _dvclive_dir(spec)
    params = os.path.join(d, "params.yaml")
    if os.path.isfile(params) and isinstance(data := read_yaml(params, out.notes), dict):
        out.config.update(data)
        out.notes.append(f"{os.path.relpath(params, spec.path)} → config")
    if d != spec.path:
        root_params = os.path.join(spec.path, "params.yaml")
        if os.path.isfile(root_params) and isinstance(data := read_yaml(root_params, out.notes), dict):
            out.config["pipeline"] = data
            out.notes.append("params.yaml (the pipeline's own) → config.pipeline")
    for name, where in (("metrics.json", d), ("dvclive.json", spec.path)):
        p = os.path.join(where, name)
        if os.path.isfile(p) and isinstance(data := read_json(p, out.notes), dict):
            out.summary.update(_scalars(data))
            out.notes.append(f"{os.path.relpath(p, spec.path)} (DVCLive's last values) → summary")
    other = os.path.join(spec.path, "metrics.json")
    if d != spec.path and os.path.isfile(other) and isinstance(data := read_json(other, out.notes), dict):
        out.summary.update({f"metrics.json/{k}": v for k, v in _scalars(data).items()})
        out.notes.append("metrics.json (written by the project, not DVCLive) → summary as metrics.json/*")
    return out


def dvclive_history(spec: RunSpec) -> tuple[pd.DataFrame, list[str]]:
    d = _dvclive_dir(spec)
    plots = os.path.join(d, "plots", "metrics")
    base = plots if os.path.isdir(plots) else d
    files = []
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(x for x in dirnames if not x.startswith(".")) if base == plots else []
        files += [os.path.join(dirpath, f) for f in sorted(filenames) if f.endswith(".tsv")]
    frames, notes = [], []
    for f in files:
        key = os.path.splitext(os.path.relpath(f, base))[0].replace(os.sep, "/")
        sniff = sniff_table(f)
        if sniff is None:
            notes.append(f"{key}.tsv: not a DVCLive TSV; skipped")
            continue
        cols, more = read_columns(f, sniff)
        leaf = key.rsplit("/", 1)[-1]
        frame, more2 = to_long(cols, os.path.relpath(f, spec.path), step="step", described="TSV",
                               key_names={leaf: key})
        frames.append(frame)
        notes += more + more2[1:]
    notes.insert(0, f"DVCLive: {len(files)} TSV file(s) under {os.path.relpath(base, spec.path)}/ "
                    "→ one key each (its path), x = step (DVCLive's log-call count)")
    frames = [f for f in frames if len(f)]
    return (pd.concat(frames, ignore_index=True) if frames else empty_history()), notes


# -- Sacred ---------------------------------------------------------------------------------------

_SACRED_STATUS = {"COMPLETED": "finished", "RUNNING": "running", "FAILED": "crashed",
                  "INTERRUPTED": "crashed", "TIMEOUT": "crashed", "QUEUED": "unknown"}


def sacred_meta(spec: RunSpec) -> Meta:
    from rundiff_core import RunEvent

    out = Meta()
    run = read_json(os.path.join(spec.path, "run.json"), out.notes) or {}
    cfg_path = os.path.join(spec.path, "config.json")
    if os.path.isfile(cfg_path) and isinstance(cfg := read_json(cfg_path, out.notes), dict):
        out.config = {k: v for k, v in cfg.items() if k != "__doc__"}
    status = str(run.get("status", "")).upper()
    out.status = _SACRED_STATUS.get(status, "unknown")
    exp = run.get("experiment") or {}
    out.arm = exp.get("name") if isinstance(exp, dict) else None
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
    out.notes.insert(0, f"experiment {out.arm!r}; config.json → config")
    return out


def _jsonpickled(v: Any) -> Any:
    if isinstance(v, dict) and "py/object" in v and "value" in v:
        return v["value"]
    return v


def _iso(ts: Any) -> float:
    try:
        return datetime.fromisoformat(str(ts)).timestamp()
    except ValueError:
        return float("nan")


def sacred_history(spec: RunSpec) -> tuple[pd.DataFrame, list[str]]:
    notes: list[str] = []
    steps, keys, values, wall = [], [], [], []
    metrics = read_json(os.path.join(spec.path, "metrics.json"), notes) \
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
            wall.append(_iso(ts[i]) if i < len(ts) else float("nan"))
    if metrics is not None:
        notes.append(f"metrics.json: {len(metrics)} series (Sacred's steps/values/timestamps)")
    info_path = os.path.join(spec.path, "info.json")
    info = read_json(info_path, notes) if os.path.isfile(info_path) else None
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


# -- lm-evaluation-harness ------------------------------------------------------------------------


def lmeval_meta(spec: RunSpec) -> Meta:
    out = Meta()
    tasks = 0
    for f in spec.files:
        data = read_json(f, out.notes)
        if not isinstance(data, dict) or not isinstance(data.get("results"), dict):
            continue
        for task, metrics in data["results"].items():
            if not isinstance(metrics, dict):
                continue
            tasks += 1
            for k, v in metrics.items():
                if isinstance(v, int | float) and not isinstance(v, bool):
                    out.summary[f"{task}/{k}"] = v
        cfg = data.get("config")
        if isinstance(cfg, dict):
            out.config.update({k: v for k, v in cfg.items() if v not in (None, [], {})})
        for key in ("n-shot", "versions"):
            if isinstance(data.get(key), dict):
                out.config.setdefault(key, {}).update(data[key])
        for key in ("git_hash", "transformers_version", "date"):
            if data.get(key) is not None:
                out.meta[key] = data[key]
    out.status = "finished"
    out.notes.append(f"lm-evaluation-harness results: {len(spec.files)} file(s), {tasks} task "
                     "entries → summary as task/metric,filter (final metrics, no history)")
    return out


# -- generic folders and text logs ----------------------------------------------------------------


def files_meta(spec: RunSpec) -> Meta:
    out = Meta()
    out.config, out.notes = read_config_files(os.path.dirname(spec.path) if os.path.isfile(spec.path)
                                              else spec.path)
    for path in spec.files:
        base = os.path.basename(path)
        sniff = spec.sniffs.get(path)
        if isinstance(sniff, Sniff):
            if (row := one_row(path, sniff)) is not None:
                stem = os.path.splitext(base)[0]
                out.summary.update({f"{stem}/{k}": v for k, v in row.items()})
                out.notes.append(f"{base} (one row, no step column) → summary as {stem}/*")
            elif sniff.kind == "," and sniff.header and sniff.header[0] == "epoch":
                out.notes.append(f"{base}: Keras CSVLogger layout (epoch first) → history")
            else:
                out.notes.append(f"{base} ({sniff.described}) → history")
            continue
        if not base.lower().endswith(".json"):
            out.notes.append(f"{base} (CSV) → history")
            continue
        data = read_json(path, out.notes)
        if "meta" in base.lower() and isinstance(data, dict):
            out.config.update(data)
            out.notes.append(f"{base} (metadata object) → config")
        elif isinstance(data, dict):
            flat = _scalars(data, ".")
            out.summary.update(flat)
            nested = any(isinstance(v, dict) for v in data.values())
            out.notes.append(f"{base} ({'nested object' if nested else 'object of scalars'}) → summary"
                             + (", dotted keys" if nested else ""))
        elif isinstance(data, list):
            out.notes.append(f"{base} (list of records) → history")
    return out


def files_history(spec: RunSpec) -> tuple[pd.DataFrame, list[str]]:
    frames, notes = [], []
    for path in spec.files:
        sniff = spec.sniffs.get(path)
        if isinstance(sniff, Sniff):
            if one_row(path, sniff) is not None:
                continue
            frame, more = read_table(path, sniff)
        elif path.lower().endswith(".json"):
            sniff = sniff_table(path)
            if sniff is None or sniff.kind != "json":
                continue
            frame, more = read_table(path, sniff)
        else:
            sniff = sniff_table(path)
            if sniff is None:
                notes.append(f"{os.path.basename(path)}: no header with numeric columns; skipped")
                continue
            frame, more = read_table(path, sniff)
        frames.append(frame)
        notes += more
    frames = [f for f in frames if len(f)]
    return (pd.concat(frames, ignore_index=True) if frames else empty_history()), notes


def text_meta(spec: RunSpec) -> Meta:
    out = Meta()
    out.config, out.notes = read_config_files(os.path.dirname(spec.path))
    return out


def text_history(spec: RunSpec) -> tuple[pd.DataFrame, list[str]]:
    return read_text_log(spec.path, spec.sniffs.get(spec.path))  # type: ignore[arg-type]


def _trackio_parts(spec: RunSpec) -> tuple[str, str, bool]:
    path = spec.files[0]
    return path, str(spec.sniffs["run_id"]), path.endswith(".db")


def trackio_meta(spec: RunSpec) -> Meta:
    from . import trackio

    path, run_id, is_db = _trackio_parts(spec)
    config, meta, notes = (trackio.db_config if is_db else trackio.parquet_config)(path, run_id)
    out = Meta(config=config, notes=notes, meta={"trackio_run_id": run_id, **meta})
    label = spec.path.rsplit("#", 1)[1]
    out.arm = strip_seed(label)
    return out


def trackio_history(spec: RunSpec) -> tuple[pd.DataFrame, list[str]]:
    from . import trackio

    path, run_id, is_db = _trackio_parts(spec)
    return (trackio.db_history if is_db else trackio.parquet_history)(path, run_id)


READERS = {
    "trackio": (trackio_meta, trackio_history),
    "hf-trainer": (hf_meta, hf_history),
    "spinningup": (spinningup_meta, spinningup_history),
    "sb3": (sb3_meta, sb3_history),
    "dvclive": (dvclive_meta, dvclive_history),
    "sacred": (sacred_meta, sacred_history),
    "lm-eval": (lmeval_meta, lambda spec: (empty_history(), [])),
    "files": (files_meta, files_history),
    "text": (text_meta, text_history),
}
