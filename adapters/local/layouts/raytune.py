"""Ray Tune trial folders: `result.json` (JSON lines, one row per `training_iteration`) beside
`params.json` (the trial's config), `progress.csv` (the same rows as CSV) and, after a crash,
`error.txt`. The experiment folder above the trials (`experiment_state-*.json`,
`basic-variant-state-*.json`, …) is their collection; its JSON state is read for trial status and
the tuner's metric, never unpickled (Ray 2.x writes pickles under `.json` names)."""

from __future__ import annotations

import json
import os
import re
from typing import Any

import rundiff_core  # the data model (numpy) loads when a log is read, not to sniff
from rundiff_core import Claimed, LayoutFolder, LayoutRun, flatten

from ..sniff import read_table, records_columns, sniff_table, to_long
from .common import Meta, read_json

RESULT = "result.json"
PARAMS = "params.json"
PROGRESS = "progress.csv"
ERROR = "error.txt"
X = "training_iteration"
#: Keys of a result row that are not metrics: the trial's config (params.json holds it) and the
#: process id (Ray's own TensorBoard logger drops these too); `timestamp` becomes the wall time.
NOT_METRICS = ("config", "pid")
#: What the summary takes from the last result row.
SUMMARY_KEYS = ("training_iteration", "timesteps_total", "time_total_s", "episodes_total", "done")
MAX_STATE_BYTES = 64 << 20  # an experiment_state file larger than this is not parsed
_PICKLE = (b"\x80\x02", b"\x80\x03", b"\x80\x04", b"\x80\x05")
_STATE = re.compile(r"^experiment_state-.*\.json$")
_VARIANT = re.compile(r"^basic-variant-state-.*\.json$")


def _progress_is_tune(folder: LayoutFolder) -> bool:
    """progress.csv's header names Tune's own columns (the header line, within 8 KiB)."""
    header = folder.head(PROGRESS, 8192).split(b"\n", 1)[0]
    cols = {c.strip().strip(b'"') for c in header.split(b",")}
    return {b"training_iteration", b"time_total_s"} <= cols


def claim(folder: LayoutFolder) -> Claimed | None:
    """`result.json` beside `params.json`, where result.json is empty (a trial that crashed
    before its first result) or opens with a JSON object (reads 64 bytes); or, without
    result.json, `params.json` beside a `progress.csv` whose header has Tune's
    `training_iteration` and `time_total_s`."""
    if not folder.has(PARAMS):
        return None
    if folder.has(RESULT):
        head = folder.head(RESULT, 64).lstrip()
        if head and not head.startswith(b"{"):
            return None
        parts = [RESULT + (" (empty)" if not head else ""), PARAMS]
    elif folder.has(PROGRESS) and _progress_is_tune(folder):
        parts = [f"no {RESULT}", PARAMS]
    else:
        return None
    parts += folder.any(PROGRESS, ERROR)
    events = [f for f in folder.files if "tfevents" in f]
    run = LayoutRun(folder.path, "raytune", [folder.join(f) for f in folder.files],
                    "Ray Tune trial: " + ", ".join(parts),
                    # Tune's TBXLogger writes the same results to the events file beside
                    {"owns_events": events})
    # everything below a trial folder is the trial's (checkpoint_000010/, rank_0/, …)
    return Claimed([run], set(folder.dirs))


# -- reading result.json ---------------------------------------------------------------------------


def read_rows(path: str) -> tuple[list[dict[str, Any]], list[str]]:
    """Every row of a result.json, parsed line by line (Python's json takes Ray's bare `NaN` and
    `Infinity` tokens); corrupt lines and a torn last line are counted in the notes."""
    notes: list[str] = []
    name = os.path.basename(path)
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        return [], [f"{name}: unreadable ({exc.strerror}); skipped"]
    rows: list[dict[str, Any]] = []
    bad: list[int] = []
    lines = raw.split(b"\n")
    torn = bool(lines and lines[-1].strip())  # no newline after the last row
    for i, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):
            if torn and i == len(lines):
                notes.append(f"{name}: truncated last line {i} ({len(line)} bytes) skipped — the "
                             "trial is probably still running")
            else:
                bad.append(i)
            continue
        if isinstance(obj, dict):
            rows.append(obj)
        else:
            bad.append(i)
    if bad:
        shown = ", ".join(map(str, bad[:5])) + ("…" if len(bad) > 5 else "")
        notes.append(f"{name}: {len(bad)} corrupt line(s) skipped (line {shown})")
    return rows, notes


def last_row(path: str) -> dict[str, Any] | None:
    """The last complete row of a result.json, read from the file's tail."""
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as fh:
            window = 1 << 18
            while True:
                start = max(0, size - window)
                fh.seek(start)
                tail = fh.read(size - start)
                lines = [ln for ln in tail.split(b"\n") if ln.strip()]
                complete = lines[1:] if start > 0 else lines  # the first may be cut by the window
                for line in reversed(complete):
                    try:
                        obj = json.loads(line)
                    except (ValueError, RecursionError):
                        continue
                    if isinstance(obj, dict):
                        return obj
                if start == 0:
                    return None
                window *= 4
    except OSError:
        return None


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def history(spec: LayoutRun):  # noqa: ANN201 - (frame, notes)
    result = os.path.join(spec.path, RESULT)
    progress = os.path.join(spec.path, PROGRESS)
    rows, notes = read_rows(result) if os.path.isfile(result) else ([], [])
    if not rows:
        why = (f"no {RESULT}" if not os.path.isfile(result) else f"{RESULT} is empty (0 bytes)"
               if os.path.getsize(result) == 0 else f"{RESULT} holds no result row")
        if os.path.isfile(progress) and (sniff := sniff_table(progress)) is not None:
            frame, more = read_table(progress, sniff, step=X)
            return frame, notes + [f"{why}: read {PROGRESS} instead (the same rows as CSV)"] + more
        return rundiff_core.empty_history(), notes + [
            f"{why}: the trial reported no result" + (f" (see {ERROR})" if os.path.isfile(
                os.path.join(spec.path, ERROR)) else "") + "; no points"]
    flat_rows: list[dict[str, float]] = []
    texts: dict[str, None] = {}
    lists: dict[str, None] = {}
    flags: dict[str, None] = {}
    for row in rows:
        out: dict[str, float] = {}
        for k, v in flatten({k: v for k, v in row.items() if k not in NOT_METRICS},
                            sep="/").items():
            if _is_number(v):
                out[k] = v
            elif isinstance(v, bool):
                flags[k] = None
            elif isinstance(v, list | tuple):
                lists[k] = None
            elif isinstance(v, str):
                texts[k] = None
            # None and empty dicts ({} for custom_metrics before any) are no points
        flat_rows.append(out)
    cols = records_columns(flat_rows)
    frame, more = to_long(cols, RESULT, step=X, described="JSON lines (one row per iteration)")
    skipped = [f"`config` (→ config from {PARAMS})", "`pid`"]
    if flags:
        skipped.append(f"{', '.join(f'`{f}`' for f in list(flags)[:3])} (true/false → status)")
    if texts:
        skipped.append(f"{len(texts)} text field(s) ({', '.join(list(texts)[:4])}"
                       f"{'…' if len(texts) > 4 else ''})")
    if lists:
        skipped.append(f"{len(lists)} list field(s) ({', '.join(list(lists)[:3])}"
                       f"{'…' if len(lists) > 3 else ''}: lists are not series)")
    notes += more + [f"{RESULT}: {len(rows)} row(s); nested dicts flattened with `/` (info/…, "
                     f"sampler_results/…); not metrics: {'; '.join(skipped)}"]
    if os.path.isfile(progress):
        notes.append(f"{PROGRESS}: the same rows as CSV; not read again ({RESULT} preferred)")
    return frame, notes


# -- meta ------------------------------------------------------------------------------------------


def _error_line(path: str) -> str:
    """The last non-empty line of error.txt (the exception), from its tail."""
    try:
        with open(path, "rb") as fh:
            fh.seek(max(0, os.path.getsize(path) - (64 << 10)))
            tail = fh.read().decode("utf-8", "replace")
    except OSError:
        return ""
    lines = [ln.strip() for ln in tail.splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


def _trial_states(data: Any) -> list[dict[str, Any]]:
    """The trial entries of an experiment_state: Ray 2.x `trial_data` ([json, json] pairs),
    Ray 1.x `checkpoints` (JSON strings); each decoded as JSON, nothing unpickled."""
    out: list[dict[str, Any]] = []
    if not isinstance(data, dict):
        return out
    entries = data.get("trial_data") or data.get("checkpoints") or []
    for entry in entries if isinstance(entries, list) else []:
        first = entry[0] if isinstance(entry, list) and entry else entry
        if isinstance(first, str):
            try:
                first = json.loads(first)
            except (ValueError, RecursionError):
                continue
        if isinstance(first, dict):
            out.append(first)
    return out


def _same_trial(state: dict[str, Any], folder: str) -> bool:
    base = os.path.basename(folder)
    for k in ("relative_logdir", "logdir", "local_path", "custom_dirname"):
        v = state.get(k)
        if isinstance(v, str) and v and os.path.basename(os.path.normpath(v)) == base:
            return True
    return False


_TUNE_STATUS = {"TERMINATED": "finished", "ERROR": "crashed", "RUNNING": "running"}


def experiment(parent: str, trial: str, out: Meta) -> str | None:
    """What the experiment folder says about `trial`: its status in the newest
    experiment_state-*.json that lists it, and the tuner's metric/mode (goals only when both are
    there). Pickles under `.json` names are named in a note and skipped."""
    try:
        names = sorted(os.listdir(parent))
    except OSError:
        return None
    status = None
    states = [n for n in names if _STATE.match(n)]
    for n in names:
        if not (_VARIANT.match(n) or _STATE.match(n)):
            continue
        try:
            with open(os.path.join(parent, n), "rb") as fh:
                head = fh.read(2)
        except OSError:
            continue
        if head in _PICKLE:
            out.notes.append(f"../{n}: a pickle despite its .json name (starts {head.hex(' ')}); "
                             "not unpickled, skipped")
            if n in states:
                states.remove(n)
    for n in reversed(states):  # newest launch first (the name carries its start time)
        path = os.path.join(parent, n)
        if not os.path.isfile(path):
            continue
        if os.path.getsize(path) > MAX_STATE_BYTES:
            out.notes.append(f"../{n}: larger than {MAX_STATE_BYTES >> 20} MiB; not read")
            continue
        data = read_json(path, out.notes)
        runner = data.get("runner_data") if isinstance(data, dict) else None
        if isinstance(runner, dict) and "tune_metric" not in out.meta:
            metric = runner.get("_metric") or runner.get("metric")
            mode = runner.get("_mode") or runner.get("mode")
            if isinstance(metric, str) and metric:
                out.meta["tune_metric"] = metric
                if mode in ("min", "max"):
                    out.goals[metric] = mode
                    out.goal_sources[metric] = f"Ray Tune {n} (metric={metric!r}, mode={mode!r})"
                else:
                    out.notes.append(f"../{n}: the tuner's metric is {metric!r}; its mode is not in "
                                     "the JSON state (Ray keeps it in pickled searcher/scheduler "
                                     "state): no direction claimed")
        if status is None:
            mine = [s for s in _trial_states(data) if _same_trial(s, trial)]
            if mine and isinstance(mine[-1].get("status"), str):
                status = mine[-1]["status"]
                out.notes.append(f"../{n}: trial status {status}")
    return status


def meta(spec: LayoutRun) -> Meta:
    out = Meta()
    folder = spec.path
    params = os.path.join(folder, PARAMS)
    data = read_json(params, out.notes) if os.path.isfile(params) else None
    result = os.path.join(folder, RESULT)
    last = last_row(result) if os.path.isfile(result) else None
    if isinstance(data, dict):
        out.config = data
        out.notes.append(f"{PARAMS} → config")
    elif last is not None and isinstance(last.get("config"), dict):
        out.config = last["config"]
        out.notes.append(f"{PARAMS} unreadable: config from the last {RESULT} row's `config`")
    if last is not None:
        out.summary = {k: last[k] for k in SUMMARY_KEYS if _is_number(last.get(k))
                       or isinstance(last.get(k), bool)}
        for k in ("trial_id", "experiment_id", "experiment_tag", "hostname", "date"):
            if isinstance(last.get(k), str) and last[k]:
                out.meta[k] = last[k]
    tune_status = experiment(os.path.dirname(folder), folder, out)
    error = os.path.join(folder, ERROR)
    if os.path.isfile(error):
        reason = _error_line(error)
        out.status = "crashed"
        out.notes.append(f"{ERROR} → status crashed: {reason or '(empty)'}")
        step = last.get(X) if last else None
        out.events.append(rundiff_core.RunEvent("crash", step=float(step) if _is_number(step)
                                                else None, payload={"reason": reason,
                                                                    "file": ERROR}))
    elif last is not None and last.get("done") is True:
        out.status = "finished"
        out.notes.append(f"the last {RESULT} row has done: true → status finished")
    elif tune_status in _TUNE_STATUS:
        out.status = _TUNE_STATUS[tune_status]
    elif last is not None:
        out.notes.append(f"status unknown: the last {RESULT} row has done: false, no {ERROR}")
    subs = sorted(d for d in os.listdir(folder) if os.path.isdir(os.path.join(folder, d))
                  and not d.startswith("."))
    if subs:
        out.notes.append(f"sub-folders of the trial, not read: {', '.join(subs[:4])}"
                         + (f" and {len(subs) - 4} more" if len(subs) > 4 else ""))
    events = [os.path.basename(f) for f in spec.files if "tfevents" in os.path.basename(f)]
    if events:
        out.notes.append(f"{events[0]}: Ray's TensorBoard copy of the same results; not read")
    return out
