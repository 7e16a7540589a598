"""Ray Tune's experiment state, `experiment_state-<date>.json`, read as JSON and nothing else.

The file's shape tells which Ray wrote it (each handled by its structure, never by a version
string, and said in a note):

- `trial_data`: a list of `[trial JSON, run-metadata JSON]` pairs — Ray 2.x since the trial's
  run metadata (`last_result`, `num_failures`, …) moved out of the trial's own JSON;
- `trial_data`: a list of trial JSON strings — early Ray 2.x;
- `checkpoints`: a list of trial JSON strings — Ray 1.x;
- `checkpoints`: a list of trial objects — Ray ≤ 0.8.

Beside them `runner_data` (the tuner's own attributes: `_metric`, …) and `stats`. Whatever Ray
could not write as JSON it wrote as a pickle: `{"_type": "CLOUDPICKLE_FALLBACK", "value": <hex>}`,
bare hex strings of a pickle (`80 05 …`), base64 pickles, `__pickled__`/`_serialized` wrappers.
None of them is ever unpickled: a trial entry that is one is skipped and counted, a value that is
one is read from its opcodes by `pickletools`' disassembler (which builds no object and imports
nothing), first 4 KiB only — a numpy scalar as its number (dtype and raw bytes), anything else as
a short placeholder, `<pickled module.Class>`, the class its pickle names. A file over
`MAX_STATE_BYTES` is not read; a truncated one gives the trials complete before the cut. Every
problem is one line in the notes. A state is parsed once per process (`load`). Pure stdlib.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
import threading
from collections import Counter
from typing import Any

MAX_STATE_BYTES = 64 << 20  # an experiment_state file larger than this is not parsed
MAX_TRIALS = 100_000  # trial entries read from one file at most
PICKLE_MAGIC = (b"\x80\x02", b"\x80\x03", b"\x80\x04", b"\x80\x05")
STATE_NAME = re.compile(r"^experiment_state-.*\.json$")
_HEX_PICKLE = re.compile(r"^80(?:0[2-5])(?:[0-9a-fA-F]{2})*$")
_B64_PICKLE = re.compile(r"^gA[I-X][A-Za-z0-9+/]*={0,2}$")  # base64 of b"\x80\x02".."\x80\x05"
_BLOB_KEYS = ("__pickled__", "_serialized", "__serialized__", "py/b64")
_INTERNAL = ("cloudpickle", "ray.cloudpickle", "copyreg", "copy_reg", "builtins", "__builtin__",
             "_codecs", "collections")
_CACHE_SIZE = 512  # parsed state files kept per process (an experiment folder has one per launch)
_CACHE_BYTES = 256 << 20  # … and at most this many bytes of them
_STRING_OPS = ("SHORT_BINUNICODE", "BINUNICODE", "UNICODE", "BINUNICODE8", "SHORT_BINSTRING",
               "BINSTRING", "STRING")


class Trial:
    """One trial entry of a state file: what a listing needs (id, name, status, folder names),
    and its raw entry, from which `details()` reads its config and last result when a run is
    read (a cached state keeps the entry's JSON text, not its parsed objects)."""

    __slots__ = ("index", "trial_id", "trainable", "name", "status", "dirnames", "experiment_tag",
                 "meta", "_src")

    def __init__(self, index: int) -> None:
        self.index = index
        self.trial_id: str | None = None
        self.trainable: str | None = None
        self.name = ""
        self.status: str | None = None
        self.dirnames: list[str] = []  # where the trial folder may be, relative to the state file
        self.experiment_tag: str | None = None
        self.meta: dict[str, Any] = {}
        self._src: tuple[Any, Any] = (None, None)

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
        config = raw.get("config")
        if isinstance(config, dict):  # its placeholders are counted by the config's own note
            config = clean(config, Counter())
        else:
            if is_blob(config):
                notes.append("the trial's `config` is pickled in the state file; not unpickled")
            config = None
        src = run if isinstance(run, dict) and "last_result" in run else raw
        last = src.get("last_result")
        counts: Counter[str] = Counter()
        if isinstance(last, dict):  # its `config` is the trial's again: not a metric, not read
            last = clean({k: v for k, v in last.items() if k != "config"}, counts)
        else:
            if is_blob(last):
                notes.append("the trial's `last_result` is pickled in the state file; not unpickled")
            last = None
        note = _blob_note("the trial's last_result", counts)
        if note:
            notes.append(note)
        return config, last, notes


class State:
    """A parsed experiment_state file: its trials, the tuner's metric/mode when JSON holds them,
    and one-line notes (structure, skipped blobs, damage)."""

    __slots__ = ("path", "name", "trials", "notes", "structure", "metric", "mode", "goal_where",
                 "stats", "damaged")

    def __init__(self, path: str) -> None:
        self.path = path
        self.name = os.path.basename(path)
        self.trials: list[Trial] = []
        self.notes: list[str] = []
        self.structure = ""
        self.metric: str | list[str] | None = None
        self.mode: str | list[str] | None = None
        self.goal_where = ""
        self.stats: dict[str, Any] = {}
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
        stamp = (st.st_size, st.st_mtime_ns)
    except OSError as exc:
        state = State(path)
        state.damaged = True
        state.notes.append(f"{state.name}: unreadable ({exc.strerror}); no trial read")
        return state
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


def parse(path: str, size: int | None = None) -> State:
    state = State(path)
    name = state.name
    try:
        size = os.path.getsize(path) if size is None else size
        if size > MAX_STATE_BYTES:
            state.damaged = True
            state.notes.append(f"{name}: larger than {MAX_STATE_BYTES >> 20} MiB ({size >> 20} MiB); "
                               "not read")
            return state
        with open(path, "rb") as fh:
            raw = fh.read(MAX_STATE_BYTES + 1)
    except OSError as exc:
        state.damaged = True
        state.notes.append(f"{name}: unreadable ({exc.strerror}); no trial read")
        return state
    if raw[:2] in PICKLE_MAGIC:
        state.damaged = True
        state.notes.append(f"{name}: a pickle despite its .json name (starts {raw[:2].hex(' ')}); "
                           "not unpickled, no trial read")
        return state
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        state.damaged = True
        state.notes.append(f"{name}: not UTF-8 text (byte {exc.start}); not read")
        return state
    del raw
    entries: list[Any] | None = None
    key = ""
    try:
        data = json.loads(text)
    except RecursionError:
        state.damaged = True
        state.notes.append(f"{name}: JSON nested too deeply to read; no trial read")
        return state
    except ValueError as exc:
        state.damaged = True
        from rundiff_core import salvage_list  # a damaged file's readable entries (stdlib only)

        salvaged = salvage_list(text, ("trial_data", "checkpoints"), limit=MAX_TRIALS)
        msg = getattr(exc, "msg", str(exc).split(":")[0])[:60]
        where = f"{msg.removesuffix(' at')} at byte {getattr(exc, 'pos', '?')} of {len(text)}"
        if salvaged is None or not salvaged.entries:
            state.notes.append(f"{name}: not valid JSON ({where}: truncated or damaged); no "
                               "complete trial entry before it, no trial read")
            return state
        key, entries = salvaged.key, salvaged.entries
        state.notes.append(f"{name}: not valid JSON ({where}: truncated or damaged); the "
                           f"{len(entries)} `{key}` entr(ies) complete before it read, the rest "
                           "(and runner_data) lost")
        data = {key: entries}
    if not isinstance(data, dict):
        state.damaged = True
        state.notes.append(f"{name}: a JSON {type(data).__name__}, not Ray Tune's experiment state "
                           "(an object with `trial_data` or `checkpoints`); no trial read")
        return state
    if entries is None:
        for k in ("trial_data", "checkpoints"):
            if isinstance(data.get(k), list):
                key, entries = k, data[k]
                break
    if entries is None:
        state.damaged = True
        state.notes.append(f"{name}: no `trial_data` or `checkpoints` list (keys: "
                           f"{', '.join(list(map(str, data))[:5]) or 'none'}); no trial read")
        return state
    _read_entries(state, key, entries)
    _read_goal(state, data)
    stats = data.get("stats")
    if isinstance(stats, dict):
        state.stats = {k: v for k, v in stats.items() if isinstance(v, int | float | str)
                       and not isinstance(v, bool)}
    elif isinstance(data.get("timestamp"), int | float):  # Ray 0.x: top-level timestamp
        state.stats = {"timestamp": data["timestamp"]}
    return state


# -- blobs -----------------------------------------------------------------------------------------


def is_blob(value: Any) -> bool:
    """A value only pickle could read: a CLOUDPICKLE_FALLBACK wrapper, a `__pickled__` /
    `_serialized` wrapper, or the hex or base64 text of a whole pickle (protocol 2–5 opening,
    STOP closing: `8003` alone is a port, not a pickle)."""
    if isinstance(value, dict):
        return value.get("_type") == "CLOUDPICKLE_FALLBACK" or any(k in value for k in _BLOB_KEYS)
    if not isinstance(value, str) or len(value) < 8:
        return False
    if value[:2] == "80":
        return value[-2:].lower() == "2e" and bool(_HEX_PICKLE.match(value))
    if value[:2] == "gA" and len(value) >= 16 and len(value) % 4 == 0 and _B64_PICKLE.match(value):
        try:
            return base64.b64decode(value[-8:]).endswith(b".")
        except (ValueError, binascii.Error):
            return False
    return False


def _blob_bytes(value: Any) -> bytes | None:
    """The first 4 KiB of a blob's pickle bytes (decoded from hex or base64, never loaded)."""
    if isinstance(value, dict):
        inner = value.get("value")
        for k in _BLOB_KEYS:
            if k in value:
                inner = value[k]
        value = inner
    if not isinstance(value, str):
        return None
    try:
        if value[:2] == "80":
            return bytes.fromhex(value[:8192])
        head = value[:5464]
        return base64.b64decode(head + "=" * (-len(head) % 4))
    except (ValueError, binascii.Error):
        return None


def placeholder(value: Any) -> Any:
    """What a blob is shown as, read with pickletools' disassembler (no object built, nothing
    imported) from its first 4 KiB: None for a pickled None (`80 05 4e 2e`); a numpy scalar's
    number, decoded from its dtype and bytes (RLlib reports counters as `np.int64`); else
    `<pickled module.Class>` naming the first class or function the pickle refers to; else
    `<pickled object>`."""
    raw = _blob_bytes(value)
    if not raw:
        return "<pickled object>"
    globals_, texts, blobs, ops = _scan(raw)
    if [o for o in ops if o not in ("PROTO", "FRAME")] in (["NONE", "STOP"], ["NONE"]):
        return None
    if globals_ and globals_[0] in _NUMPY_SCALAR:
        if not blobs and "_codecs.encode" in globals_:  # protocol 2: bytes as latin-1 text
            i = next((i for i, t in enumerate(texts) if t in ("latin1", "latin-1")), 0)
            if i > 0:
                try:
                    blobs = [texts[i - 1].encode("latin-1")]
                except UnicodeEncodeError:
                    pass
        number = _numpy_scalar(texts, blobs)
        if number is not None:
            return number
    for g in globals_:
        module, _, name = g.rpartition(".")
        got = _global(module, name)
        if got:
            return f"<pickled {got}>"
    return "<pickled object>"


_NUMPY_SCALAR = ("numpy.core.multiarray.scalar", "numpy._core.multiarray.scalar")
_DTYPES = {"f2": "e", "f4": "f", "f8": "d", "i1": "b", "i2": "h", "i4": "i", "i8": "q", "u1": "B",
           "u2": "H", "u4": "I", "u8": "Q", "b1": "?"}


def _scan(raw: bytes) -> tuple[list[str], list[str], list[bytes], list[str]]:
    """The globals (`module.name`, in order), texts and byte strings a pickle's opcodes name,
    and the opcodes: a string push, or a memo fetch of one, is tracked so STACK_GLOBAL's module
    and name are known."""
    import pickletools

    stack: list[str | None] = []
    memo: dict[int, str | None] = {}
    globals_: list[str] = []
    texts: list[str] = []
    blobs: list[bytes] = []
    ops: list[str] = []
    try:
        for op, arg, _pos in pickletools.genops(raw):
            ops.append(op.name)
            if len(ops) > 4000:
                break
            if op.name == "GLOBAL" and isinstance(arg, str):
                globals_.append(arg.replace(" ", "."))
                stack.append(None)
            elif op.name in _STRING_OPS and isinstance(arg, str):
                texts.append(arg)
                stack.append(arg)
            elif op.name in ("SHORT_BINBYTES", "BINBYTES", "BINBYTES8") and isinstance(arg, bytes):
                blobs.append(arg)
                stack.append(None)
            elif op.name == "MEMOIZE":
                memo[len(memo)] = stack[-1] if stack else None
            elif op.name in ("BINPUT", "LONG_BINPUT", "PUT") and isinstance(arg, int):
                memo[arg] = stack[-1] if stack else None
            elif op.name in ("BINGET", "LONG_BINGET", "GET") and isinstance(arg, int):
                stack.append(memo.get(arg))
            elif op.name == "STACK_GLOBAL":
                module, name = (stack[-2], stack[-1]) if len(stack) >= 2 else (None, None)
                if module and name:
                    globals_.append(f"{module}.{name}")
                stack.append(None)
            else:
                stack.append(None)
    except Exception:  # noqa: BLE001 - a cut or hostile pickle: the disassembler stops there
        pass
    return globals_, texts, blobs, ops


def _numpy_scalar(texts: list[str], blobs: list[bytes]) -> int | float | bool | None:
    """`numpy.core.multiarray.scalar(dtype(code), bytes)`: the number its bytes hold."""
    import struct

    code = next((t for t in texts if t in _DTYPES), None)
    order = next((t for t in texts if t in ("<", ">", "|", "=")), "<")
    if code is None or len(blobs) != 1:
        return None
    fmt = ("<" if order in ("|", "=") else order) + _DTYPES[code]
    if struct.calcsize(fmt) != len(blobs[0]):
        return None
    value = struct.unpack(fmt, blobs[0])[0]
    return bool(value) if code == "b1" else value


def _global(module: str, name: str) -> str | None:
    if not module or not name or module.split(".")[0] in _INTERNAL or module.startswith(_INTERNAL):
        return None
    return f"{module}.{name}"[:120]


def clean(value: Any, counts: Counter[str], depth: int = 0) -> Any:
    """`value` with every blob replaced by its placeholder (counted in `counts`)."""
    if depth > 64:
        return value
    if is_blob(value):
        shown = placeholder(value)
        counts["numpy scalar read as its number" if isinstance(shown, int | float)
               else str(shown)] += 1
        return shown
    if isinstance(value, dict):
        return {k: clean(v, counts, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        if not any(isinstance(v, dict | list | str) for v in value):
            return value  # numbers (hist_stats' per-episode lists): nothing to look into
        return [clean(v, counts, depth + 1) for v in value]
    return value


def _blob_note(what: str, counts: Counter[str]) -> str | None:
    if not counts:
        return None
    shown = ", ".join(f"{k} ×{n}" if n > 1 else k for k, n in sorted(counts.items()))
    return (f"{what}: {sum(counts.values())} pickled value(s), never unpickled: read from their "
            f"bytes or shown as placeholders ({shown})")


# -- trials ----------------------------------------------------------------------------------------


def _decode(entry: Any) -> tuple[str, Any]:
    """(kind, value) of one trial entry or run-metadata entry: ("json", dict) for a JSON string
    of an object, ("object", dict) for an object, ("blob", None) for a pickle, ("bad", None)."""
    if is_blob(entry):
        return "blob", None
    if isinstance(entry, dict):
        return "object", entry
    if isinstance(entry, str):
        try:
            got = json.loads(entry)
        except RecursionError:
            return "deep", None
        except ValueError:
            return "bad", None
        if is_blob(got):
            return "blob", None
        return ("json", got) if isinstance(got, dict) else ("bad", None)
    return "bad", None


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
        t = _trial(index, trial, runtime)
        t._src = (first, entry[1] if runtime is not None else None)
        state.trials.append(t)
    state.structure = _structure(key, kinds)
    skipped = kinds["blob"] + kinds["bad"] + kinds["deep"]
    parts = [f"{state.name}: {state.structure}; {len(state.trials)} trial(s)"]
    if kinds["blob"]:
        parts.append(f"{kinds['blob']} pickled entr(ies) skipped (never unpickled)")
    if kinds["bad"]:
        parts.append(f"{kinds['bad']} entr(ies) neither a trial object nor its JSON skipped")
    if kinds["deep"]:
        parts.append(f"{kinds['deep']} entr(ies) nested too deeply to read skipped")
    if len(entries) > MAX_TRIALS:
        parts.append(f"only the first {MAX_TRIALS} of {len(entries)} entries read")
    state.notes.append("; ".join(parts))
    if skipped and not state.trials:
        state.damaged = True


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


def _trial(index: int, raw: dict[str, Any], runtime: dict[str, Any] | None) -> Trial:
    t = Trial(index)
    tid = raw.get("trial_id")
    t.trial_id = str(tid) if isinstance(tid, str | int) and not isinstance(tid, bool) and str(tid) else None
    trainable = raw.get("trainable_name")
    t.trainable = trainable if isinstance(trainable, str) and trainable else None
    status = raw.get("status")
    t.status = status if isinstance(status, str) else None
    tag = raw.get("experiment_tag")
    t.experiment_tag = str(tag) if isinstance(tag, str | int) and not isinstance(tag, bool) else None
    for k in _META_KEYS:
        for where in (runtime or {}, raw):
            v = where.get(k)
            if isinstance(v, str | int | float) and not isinstance(v, bool) and v != "" \
                    and not is_blob(v):
                t.meta.setdefault(k, v)
    params = raw.get("evaluated_params")
    if isinstance(params, dict) and params:
        t.meta["evaluated_params"] = clean(params, Counter())
    for k in _DIR_KEYS:
        v = raw.get(k)
        if isinstance(v, str) and v.strip() and not is_blob(v):
            t.dirnames.append(v.strip())
    config = raw.get("config")
    env = config.get("env") if isinstance(config, dict) else None
    t.name = trial_name(t, raw, placeholder(env) if is_blob(env) else env)
    return t


def trial_name(t: Trial, raw: dict[str, Any], env: Any = None) -> str:
    """How Ray names the trial (`str(trial)`): its `custom_trial_name`, else
    `<trainable>[_<env>]_<trial_id>` (Ray ≤ 0.8: `_<experiment_tag>`), `/` made `_`."""
    custom = raw.get("custom_trial_name")
    if isinstance(custom, str) and custom.strip():
        return custom.strip().replace("/", "_")
    ident = t.trainable or "trial"
    if isinstance(env, str) and env:
        if env.startswith("<pickled ") and env.endswith(">"):
            env = env[len("<pickled "):-1].rsplit(".", 1)[-1]  # a class: Ray uses its __name__
        ident += "_" + env
    tail = t.trial_id or t.experiment_tag or str(t.index)
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
        metric = _first(d, ("_metric", "metric"))
        mode = _first(d, ("_mode", "mode"))
        if state.metric is None and _is_metric(metric):
            state.metric = metric
            state.goal_where = where
        if state.mode is None and _is_mode(mode):
            state.mode = mode
            if state.metric is not None and not state.goal_where.endswith(where):
                state.goal_where += f" + {where}"


def _first(d: dict[str, Any], keys: tuple[str, ...]) -> Any:
    for k in keys:
        if d.get(k) is not None:
            return d[k]
    return None


def _is_metric(v: Any) -> bool:
    return (isinstance(v, str) and bool(v)) or (
        isinstance(v, list) and bool(v) and all(isinstance(x, str) and x for x in v))


def _is_mode(v: Any) -> bool:
    return v in ("min", "max") or (isinstance(v, list) and bool(v) and all(x in ("min", "max") for x in v))
