"""HF Trainer output folders: `trainer_state.json`, its `checkpoint-*/` and `last-checkpoint/`
snapshots (one run: the newest state is read, the snapshots are prefixes of it).

A state file that does not parse costs only what its damage touched: the newest intact snapshot
is read instead, with the damaged file's readable `log_history` entries after the snapshot's
last step added; with no intact snapshot, the damaged file's readable entries — every entry
before the damage, and every whole entry after it — are read. Both are said in a note."""

from __future__ import annotations

import json
import os
import re
from typing import Any

from rundiff_core import (
    Claimed,
    LayoutFolder,
    LayoutRun,
    ListSalvage,
    drop_repeats,
    read_bounded,
    read_config_files,
    read_json_file,
    salvage_list,
)

from ..common import Meta, scalars
from ..lazy import pd
from ..sniff import points_frame, read_head

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


def _candidates(spec: LayoutRun) -> list[tuple[float, int, str, str]]:
    """(global_step, 1 for the root file, path, label) of every trainer_state.json of the run,
    newest first (the root file before a snapshot of the same step)."""
    if os.path.isfile(spec.path):
        return [(_global_step(spec.path), 1, spec.path, "the given file")]
    root = os.path.join(spec.path, "trainer_state.json")
    try:
        dirs = [d for d in os.listdir(spec.path) if os.path.isdir(os.path.join(spec.path, d))]
    except OSError:
        dirs = []
    out = [(_global_step(root), 1, root, "trainer_state.json")] if os.path.isfile(root) else []
    for _, folder in checkpoints(spec.path, dirs):
        path = os.path.join(folder, "trainer_state.json")
        out.append((_global_step(path), 0, path, f"{os.path.basename(folder)}/trainer_state.json"))
    return sorted(out, key=lambda c: c[:2], reverse=True)


def state_path(spec: LayoutRun) -> tuple[str, str]:
    """The newest trainer_state.json of a Trainer output folder, and why it was chosen."""
    cands = _candidates(spec)
    assert cands
    step, _root, path, label = cands[0]
    if label == "the given file":
        return path, label
    others = {os.path.dirname(c[3]) for c in cands[1:] if c[3] != "trainer_state.json"}
    why = f"{label} (global_step {step:g}"
    why += f"; {_snapshots(others)} of the same run not read again)" if others else ")"
    return path, why


class State:
    """The state a run is read from: `data` (its keys; `log_history` the entries read), the file
    read and why, and the notes on damage: which file did not parse, what was read instead."""

    def __init__(self, data: dict[str, Any], path: str, why: str, notes: list[str]) -> None:
        self.data, self.path, self.why, self.notes = data, path, why, notes


_STATES: dict[tuple, State] = {}  # by the stamps of every candidate: meta and history read once


def load_state(spec: LayoutRun) -> State | None:
    """The run's state: the newest trainer_state.json that parses; when a newer one does not,
    the newest intact copy plus the damaged files' readable entries after its last step; when
    none parses, the readable entries of the newest damaged file. None when nothing is readable."""
    cands = _candidates(spec)
    if not cands:
        return None
    try:
        stamp = tuple((c[2], os.stat(c[2]).st_mtime_ns, os.stat(c[2]).st_size) for c in cands)
    except OSError:
        stamp = None
    if stamp is not None and stamp in _STATES:
        return _STATES[stamp]
    state = _load_state(spec, cands)
    if stamp is not None and state is not None:
        if len(_STATES) >= 8:
            _STATES.pop(next(iter(_STATES)))
        _STATES[stamp] = state
    return state


def _load_state(spec: LayoutRun, cands: list[tuple[float, int, str, str]]) -> State | None:
    damaged: list[_Damaged] = []
    notes: list[str] = []
    for i, (step, _root, path, label) in enumerate(cands):
        data, problem = _parse(path)
        if data is not None:
            why = state_path(spec)[1] if i == 0 else (
                f"{label} (global_step {step:g}), the newest intact copy")
            data["log_history"], repeats = drop_repeats(data.get("log_history") or [])
            if repeats:
                notes.append(f"{label}: {repeats} log_history entr{'y' if repeats == 1 else 'ies'} "
                             "equal to an earlier one dropped (HF writes no entry twice: a repeated "
                             "region of the file)")
            if damaged:
                _add_after(data, damaged, label, notes)
            return State(data, path, why, notes)
        top, sv = _salvage(path)
        damaged.append((label, problem, top, sv.entries if sv else [], _describe(sv)))
    if not damaged:
        return None
    label, problem, top, entries, described = next((d for d in damaged if d[3]), damaged[0])
    path = next(c[2] for c in cands if c[3] == label)
    others = [d[0] for d in damaged if d[0] != label]
    note = (f"{label}: {problem}; "
            + (f"no intact copy beside it ({', '.join(others)} damaged too)" if others else
               "no intact copy beside it")
            + f"; read its readable part: {described}")
    data = dict(top)
    data["log_history"] = entries
    return State(data, path, f"the readable part of {label}", [note])


def _parse(path: str) -> tuple[dict[str, Any] | None, str]:
    """The state file's document, or None and why it is not one."""
    raw, why = read_bounded(path, MAX_STATE_BYTES)
    if raw is None:
        return None, f"{why}; not read" if why.startswith("larger") else why
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        return None, f"not valid JSON (a byte that is not UTF-8 at byte {exc.start:,} of {len(raw):,})"
    except RecursionError:
        return None, "not valid JSON (nested too deeply)"
    except ValueError as exc:
        where = f", byte {exc.pos:,} of {len(raw):,}" if isinstance(exc, json.JSONDecodeError) else ""
        return None, f"not valid JSON ({getattr(exc, 'msg', str(exc))[:60]}{where})"
    if not isinstance(data, dict):
        return None, f"not a JSON object but a {type(data).__name__}"
    if not isinstance(data.get("log_history", []), list):
        return None, "its log_history is not a list"
    return data, ""


MAX_STATE_BYTES = 512 << 20


# a damaged state file: (label, why it does not parse, top-level scalars, entries, their account)
_Damaged = tuple[str, str, dict[str, Any], list[dict[str, Any]], str]


def _add_after(data: dict[str, Any], damaged: list[_Damaged], label: str,
               notes: list[str]) -> None:
    """The intact copy `data` (of `label`) read instead of the newer damaged files: the entries
    they hold after its last step are added, and said."""
    rows = [r for r in data.get("log_history") or [] if isinstance(r, dict)]
    last = max((r["step"] for r in rows if _is_step(r.get("step"))), default=None)
    for name, problem, _top, entries, described in damaged:
        later = [r for r in entries if _is_step(r.get("step")) and (last is None or r["step"] > last)]
        text = (f"{name}: {problem}; read {label}, the newest intact copy ({len(rows)} "
                "log_history entries)")
        if later:
            lo, hi = min(r["step"] for r in later), max(r["step"] for r in later)
            steps = f"step {lo:g}" if lo == hi else f"steps {lo:g}–{hi:g}"
            text += (f", and from the damaged file the {len(later)} entr{'y' if len(later) == 1 else 'ies'} "
                     f"the copy lacks ({steps})")
        elif entries:
            text += "; the copy lacks none of the damaged file's readable entries"
        text += f" (damaged file: {described})"
        notes.append(text)
        if later:
            rows = rows + later
            last = max(r["step"] for r in later)
    data["log_history"] = rows


def _is_step(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _step(entry: Any) -> float | None:
    return entry["step"] if isinstance(entry, dict) and _is_step(entry.get("step")) else None


_TOP_LINE = re.compile(r'^  "([^"\\]+)": (-?[0-9][0-9.eE+-]*|true|false|null|"[^"\\]*"),?\r?$', re.M)


def _salvage(path: str) -> tuple[dict[str, Any], ListSalvage | None]:
    """The readable part of a damaged state file: its top-level scalars (lines at the top level
    of HF's two-space indent) and its whole `log_history` entries, before the damage and after
    it (HF's entries are flat objects)."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_STATE_BYTES)
    except OSError:
        return {}, None
    text = raw.decode("utf-8", errors="replace")
    top: dict[str, Any] = {}
    for m in _TOP_LINE.finditer(text):
        try:
            top[m.group(1)] = json.loads(m.group(2))
        except ValueError:
            pass
    top.pop("log_history", None)
    return top, salvage_list(text, ("log_history",), resync=True, unique=True, size=len(raw))


def _describe(sv: ListSalvage | None) -> str:
    """What the readable part holds: entries read, the stretches skipped, where it ends."""
    if sv is None:
        return "no log_history in its readable part"
    text = f"{len(sv.entries)} log_history entr{'y' if len(sv.entries) == 1 else 'ies'} read"
    for a, b, before, after in sv.gaps[:3]:
        lo, hi = _step(before), _step(after)
        text += f"; bytes {a:,}–{b:,} unreadable: the entries "
        text += (f"between step {lo:g} and step {hi:g}" if lo is not None and hi is not None
                 else f"before step {hi:g}" if hi is not None else "there")
        text += " skipped"
    if len(sv.gaps) > 3:
        text += f"; {len(sv.gaps) - 3} more unreadable stretch(es)"
    if sv.repeated:
        text += (f"; {sv.repeated} entr{'y' if sv.repeated == 1 else 'ies'} equal to an earlier "
                 "one (a repeated region) dropped")
    if not sv.complete:
        text += (f"; from byte {sv.cut_at:,} to the end no whole entry (the file is cut "
                 "there, or damaged to its end)")
    return text


def _global_step(path: str) -> float:
    head = read_head(path, 1 << 20)
    m = re.search(rb'"global_step"\s*:\s*(\d+)', head)
    if m:
        return float(m.group(1))
    data = read_json_file(path, [])
    return float(data.get("global_step", -1)) if isinstance(data, dict) else -1.0


def meta(spec: LayoutRun) -> Meta:
    out = Meta()
    loaded = load_state(spec)
    if loaded is None:
        out.notes.append("no readable trainer_state.json; no points")
        return out
    state, path, why = loaded.data, loaded.path, loaded.why
    out.notes += loaded.notes
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
        if os.path.isfile(p) and isinstance(data := read_json_file(p, out.notes), dict):
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
    notes: list[str] = []
    loaded = load_state(spec)
    state = loaded.data if loaded is not None else {}
    rows = [r for r in state.get("log_history") or [] if isinstance(r, dict)]
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
