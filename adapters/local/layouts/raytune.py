"""Ray Tune trial folders: `result.json` (JSON lines, one row per `training_iteration`) beside
`params.json` (the trial's config), `progress.csv` (the same rows as CSV) and, after a crash,
`error.txt`. The experiment folder above the trials (`experiment_state-*.json`,
`basic-variant-state-*.json`, …) is their collection; its JSON state (raytune_state, never
unpickled: Ray 2.x writes pickles under `.json` names) gives each trial's status, last result and
the tuner's metric. A trial the state lists whose folder is not there (people commit the state
file, not the trials) is a run of its own, `STATEFILE#<trial name>`, with no history but its
last result; a state file given alone is one run per trial it lists."""

from __future__ import annotations

import os
import re
from typing import Any

import rundiff_core  # the data model (numpy) loads when a log is read, not to sniff
from rundiff_core import Claimed, LayoutFolder, LayoutRun, flatten
from rundiff_core import read_json_file as read_json

from ..common import Meta, subdirs
from ..sniff import read_head, read_table, records_columns, sniff_table, to_long
from . import raytune_state

RESULT, PARAMS, PROGRESS, ERROR = "result.json", "params.json", "progress.csv", "error.txt"
X = "training_iteration"
#: Keys of a result row that are not metrics: the trial's config (params.json holds it) and the
#: process id (Ray's own TensorBoard logger drops these too); `timestamp` becomes the wall time.
NOT_METRICS = ("config", "pid")
#: What the summary takes from the last result row.
SUMMARY_KEYS = ("training_iteration", "timesteps_total", "time_total_s", "episodes_total", "done")
#: What a state run's summary leaves out of `last_result` besides non-numbers (as the history
#: does: `timestamp` is its wall time).
NOT_SUMMARY = (*NOT_METRICS, "timestamp")
_STATE = raytune_state.STATE_NAME
_VARIANT = re.compile(r"^basic-variant-state-.*\.json$")
_TUNE_STATUS = {"TERMINATED": "finished", "ERROR": "crashed", "RUNNING": "running"}


def claim(folder: LayoutFolder) -> Claimed | None:
    """A trial folder: `result.json` beside `params.json`, where result.json is empty (a trial
    that crashed before its first result) or opens with a JSON object (reads 64 bytes); or,
    without result.json, `params.json` beside a `progress.csv` whose header has Tune's
    `training_iteration` and `time_total_s`. Else an experiment folder's `experiment_state-*.json`:
    the trials it lists whose folders are not beside it (each present trial folder is claimed on
    its own when the walk reaches it)."""
    if folder.has(PARAMS):
        got = _claim_trial(folder)
        if got is not None:
            return got
    states = [f for f in folder.files if _STATE.match(f)]
    if not states:
        return None
    runs = state_runs(folder.path, states, folder.dirs, absent_only=True)
    return Claimed(runs) if runs else None


def claim_file(path: str) -> list[LayoutRun] | None:
    """An `experiment_state-*.json` given alone: one run per trial it lists (its folder beside
    the file read for history when present); a file no trial can be read from is one run whose
    notes say why."""
    name = os.path.basename(path)
    if not _STATE.match(name):
        return None
    return state_runs(os.path.dirname(path), [name], None, absent_only=False)


def _claim_trial(folder: LayoutFolder) -> Claimed | None:
    if folder.has(RESULT):
        head = folder.head(RESULT, 64).lstrip()
        if head and not head.startswith(b"{"):
            return None
        parts = [RESULT + (" (empty)" if not head else ""), PARAMS]
    elif folder.has(PROGRESS) and {b"training_iteration", b"time_total_s"} <= {  # Tune's columns
            c.strip().strip(b'"') for c in folder.head(PROGRESS, 8192).split(b"\n", 1)[0].split(b",")}:
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


# -- the experiment state's trials -----------------------------------------------------------------


def _claimed_alone(path: str) -> bool:
    """The walk claims this folder as a trial of its own (`claim` on it)."""
    try:
        with os.scandir(path) as it:
            entries = [(e.name, e.is_dir()) for e in it]
    except OSError:
        return False
    view = LayoutFolder(path, [n for n, d in entries if not d], [n for n, d in entries if d])
    return view.has(PARAMS) and _claim_trial(view) is not None


def trial_folder(exp: str, trial: raytune_state.Trial, dirs: list[str]) -> tuple[str | None, str]:
    """The trial's folder beside the state file (None when there is none), and its name (or
    what it would be called): by the state's `relative_logdir`/`logdir`/`local_path`/
    `custom_dirname` (its last part when absolute, from another machine), else a sub-folder
    named as Ray names trial folders (`<trial name>_…`, or holding `_<trial_id>_`)."""
    wanted = ""
    for d in trial.dirnames:
        norm = d.replace("\\", "/").rstrip("/")
        base = norm.rsplit("/", 1)[-1]
        wanted = wanted or base
        rel = [norm] if not norm.startswith("/") and ":" not in norm[:3] and ".." not in norm.split("/") else []
        for cand in [*rel, base]:
            path = os.path.join(exp, cand)
            if cand and os.path.isdir(path):
                return path, cand
    d = next((d for d in dirs if _ray_named(trial, d)), None)
    return (os.path.join(exp, d), d) if d is not None else (None, wanted)


def _ray_named(t: raytune_state.Trial, d: str) -> bool:
    """`d` is named as Ray names trial `t`'s folder: `<trial name>_…`, or holding `_<trial_id>_`."""
    tid = t.trial_id
    return d.startswith(t.name + "_") or d == t.name or bool(
        tid and len(tid) >= 5 and (f"_{tid}_" in d or d.endswith(f"_{tid}")))


def state_runs(exp: str, names: list[str], dirs: list[str] | None, *,
               absent_only: bool) -> list[LayoutRun]:
    """The runs of the state files `names` in folder `exp`, newest launch first (the name holds
    its start time). `absent_only` (a folder listing): only trials whose folder the walk does
    not claim as a trial of its own, each once (the newest state listing it), and a state file
    no trial can be read from only when the folder has no sub-folders; else (a file given
    alone) every trial."""
    subs = sorted(d for d in (subdirs(exp) if dirs is None else dirs) if not d.startswith("."))
    runs: list[LayoutRun] = []
    seen: set[str] = set()
    for name in sorted(names, reverse=True):
        path = os.path.join(exp, name)
        state = raytune_state.load(path)
        if not state.trials:
            if not absent_only or not subs:
                runs.append(LayoutRun(path, "raytune", [path],
                                      "Ray Tune experiment state: no trial could be read",
                                      {"state": path, "trial": None}))
            continue
        labels: set[str] = set()
        for t in state.trials:
            if absent_only and t.key in seen:
                continue
            seen.add(t.key)
            folder, dirname = trial_folder(exp, t, subs)
            if absent_only and folder is not None and _claimed_alone(folder):
                continue
            label = t.name
            if label in labels or "#" in label or not label.strip():
                label = t.trial_id if t.trial_id and t.trial_id not in labels else f"trial-{t.index}"
            labels.add(label)
            present = [f for f in (RESULT, PARAMS, PROGRESS, ERROR)
                       if folder and os.path.isfile(os.path.join(folder, f))]
            has_history = RESULT in present or PROGRESS in present
            where = (f"its folder {dirname}/ beside it" if has_history else
                     f"its folder {dirname}/ beside it, without {RESULT} or {PROGRESS}" if folder
                     else f"trial folder {dirname} not present" if dirname else
                     "no trial folder named in the state")
            runs.append(LayoutRun(f"{path}#{label}", "raytune",
                                  [path] + [os.path.join(folder, f) for f in present],
                                  f"Ray Tune experiment state: trial {t.trial_id or t.index} in "
                                  f"{name}, {where}",
                                  {"state": path, "trial": t.index, "run_id": t.trial_id or label,
                                   "trial_dir": folder, "trial_dirname": dirname,
                                   "trial_history": has_history}))
    return runs


# -- reading result.json ---------------------------------------------------------------------------


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _fields(row: dict[str, Any], drop: tuple[str, ...]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The numbers of a result row (nested dicts joined with `/`: the history's keys), and its
    other fields (None and {}, custom_metrics before any, are nothing)."""
    numbers: dict[str, Any] = {}
    other: dict[str, Any] = {}
    for k, v in flatten({k: v for k, v in row.items() if k not in drop}, sep="/").items():
        if _is_number(v):
            numbers[k] = v
        elif v is not None and v != {}:
            other[k] = v
    return numbers, other


def history(spec: LayoutRun):  # noqa: ANN201 - (frame, notes)
    if "state" not in spec.sniffs:
        return _trial_history(spec.path)
    folder = spec.sniffs.get("trial_dir")  # a trial of an experiment_state file
    if folder:
        frame, notes = _trial_history(folder)
        return frame, [f"history from the trial folder {spec.sniffs.get('trial_dirname')}/"] + notes
    return rundiff_core.empty_history(), [
        "no points: no trial read from the state file" if spec.sniffs.get("trial") is None else
        "no points: the trial's folder is not here (see the notes above); the state file's "
        "last_result is the summary"]


def _trial_history(folder: str):  # noqa: ANN202 - (frame, notes)
    """result.json's rows (json.loads per line: Ray writes bare `NaN`/`Infinity` tokens), their
    numbers the history; progress.csv only when result.json holds no row."""
    result, progress = os.path.join(folder, RESULT), os.path.join(folder, PROGRESS)
    rows, notes = rundiff_core.read_jsonl_rows(result, name=RESULT) if os.path.isfile(result) \
        else ([], [])
    if not rows:
        why = (f"no {RESULT}" if not os.path.isfile(result) else f"{RESULT} is empty (0 bytes)"
               if os.path.getsize(result) == 0 else f"{RESULT} holds no result row")
        if os.path.isfile(progress) and (sniff := sniff_table(progress)) is not None:
            frame, more = read_table(progress, sniff, step=X)
            return frame, notes + [f"{why}: read {PROGRESS} instead (the same rows as CSV)"] + more
        return rundiff_core.empty_history(), notes + [
            f"{why}: the trial reported no result" + (f" (see {ERROR})" if os.path.isfile(
                os.path.join(folder, ERROR)) else "") + "; no points"]
    flat_rows: list[dict[str, Any]] = []
    other: dict[tuple[type, str], None] = {}  # (type, key) of the fields that are no series
    for row in rows:
        numbers, more = _fields(row, NOT_METRICS)
        flat_rows.append(numbers)
        other.update(dict.fromkeys((type(v), k) for k, v in more.items()))
    flags, texts, lists = ([k for t, k in other if t is kind] for kind in (bool, str, list))
    frame, more_notes = to_long(records_columns(flat_rows), RESULT, step=X,
                                described="JSON lines (one row per iteration)")
    skipped = [f"`config` (→ config from {PARAMS})", "`pid`"]
    if flags:
        skipped.append(f"{', '.join(f'`{f}`' for f in flags[:3])} (true/false → status)")
    if texts:
        skipped.append(f"{len(texts)} text field(s) ({', '.join(texts[:4])}{'…' * (len(texts) > 4)})")
    if lists:
        skipped.append(f"{len(lists)} list field(s) ({', '.join(lists[:3])}{'…' * (len(lists) > 3)}: "
                       "lists are not series)")
    notes += more_notes + [f"{RESULT}: {len(rows)} row(s); nested dicts flattened with `/` (info/…, "
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


def _matches(t: raytune_state.Trial, folder: str) -> bool:
    """The state's trial `t` is the trial of `folder` (by the folder names the state gives, else
    by Ray's folder naming)."""
    base = os.path.basename(os.path.normpath(folder))
    if t.dirnames:
        return any(d.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1] == base for d in t.dirnames)
    return _ray_named(t, base)


def _declare(state: raytune_state.State, out: Meta, prefix: str = "") -> None:
    """The tuner's metric → meta, its mode → a declared direction (only when the JSON names
    both)."""
    if state.metric is None or "tune_metric" in out.meta:
        return
    out.meta["tune_metric"] = state.metric
    goals = state.goals()
    for metric, mode in goals.items():
        out.goals[metric] = mode
        out.goal_sources[metric] = (f"ray tune mode (Ray Tune {state.name} {state.goal_where}: "
                                    f"metric={metric!r}, mode={mode!r})")
    if not goals:
        out.notes.append(f"{prefix}{state.name}: the tuner's metric is {state.metric!r}; its mode is "
                         "not in the JSON state (Ray keeps it in pickled searcher/scheduler state): "
                         "no direction claimed")


def experiment(parent: str, trial: str, out: Meta) -> raytune_state.Trial | None:
    """What the experiment folder says about the trial folder `trial`: its entry in the newest
    experiment_state-*.json that lists it, and the tuner's metric/mode (goals only when both are
    there). Ray 2.x's `basic-variant-state-*.json`, pickles under a `.json` name, are named in a
    note and skipped (a state file that is one says so too)."""
    try:
        names = sorted(os.listdir(parent))
    except OSError:
        return None
    for n in names:
        if _VARIANT.match(n) and (head := read_head(os.path.join(parent, n), 2)) in \
                raytune_state.PICKLE_MAGIC:
            out.notes.append(f"../{n}: a pickle despite its .json name (starts {head.hex(' ')}); "
                             "not unpickled, skipped")
    found = None
    for n in reversed([n for n in names if _STATE.match(n)  # newest launch first
                       and os.path.isfile(os.path.join(parent, n))]):
        state = raytune_state.load(os.path.join(parent, n))
        if state.damaged:
            out.notes += [f"../{note}" for note in state.notes]
        _declare(state, out, "../")
        mine = [t for t in state.trials if _matches(t, trial)] if found is None else []
        if mine:
            found = mine[-1]
            if found.status:
                out.notes.append(f"../{n}: trial status {found.status}")
    return found


def _status(out: Meta, tune: str | None, error_note: str | None, last: dict[str, Any] | None,
            source: str) -> None:
    """The status from a trial's folder (`error.txt`, the last row's `done`) and the state's
    word for it: error.txt is a crash unless the state says TERMINATED (a failure Ray retried
    past, `max_failures`); `done: true` is finished; else the state's TERMINATED/ERROR/RUNNING;
    else unknown. error.txt's note first."""
    out.notes += [error_note] if error_note else []
    if error_note and tune == "TERMINATED":
        out.status = "finished"
        out.notes.append(f"{source} says TERMINATED: {ERROR} is from a failure Ray retried past "
                         "→ status finished")
    elif error_note:
        out.status = "crashed"
    elif (last or {}).get("done") is True:
        out.status = "finished"
        out.notes.append(f"the last {RESULT} row has done: true → status finished")
    elif tune in _TUNE_STATUS:
        out.status = _TUNE_STATUS[tune]


def _crash(out: Meta, reason: str, file: str, row: dict[str, Any] | None) -> None:
    step = (row or {}).get(X)
    out.events.append(rundiff_core.RunEvent("crash", step=float(step) if _is_number(step) else None,
                                            payload={"reason": reason, "file": file}))


def _folder_meta(folder: str, files: list[str], out: Meta
                 ) -> tuple[str | None, dict[str, Any] | None, list[str]]:
    """Config (params.json), summary and meta (the last result.json row) and the crash event
    (error.txt) of a trial folder into `out`; returns error.txt's note, the last row and the
    notes that close the run's notes."""
    params, result, error = (os.path.join(folder, f) for f in (PARAMS, RESULT, ERROR))
    data = read_json(params, out.notes) if os.path.isfile(params) else None
    last = rundiff_core.last_jsonl_row(result) if os.path.isfile(result) else None
    if isinstance(data, dict):
        out.config = data
        out.notes.append(f"{PARAMS} → config")
    elif last is not None and isinstance(last.get("config"), dict):
        out.config = last["config"]
        out.notes.append(f"{PARAMS} unreadable: config from the last {RESULT} row's `config`")
    if last is not None:
        out.summary = {k: last[k] for k in SUMMARY_KEYS if isinstance(last.get(k), int | float)}
        out.meta.update({k: last[k] for k in ("trial_id", "experiment_id", "experiment_tag",
                                              "hostname", "date")
                         if isinstance(last.get(k), str) and last[k]})
    error_note = None
    if os.path.isfile(error):
        reason = _error_line(error)
        error_note = f"{ERROR} → status crashed: {reason or '(empty)'}"
        _crash(out, reason, ERROR, last)
    tail = []
    if subs := [d for d in subdirs(folder) if not d.startswith(".")]:
        tail.append(f"sub-folders of the trial, not read: {', '.join(subs[:4])}"
                    + (f" and {len(subs) - 4} more" if len(subs) > 4 else ""))
    if events := [os.path.basename(f) for f in files if "tfevents" in os.path.basename(f)]:
        tail.append(f"{events[0]}: Ray's TensorBoard copy of the same results; not read")
    return error_note, last, tail


def meta(spec: LayoutRun) -> Meta:
    if "state" in spec.sniffs:
        return _state_meta(spec)
    out = Meta()
    error_note, last, tail = _folder_meta(spec.path, spec.files, out)
    t = experiment(os.path.dirname(spec.path), spec.path, out)
    tune = t.status if t else None
    _status(out, tune, error_note, last, "the experiment state")
    if out.status == "unknown" and last is not None and tune is None:
        out.notes.append(f"status unknown: the last {RESULT} row has done: false, no {ERROR}")
    out.notes += tail
    return out


# -- a trial of an experiment_state file -----------------------------------------------------------


def _state_meta(spec: LayoutRun) -> Meta:
    out = Meta()
    path = spec.sniffs["state"]
    state = raytune_state.load(path)
    out.meta["tune_state_file"] = os.path.basename(path)
    out.notes += state.notes
    index = spec.sniffs.get("trial")
    t = next((t for t in state.trials if t.index == index), None)  # None: no trial was read
    if t is None:
        if index is not None:
            out.notes.append(f"{state.name}: trial entry {index} not found (the file changed since "
                             "it was listed)")
        _declare(state, out)
        return out
    folder = spec.sniffs.get("trial_dir")
    dirname = spec.sniffs.get("trial_dirname") or ""
    if folder and spec.sniffs.get("trial_history"):
        out.notes.append(f"trial folder {dirname}/ beside the state file: its history, "
                         f"{PARAMS}, {ERROR} and last row read")
    elif folder:
        out.notes.append(f"trial folder {dirname}/ beside the state file holds neither {RESULT} "
                         f"nor {PROGRESS}; last_result only (its {PARAMS} and {ERROR} read)")
    else:
        out.notes.append(f"trial folder {dirname} not present; last_result only" if dirname else
                         "no trial folder named in the state (the trial had not started); "
                         "last_result only")
    error_note, folder_last, tail = _folder_meta(folder, spec.files, out) if folder else \
        (None, None, [])
    config, last, notes = t.details()
    out.notes += notes
    if config is not None:
        out.notes = [n for n in out.notes if not n.startswith((f"{PARAMS} → config",
                                                                f"{PARAMS} unreadable"))]
        try:
            out.config = flatten(rundiff_core.opaque_config(config, out.notes, "the trial's config"))
        except RecursionError:
            out.notes.append(f"{state.name}: the trial's `config` is nested too deeply; not read")
        out.notes.append(f"{state.name}: the trial's `config` → config (nested keys joined with `.`)"
                         + (f"; {PARAMS} beside it not used" if folder and os.path.isfile(
                             os.path.join(folder, PARAMS)) else ""))
    elif out.config:
        out.notes.append(f"config from {PARAMS} in the trial folder (the state's is not readable)")
    try:
        numbers, other = _fields(last, NOT_SUMMARY) if last is not None else ({}, {})
    except RecursionError:
        out.notes.append(f"{state.name}: the trial's `last_result` is nested too deeply; not read")
        last = None
    if last is not None:
        out.summary = {**numbers, **out.summary}  # the folder's last row, when read, wins
        out.notes.append(f"{state.name}: the trial's `last_result` → summary ({len(numbers)} number(s); "
                         "nested keys joined with `/`; not metrics: `config`, `pid`, `timestamp`"
                         + (f"; {len(other)} text/flag/list field(s) skipped" if other else "") + ")")
        li, fi = last.get(X), (folder_last or {}).get(X)
        if _is_number(li) and _is_number(fi) and li != fi:
            out.notes.append(f"the state's last_result is at {X} {li}, {RESULT}'s last row at {fi}"
                             " (the state was saved " + ("earlier)" if li < fi else "later)"))
        for k in ("trial_id", "experiment_id", "hostname", "date", "node_ip"):
            if isinstance(last.get(k), str) and last[k]:
                out.meta.setdefault(k, last[k])
        if isinstance(last.get("timestamp"), int | float):
            out.meta["last_result_time"] = last["timestamp"]
    else:
        out.notes.append(f"{state.name}: the trial has no readable `last_result`; no summary")
    out.meta.update({k: v for k, v in t.meta.items() if k not in out.meta})
    out.meta.update({**({"trial_id": t.trial_id} if t.trial_id else {}), "tune_trial_name": t.name,
                     **({"tune_status": t.status} if t.status else {})})
    _status(out, t.status, error_note, folder_last, state.name)
    out.notes.append(f"{state.name}: trial status {t.status} → status {out.status}" + (
        " (as of when the state was saved)" if t.status == "RUNNING" else
        " (not started when the state was saved)" if t.status == "PENDING" else "")
        if t.status else f"{state.name}: the trial has no status")
    if t.status == "ERROR" and error_note is None:
        reason = str(t.meta.get("error_msg") or "")[:300]
        if reason:
            out.notes.append(f"{state.name}: the trial's error: {reason}")
        _crash(out, reason, state.name, last)
    _declare(state, out)
    out.notes += tail
    # seeds of one setting (`tune.grid_search` over a seed) share the trainable's name
    out.arm = t.name[: -len(t.trial_id) - 1] if t.trial_id and t.name.endswith("_" + t.trial_id) \
        else t.name
    return out
