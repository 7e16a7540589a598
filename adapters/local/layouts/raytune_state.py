"""Ray Tune's experiment state, `experiment_state-<date>.json`, read as JSON and nothing else.

Its structure tells which Ray wrote it (never a version string; a note names it): `trial_data`
of `[trial JSON, run-metadata JSON]` pairs (Ray 2.x, since `last_result`, `num_failures`, …
moved out of the trial's JSON) or of trial JSON strings (early Ray 2.x); `checkpoints` of trial
JSON strings (Ray 1.x) or of trial objects (Ray ≤ 0.8); beside them `runner_data` (the tuner's
`_metric`, …). What Ray could not write as JSON it wrote as a pickle, never unpickled here: a
trial entry that is one is skipped and counted, a value that is one is read by rundiff_core's
`pickled` (a numpy scalar as its number, else `<pickled module.Class>`). A file over
`MAX_STATE_BYTES` is not read; a truncated one gives the trials complete before the cut. Every
problem is one line in the notes. A state is parsed once per process (`load`). Pure stdlib.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

from rundiff_core import pickled

clean, is_blob = pickled.clean, pickled.is_blob

MAX_STATE_BYTES = 64 << 20  # an experiment_state file larger than this is not parsed
MAX_TRIALS = 100_000  # trial entries read from one file at most
PICKLE_MAGIC = pickled.MAGIC
STATE_NAME = re.compile(r"^experiment_state-.*\.json$")
_CACHE_SIZE = 512  # parsed state files kept per process (an experiment folder has one per launch)
_CACHE_BYTES = 256 << 20  # … and at most this many bytes of them


class Trial:
    """One trial entry of a state file: what a listing needs (id, name, status, folder names),
    and its raw entry, from which `details()` reads its config and last result when a run is
    read (a cached state keeps the entry's JSON text, not its parsed objects)."""

    __slots__ = ("index", "trial_id", "name", "status", "dirnames", "meta", "_src")

    def __init__(self, index: int, raw: dict[str, Any], runtime: dict[str, Any] | None,
                 src: tuple[Any, Any]) -> None:
        self.index, self._src = index, src
        self.trial_id = _ident(raw.get("trial_id"))
        self.status = raw["status"] if isinstance(raw.get("status"), str) else None
        self.meta: dict[str, Any] = {}
        for k in _META_KEYS:
            for where in (runtime or {}, raw):
                v = where.get(k)
                if isinstance(v, str | int | float) and not isinstance(v, bool) and v != "" \
                        and not is_blob(v):
                    self.meta.setdefault(k, v)
        params = raw.get("evaluated_params")
        if isinstance(params, dict) and params:
            self.meta["evaluated_params"] = clean(params, Counter())
        # where the trial folder may be, relative to the state file
        self.dirnames = [v.strip() for k in _DIR_KEYS if isinstance(v := raw.get(k), str)
                         and v.strip() and not is_blob(v)]
        self.name = _trial_name(index, self.trial_id, raw)

    @property
    def key(self) -> str:
        return self.trial_id or self.name

    def details(self) -> tuple[dict[str, Any] | None, dict[str, Any] | None, list[str]]:
        """(config, last_result, notes): the trial's `config` and `last_result` (the run
        metadata's when the entry is a pair), blobs made placeholders, parsed again from the
        entry; a pickled config or last result is None with a note."""
        first, runtime = self._src
        raw = _decode(first)[1]
        run = _decode(runtime)[1] if runtime is not None else None
        if not isinstance(raw, dict):
            return None, None, ["the trial's entry could not be read again"]
        notes: list[str] = []
        config = _mapping(raw.get("config"), "config", notes, Counter())  # counted by its own note
        src = run if isinstance(run, dict) and "last_result" in run else raw
        counts: Counter[str] = Counter()
        # the last result's `config` is the trial's again: not a metric, not read
        last = _mapping(src.get("last_result"), "last_result", notes, counts, drop="config")
        if note := pickled.note("the trial's last_result", counts):
            notes.append(note)
        return config, last, notes


def _mapping(value: Any, what: str, notes: list[str], counts: Counter[str],
             drop: str | None = None) -> dict[str, Any] | None:
    """A mapping of the entry with its blobs made placeholders; None (with a note when it is
    pickled) for anything else."""
    if isinstance(value, dict) and not is_blob(value):
        return clean({k: v for k, v in value.items() if k != drop}, counts)
    if is_blob(value):
        notes.append(f"the trial's `{what}` is pickled in the state file; not unpickled")
    return None


class State:
    """A parsed experiment_state file: its trials, the tuner's metric/mode when JSON holds them,
    and one-line notes (structure, skipped blobs, damage)."""

    __slots__ = ("path", "name", "trials", "notes", "structure", "metric", "mode", "goal_where",
                 "damaged")

    def __init__(self, path: str) -> None:
        self.path = path
        self.name = os.path.basename(path)
        self.trials: list[Trial] = []
        self.notes: list[str] = []
        self.structure = ""
        self.metric: str | list[str] | None = None
        self.mode: str | list[str] | None = None
        self.goal_where = ""
        self.damaged = False  # unreadable, or read only in part

    def goals(self) -> dict[str, str]:
        """{metric: "min" | "max"} when the JSON names both the tuner's metric(s) and mode(s)."""
        metrics = self.metric if isinstance(self.metric, list) else [self.metric]
        modes = self.mode if isinstance(self.mode, list) else [self.mode]
        if len(metrics) != len(modes):
            return {}
        return {m: d for m, d in zip(metrics, modes, strict=True)
                if isinstance(m, str) and m and d in ("min", "max")}


_cache: dict[str, tuple[tuple[int, int], State]] = {}
_lock = threading.Lock()  # LocalSource reads runs from several threads


def load(path: str) -> State:
    """The parsed state of `path`, parsed once per (size, mtime) in this process (a claim, then
    each trial's metadata, read the same file)."""
    try:
        st = os.stat(path)
    except OSError as exc:
        return _refused(State(path), f"unreadable ({exc.strerror}); no trial read")
    stamp = (st.st_size, st.st_mtime_ns)
    with _lock:
        hit = _cache.get(path)
    if hit is not None and hit[0] == stamp:
        return hit[1]
    state = parse(path, st.st_size)  # two threads may parse the same file: the same result
    with _lock:
        _cache.pop(path, None)
        while _cache and (len(_cache) >= _CACHE_SIZE or
                          sum(s[0][0] for s in _cache.values()) + st.st_size > _CACHE_BYTES):
            _cache.pop(next(iter(_cache)))  # the oldest parsed first
        _cache[path] = (stamp, state)
    return state


def _refused(state: State, why: str) -> State:
    state.damaged = True
    state.notes.append(f"{state.name}: {why}")
    return state


def parse(path: str, size: int | None = None) -> State:
    state = State(path)
    try:
        size = os.path.getsize(path) if size is None else size
        if size > MAX_STATE_BYTES:
            return _refused(state, f"larger than {MAX_STATE_BYTES >> 20} MiB ({size >> 20} MiB); "
                            "not read")
        with open(path, "rb") as fh:
            raw = fh.read(MAX_STATE_BYTES + 1)
    except OSError as exc:
        return _refused(state, f"unreadable ({exc.strerror}); no trial read")
    if raw[:2] in PICKLE_MAGIC:
        return _refused(state, f"a pickle despite its .json name (starts {raw[:2].hex(' ')}); not "
                        "unpickled, no trial read")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return _refused(state, f"not UTF-8 text (byte {exc.start}); not read")
    del raw
    entries: list[Any] | None = None
    key = ""
    try:
        data = json.loads(text)
    except RecursionError:
        return _refused(state, "JSON nested too deeply to read; no trial read")
    except ValueError as exc:
        from rundiff_core import salvage_list  # a damaged file's readable entries (stdlib only)

        salvaged = salvage_list(text, ("trial_data", "checkpoints"), limit=MAX_TRIALS)
        msg = getattr(exc, "msg", str(exc).split(":")[0])[:60]
        where = f"{msg.removesuffix(' at')} at byte {getattr(exc, 'pos', '?')} of {len(text)}"
        if salvaged is None or not salvaged.entries:
            return _refused(state, f"not valid JSON ({where}: truncated or damaged); no complete "
                            "trial entry before it, no trial read")
        key, entries = salvaged.key, salvaged.entries
        _refused(state, f"not valid JSON ({where}: truncated or damaged); the {len(entries)} "
                 f"`{key}` entr(ies) complete before it read, the rest (and runner_data) lost")
        data = {key: entries}
    if not isinstance(data, dict):
        return _refused(state, f"a JSON {type(data).__name__}, not Ray Tune's experiment state (an "
                        "object with `trial_data` or `checkpoints`); no trial read")
    if entries is None:
        key = next((k for k in ("trial_data", "checkpoints") if isinstance(data.get(k), list)), "")
        if not key:
            return _refused(state, "no `trial_data` or `checkpoints` list (keys: "
                            f"{', '.join(list(map(str, data))[:5]) or 'none'}); no trial read")
        entries = data[key]
    _read_entries(state, key, entries)
    _read_goal(state, data)
    return state


# -- trials ----------------------------------------------------------------------------------------


def _decode(entry: Any) -> tuple[str, Any]:
    """(kind, value) of one trial entry or run-metadata entry: ("json", dict) for a JSON string
    of an object, ("object", dict) for an object, ("blob", None) for a pickle, ("bad", None) or
    ("deep", None) for what cannot be read."""
    kind = "object"
    if isinstance(entry, str) and not is_blob(entry):
        try:
            entry, kind = json.loads(entry), "json"
        except RecursionError:
            return "deep", None
        except ValueError:
            return "bad", None
    if is_blob(entry):
        return "blob", None
    return (kind, entry) if isinstance(entry, dict) else ("bad", None)


def _read_entries(state: State, key: str, entries: list[Any]) -> None:
    kinds: Counter[str] = Counter()
    for index, entry in enumerate(entries[:MAX_TRIALS]):
        runtime: Any = None
        if isinstance(entry, list | tuple) and not is_blob(entry):
            kinds["pair"] += 1
            first = entry[0] if entry else None
            if len(entry) > 1:
                rkind, runtime = _decode(entry[1])
                if rkind not in ("json", "object"):
                    runtime = None
        else:
            first = entry
        kind, trial = _decode(first)
        kinds[kind] += 1
        if trial is None:
            continue
        state.trials.append(Trial(index, trial, runtime,
                                  (first, entry[1] if runtime is not None else None)))
    state.structure = _structure(key, kinds)
    parts = [f"{state.name}: {state.structure}; {len(state.trials)} trial(s)"]
    parts += [f"{kinds[kind]} {said}" for kind, said in _SKIPPED if kinds[kind]]
    if len(entries) > MAX_TRIALS:
        parts.append(f"only the first {MAX_TRIALS} of {len(entries)} entries read")
    state.notes.append("; ".join(parts))
    if any(kinds[kind] for kind, _ in _SKIPPED) and not state.trials:
        state.damaged = True


_SKIPPED = (("blob", "pickled entr(ies) skipped (never unpickled)"),
            ("bad", "entr(ies) neither a trial object nor its JSON skipped"),
            ("deep", "entr(ies) nested too deeply to read skipped"))


def _structure(key: str, kinds: Counter[str]) -> str:
    if key == "trial_data" and kinds["pair"]:
        return ("Ray 2.x structure (`trial_data`: [trial JSON, run-metadata JSON] pairs, "
                "`runner_data`, `stats`)")
    if key == "trial_data":
        return "early Ray 2.x structure (`trial_data`: trial JSON strings, `runner_data`, `stats`)"
    if kinds["object"] > kinds["json"]:
        return "Ray ≤ 0.8 structure (`checkpoints`: trial objects, `runner_data`)"
    return "Ray 1.x structure (`checkpoints`: trial JSON strings, `runner_data`, `stats`)"


_DIR_KEYS = ("relative_logdir", "logdir", "local_path", "custom_dirname", "_local_path",
             "local_dir_name", "trial_dir_name")
_META_KEYS = ("experiment_tag", "num_failures", "start_time", "error_msg", "error_file",
              "error_filename", "max_failures", "trainable_name", "custom_trial_name")


def _ident(v: Any) -> str | None:
    return str(v) if isinstance(v, str | int) and not isinstance(v, bool) and str(v) else None


def _trial_name(index: int, trial_id: str | None, raw: dict[str, Any]) -> str:
    """How Ray names the trial (`str(trial)`): its `custom_trial_name`, else
    `<trainable>[_<env>]_<trial_id>` (Ray ≤ 0.8: `_<experiment_tag>`), `/` made `_`."""
    custom = raw.get("custom_trial_name")
    if isinstance(custom, str) and custom.strip():
        return custom.strip().replace("/", "_")
    trainable = raw.get("trainable_name")
    ident = trainable if isinstance(trainable, str) and trainable else "trial"
    env = raw["config"].get("env") if isinstance(raw.get("config"), dict) else None
    env = pickled.placeholder(env) if is_blob(env) else env
    if isinstance(env, str) and env:
        if env.startswith("<pickled ") and env.endswith(">"):
            env = env[len("<pickled "):-1].rsplit(".", 1)[-1]  # a class: Ray uses its __name__
        ident += "_" + env
    tail = trial_id or _ident(raw.get("experiment_tag")) or str(index)
    return f"{ident}_{tail}".replace("/", "_")


# -- the tuner's metric and mode -------------------------------------------------------------------

_GOAL_HOLDERS = ("search", "scheduler", "tune_config", "tuner", "run_args", "tune_run", "searcher")


def _read_goal(state: State, data: dict[str, Any]) -> None:
    """The tuner's metric and mode where the JSON holds them: `runner_data` (`_metric`,
    `_mode`), a JSON search algorithm / scheduler / tune config / `tune.run` arguments beside it
    or inside it (`metric`, `mode`). Pickled ones are not looked into."""
    places: list[tuple[str, dict[str, Any]]] = []
    runner = data.get("runner_data")
    if isinstance(runner, dict):
        places.append(("runner_data", runner))
    for where, holder in (("", data), ("runner_data.", runner if isinstance(runner, dict) else {})):
        for k, v in holder.items():
            if isinstance(v, dict) and not is_blob(v) and any(h in str(k).lower() for h in _GOAL_HOLDERS):
                places.append((f"{where}{k}", v))
    for where, d in places:
        metric = d["_metric"] if d.get("_metric") is not None else d.get("metric")
        mode = d["_mode"] if d.get("_mode") is not None else d.get("mode")
        if state.metric is None and _one_or_list(metric, lambda m: isinstance(m, str) and m != ""):
            state.metric = metric
            state.goal_where = where
        if state.mode is None and _one_or_list(mode, lambda m: m in ("min", "max")):
            state.mode = mode
            if state.metric is not None and not state.goal_where.endswith(where):
                state.goal_where += f" + {where}"


def _one_or_list(v: Any, ok: Callable[[Any], bool]) -> bool:
    """`ok(v)`, or `v` a non-empty list of which every item is ok."""
    return ok(v) or (isinstance(v, list) and bool(v) and all(ok(x) for x in v))
