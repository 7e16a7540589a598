"""HF Trainer output folders: `trainer_state.json`, its `checkpoint-*/` and `last-checkpoint/`
snapshots (one run: the newest state is read, the snapshots are prefixes of it)."""

from __future__ import annotations

import os
import re

from rundiff_core import Claimed, LayoutFolder, LayoutRun

from ..lazy import pd
from ..sniff import points_frame, read_head
from .common import Meta, read_config_files, read_json, scalars

_CHECKPOINT = re.compile(r"^(?:checkpoint-(\d+)|last-checkpoint)$")


def checkpoints(folder: str, dirs: list[str]) -> list[tuple[int, str]]:
    """(step, path) of `checkpoint-N` and `last-checkpoint` folders holding a trainer_state.json,
    oldest first (`last-checkpoint` by its own global_step)."""
    out = []
    for d in dirs:
        m = _CHECKPOINT.match(d)
        path = os.path.join(folder, d, "trainer_state.json")
        if m and os.path.isfile(path):
            out.append((int(m.group(1)) if m.group(1) else int(_global_step(path)),
                        os.path.join(folder, d)))
    return sorted(out)


def claim(folder: LayoutFolder) -> Claimed | None:
    ckpts = checkpoints(folder.path, folder.dirs)
    if not (folder.has("trainer_state.json") or ckpts):
        return None
    consumed = {os.path.basename(p) for _, p in ckpts}
    state = "trainer_state.json" if folder.has("trainer_state.json") else "no root trainer_state.json"
    run = LayoutRun(folder.path, "hf-trainer", [folder.join(f) for f in folder.files],
                    f"HF Trainer output: {state}, {_snapshots(consumed)}",
                    # the Trainer's TensorBoard logs under runs/ are the same run's scalars
                    {"owns_events": ["runs/"] if "runs" in folder.dirs else []})
    return Claimed([run], consumed | {"runs"})


def _snapshots(names: set[str]) -> str:
    """`3 checkpoint-* snapshot(s) and last-checkpoint/`, `last-checkpoint/ snapshot`, …"""
    n = sum(1 for d in names if d != "last-checkpoint")
    parts = [f"{n} checkpoint-* snapshot(s)"] if n or "last-checkpoint" not in names else []
    if "last-checkpoint" in names:
        parts.append("the last-checkpoint/ snapshot")
    return " and ".join(parts)


def claim_file(path: str) -> list[LayoutRun] | None:
    if os.path.basename(path) == "trainer_state.json":
        return [LayoutRun(path, "hf-trainer", [path], "HF Trainer state file")]
    return None


_HF_FINAL_KEYS = {"train_runtime", "train_samples_per_second", "train_steps_per_second",
                  "train_loss", "total_flos"}


_HF_STATE_SUMMARY = ("best_metric", "best_global_step", "best_model_checkpoint", "global_step",
                     "epoch", "total_flos")


def state_path(spec: LayoutRun) -> tuple[str, str]:
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
    others = {os.path.basename(f) for f, _ in candidates} - {os.path.dirname(best[3])}
    why = f"{best[3]} (global_step {best[0]:g}"
    why += f"; {_snapshots(others)} of the same run not read again)" if others else ")"
    return best[2], why


def _global_step(path: str) -> float:
    head = read_head(path, 1 << 20)
    m = re.search(rb'"global_step"\s*:\s*(\d+)', head)
    if m:
        return float(m.group(1))
    data = read_json(path, [])
    return float(data.get("global_step", -1)) if isinstance(data, dict) else -1.0


def meta(spec: LayoutRun) -> Meta:
    path, why = state_path(spec)
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
            out.summary.update(scalars(data))
            out.notes.append(f"{name} → summary")
    others = sorted(os.path.basename(f) for f in spec.files if os.path.basename(f) not in
                    {"trainer_state.json", "config.json", "adapter_config.json", "all_results.json"}
                    and f.endswith((".json", ".jsonl", ".csv")))
    if others:
        out.notes.append("also present, not read (trainer_state.json holds the history): "
                         + ", ".join(others[:4]) + (f" and {len(others) - 4} more" if len(others) > 4 else ""))
    if os.path.isdir(os.path.join(folder, "runs")):
        out.notes.append("runs/: the Trainer's TensorBoard logs of the same scalars; not read "
                         f"(tb:{os.path.join(folder, 'runs')} reads them)")
    out.meta["state_file"] = path
    return out


def history(spec: LayoutRun) -> tuple[pd.DataFrame, list[str]]:
    path, _ = state_path(spec)
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
