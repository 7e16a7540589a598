"""The config files beside a run: which names are read, how each is parsed, how several merge.

One reader for every adapter: the `local:` layouts (`read_config_files`, the names they always
read) and the TensorBoard source (`read_run_config`: a config file found beside an event file
belongs to that run, whichever adapter reads the events). Serialized objects in a file are shown
as one opaque value each (parsing.opaque); YAML goes through the hostile-input bounds
(parsing.yamlsafe). Importing it costs `os` alone: a sniff that asks for CONFIG_FILES
imports nothing more.

Tracker metadata is never config: a W&B `config.yaml` (`wandb_version`, `{desc, value}` entries)
gives its values, its `_wandb` block goes to meta; `wandb-metadata.json` (host, start time, git,
program, python, os, gpu) goes to meta whole.
"""

from __future__ import annotations

import os
from typing import Any

from .bounded import read_bounded

MAX_JSON_BYTES = 512 << 20  # what read_json_file loads at most (the local layouts' limit)
MAX_CONFIG_BYTES = 8 << 20  # a config file beside an event file larger than this is not a config

# what the local layouts read beside a run (later files win a key both set)
CONFIG_FILES = ("config.json", "config.yaml", "config.yml", "hparams.yaml", "params.yaml",
                "args.json", "variant.json", "params.json")
# the usual names of a run's config files, read beside TensorBoard event files: CONFIG_FILES, the
# argparse dumps (`args.yaml`, `args.txt`), YOLOv5's `opt.yaml` and its `hyp.yaml`
RUN_CONFIG_FILES = ("config.json", "config.yaml", "config.yml", "hparams.yaml", "params.yaml",
                    "params.json", "args.json", "args.yaml", "args.txt", "opt.yaml", "hyp.yaml",
                    "variant.json")
# files whose mapping goes under one key: YOLOv5's hyp.yaml is `hyp` (opt.yaml names the file
# there, or nests the same values), as the ultralytics layout reads it
NESTED = {"hyp.yaml": "hyp"}
# tracker metadata beside a run: meta, never config
METADATA_FILES = ("wandb-metadata.json",)
WANDB_KEYS = ("_wandb", "wandb_version")


# -- one file --------------------------------------------------------------------------------------

def read_json_file(path: str, notes: list[str]) -> Any:
    """A JSON file's value (None, with a note, when too large or not JSON)."""
    import json

    name = os.path.basename(path)
    raw, why = read_bounded(path, MAX_JSON_BYTES)
    if raw is None:
        notes.append(f"{name}: {why}; not read")
        return None
    try:
        return json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        notes.append(f"{name}: not valid JSON ({str(exc)[:80]}); skipped")
        return None


def read_config_yaml(path: str, notes: list[str]) -> Any:
    """A YAML config: python tags read as plain data, serialized objects (pickled tensors,
    `!!binary`, …) as one opaque value each (parsing.opaque.load_yaml_config), said in a note."""
    from .opaque import load_yaml_config
    from .yamlsafe import YamlRefused

    name = os.path.basename(path)
    try:
        with open(path, "rb") as fh:
            return load_yaml_config(fh.read(), name, notes)
    except YamlRefused as exc:
        notes.append(str(exc))
    except OSError as exc:
        notes.append(f"{name}: unreadable ({exc.strerror}); ignored")
    except Exception as exc:  # malformed YAML: PyYAML raises many types
        notes.append(f"{name}: unreadable YAML ({type(exc).__name__}); ignored")
    return None


def read_config_json(path: str, notes: list[str]) -> Any:
    """A JSON config: jsonpickled objects (Sacred's `py/object`, `py/reduce`, `py/b64`) as one
    opaque value each, or read when readable (parsing.opaque.opaque_config), said in a note."""
    from .opaque import opaque_config

    data = read_json_file(path, notes)
    return None if data is None else opaque_config(data, notes, os.path.basename(path))


def _scalar(text: str) -> Any:
    """A value written by str(): a Python literal when it is one, else the text."""
    import ast

    text = text.strip()
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("none", "null", "~"):
        return None
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text


def _namespace(text: str) -> dict[str, Any] | None:
    """`Namespace(lr=0.1, name='x')` (str of argparse's Namespace) → its fields; values that are
    not literals (`device(type='cuda')`, `PosixPath('…')`) stay as the text written."""
    if not (text.startswith("Namespace(") and text.endswith(")")):
        return None
    import ast

    try:
        node = ast.parse("f" + text[len("Namespace"):], mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    if not isinstance(node, ast.Call) or node.args:
        return None
    out: dict[str, Any] = {}
    for kw in node.keywords:
        if kw.arg is None:
            return None
        try:
            out[kw.arg] = ast.literal_eval(kw.value)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            out[kw.arg] = ast.unparse(kw.value)
    return out


def _key_value_lines(text: str) -> dict[str, Any] | None:
    """One `key<sep>value` per line (`key: value`, `key=value`, `key,value`, `key : value`),
    `#` lines skipped: what scripts write with a loop over vars(args). None unless every line
    is one."""
    out: dict[str, Any] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        cut = min((i for i in (line.find(s) for s in (":", "=", ",")) if i > 0), default=-1)
        key = line[:cut].strip() if cut > 0 else ""
        if not key or not key.replace("_", "").replace("-", "").replace(".", "").isalnum():
            return None
        out[key] = _scalar(line[cut + 1:])
    return out or None


def read_args_txt(path: str, notes: list[str]) -> Any:
    """`args.txt`, as scripts write it: JSON (`json.dump(vars(args))`), `str(args)`
    (`Namespace(…)`), YAML, or one `key: value` / `key=value` / `key,value` per line. Anything
    else (a command line, prose) is not a mapping: None, with a note."""
    name = os.path.basename(path)
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_CONFIG_BYTES + 1)
        text = raw.decode("utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        notes.append(f"{name}: unreadable ({type(exc).__name__}); ignored")
        return None
    if text.startswith("{"):
        return read_config_json(path, notes)
    got = _namespace(text)
    if got is not None:
        notes.append(f"{name}: an argparse Namespace written with str(); its fields read")
        return got
    said: list[str] = []
    data = read_config_yaml(path, said)
    if isinstance(data, dict):
        notes += said
        return data
    got = _key_value_lines(text)
    if got is not None:
        notes.append(f"{name}: one key and value per line; values read as Python literals")
        return got
    notes.append(f"{name}: not JSON, YAML, an argparse Namespace or key/value lines; ignored")
    return None


def read_config_file(path: str, notes: list[str]) -> Any:
    """One config file by its extension: `.json` JSON, `.txt` read_args_txt, else YAML."""
    if path.endswith(".json"):
        return read_config_json(path, notes)
    if path.endswith(".txt"):
        return read_args_txt(path, notes)
    return read_config_yaml(path, notes)


# -- the local layouts' reader (behaviour unchanged since it lived in adapters/local) ---------------

def read_config_files(folder: str, names: tuple[str, ...] = CONFIG_FILES) -> tuple[dict, list[str]]:
    """A run's config from the config files beside it, each named in a note."""
    config: dict[str, Any] = {}
    notes: list[str] = []
    for name in names:
        path = os.path.join(folder, name)
        if not os.path.isfile(path):
            continue
        said: list[str] = []  # what reading it found (serialized objects, damage) follows its line
        data = read_config_file(path, said)
        if isinstance(data, dict):
            config.update(data)
            notes.append(f"{name} → config")
        elif data is not None:
            notes.append(f"{name}: not a mapping; ignored")
        notes += said
    return config, notes


# -- a run's config: the files beside it, merged beneath what the run itself recorded --------------

class RunConfig:
    """What `read_run_config` found: the merged `config`, `notes` (one per file, which keys it
    gave), `meta` (tracker metadata, never config) and `files` ({file: the keys the config has
    from it}); `sources` names what gave keys, in order (`hparams plugin`, `opt.yaml`, …)."""

    __slots__ = ("config", "notes", "meta", "files", "sources")

    def __init__(self) -> None:
        self.config: dict[str, Any] = {}
        self.notes: list[str] = []
        self.meta: dict[str, Any] = {}
        self.files: dict[str, list[str]] = {}
        self.sources: list[str] = []

    def __repr__(self) -> str:
        return f"RunConfig(sources={self.sources!r}, keys={list(self.config)!r})"


def _keys_text(keys: list[str], n: int = 6) -> str:
    return ", ".join(keys[:n]) + (f", … ({len(keys) - n} more)" if len(keys) > n else "")


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "…"


def same_value(a: Any, b: Any) -> bool:
    """Equal as config values: ==, the same number (1 and 1.0), or the same text once written
    (a plugin that stores `[1, 2]` as the string '[1, 2]', a tuple read back as a list)."""
    if a == b:
        return True
    if isinstance(a, int | float) and isinstance(b, int | float) and \
            not isinstance(a, bool) and not isinstance(b, bool):
        return float(a) == float(b)
    if isinstance(a, tuple | list) and isinstance(b, tuple | list):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=True))
    return isinstance(a, str) != isinstance(b, str) and str(a) == str(b)


def _norm(path: str) -> str:
    return path.replace("/", ".")


def _wandb_config(data: dict[str, Any], meta: dict[str, Any]) -> dict[str, Any] | None:
    """A W&B `config.yaml` (`wandb_version: 1`, each entry `{desc, value}`): its values; its
    `_wandb` block and version to meta. None when `data` is not one."""
    if "wandb_version" not in data and "_wandb" not in data:
        return None
    wrapped = {k: v for k, v in data.items() if k not in WANDB_KEYS}
    if not all(isinstance(v, dict) and "value" in v and set(v) <= {"desc", "value"}
               for v in wrapped.values()):
        return None
    meta["wandb_config"] = {k: data[k] for k in WANDB_KEYS if k in data}
    return {k: v["value"] for k, v in wrapped.items()}


def _merge_beneath(out: dict[str, Any], extra: dict[str, Any], leaves: dict[str, Any],
                   prefixes: set[str], path: tuple[str, ...],
                   said: dict[str, list[tuple[str, ...]]]) -> None:
    """Add `extra`'s keys to `out` where the base (its leaves as normalised dotted paths, and
    their prefixes) gives no value; `said` records each key path as added, kept (the base has
    the same value) or differ (the base's value stays)."""
    for k, v in extra.items():
        p = (*path, str(k))
        n = _norm(".".join(p))
        if n in leaves:
            said["kept" if same_value(leaves[n], v) else "differ"].append(p)
        elif isinstance(v, dict) and v and n in prefixes:
            sub = out.setdefault(k, {})
            if not isinstance(sub, dict):  # the base's flat key holds it; nothing to merge into
                said["kept"].append(p)
                continue
            _merge_beneath(sub, v, leaves, prefixes, p, said)
        else:
            out[k] = v
            said["added"].append(p)


def read_run_config(folder: str, names: tuple[str, ...] = RUN_CONFIG_FILES, *,
                    base: dict[str, Any] | None = None, base_name: str = "hparams plugin",
                    metadata: tuple[str, ...] = METADATA_FILES) -> RunConfig:
    """The config of the run in `folder`: `base` (what the run's own log recorded — the
    TensorBoard hparams plugin's values) with the config files beside it merged beneath: a key
    the base gives keeps the base's value (flat `a/b` or `a.b` keys match nested ones), a note
    names what each file gave and where it differs. Between files, a later name wins a key two
    set (as `read_config_files`), said in a note; a file of NESTED goes under its key (`hyp.yaml`
    → `hyp`). Files over MAX_CONFIG_BYTES are named, not read. Never raises on a bad file."""
    out = RunConfig()
    lines: dict[str, int] = {}  # file → the index of its note
    merged: dict[str, Any] = {}
    origin: dict[str, str] = {}  # top-level key → the file that set it
    for name in names:
        path = os.path.join(folder, name)
        if not os.path.isfile(path):
            continue
        try:
            size = os.path.getsize(path)
        except OSError:
            continue
        if size > MAX_CONFIG_BYTES:
            out.notes.append(f"{name}: over {MAX_CONFIG_BYTES >> 20} MiB, not read as config")
            continue
        said: list[str] = []
        data = read_config_file(path, said)
        if isinstance(data, dict):
            unwrapped = _wandb_config(data, out.meta) if name.endswith((".yaml", ".yml")) else None
            if unwrapped is not None:
                data = unwrapped
                said.append(f"{name}: a W&B config ({{desc, value}} entries unwrapped; _wandb "
                            "and wandb_version → meta.wandb_config, not config)")
            if name in NESTED:
                data = {NESTED[name]: data}
            if not data:
                out.notes.append(f"{name}: an empty mapping; no config")
                out.notes += said
                continue
            over = [(k, origin[k], merged[k]) for k in data
                    if k in merged and not same_value(merged[k], data[k])]
            merged.update(data)
            origin.update(dict.fromkeys(data, name))
            out.files[name] = list(data)
            if name in NESTED:
                inner = data[NESTED[name]]
                what = f"config.{NESTED[name]} ({len(inner) if isinstance(inner, dict) else 1} key(s))"
            else:
                what = f"config ({len(data)} key(s): {_keys_text(list(data))})"
            line = f"{name} → {what}"
            if over:
                line += ("; over " + ", ".join(f"{k} of {where} ({_short(was)})"
                                               for k, where, was in over[:4])
                         + ("…" if len(over) > 4 else "") + f": {name}'s value kept")
            lines[name] = len(out.notes)
            out.notes.append(line)
        elif data is not None:
            out.notes.append(f"{name}: not a mapping; ignored")
        out.notes += said
    for name in metadata:
        path = os.path.join(folder, name)
        if not os.path.isfile(path):
            continue
        said = []
        try:
            small = os.path.getsize(path) <= MAX_CONFIG_BYTES
        except OSError:
            continue
        data = read_json_file(path, said) if small else None
        if isinstance(data, dict):
            out.meta["tracker_metadata"] = {"file": name, **data}
            keys = [k for k in ("host", "startedAt", "git", "program", "python", "os", "gpu")
                    if k in data]
            out.notes.append(f"{name} → meta.tracker_metadata (tracker metadata"
                             + (f": {', '.join(keys)}" if keys else "") + "; never config)")
        out.notes += said

    base = dict(base or {})
    if base:
        out.sources.append(base_name)
    if not merged:
        out.config = base
        return out
    if not base:
        out.config = merged
        out.files = {n: [k for k in keys if origin[k] == n] for n, keys in out.files.items()}
        out.sources += [n for n in out.files if out.files[n]]
        return out
    import copy

    from .nested import flatten

    flat = {_norm(k): v for k, v in flatten(base, sep=".").items()}
    prefixes = {p[:i] for p in flat for i in range(len(p)) if p[i] == "."}
    fate: dict[str, list[tuple[str, ...]]] = {"added": [], "kept": [], "differ": []}
    config = copy.deepcopy(base)
    _merge_beneath(config, merged, flat, prefixes, (), fate)
    out.config = config
    by_file: dict[str, dict[str, list[str]]] = {}
    for label, paths in fate.items():
        for p in paths:
            by_file.setdefault(origin.get(p[0], "?"), {}).setdefault(label, []).append(".".join(p))
    for name in out.files:
        got = by_file.get(name, {})
        bits = [f"{len(got.get('added', []))} key(s) added"]
        if got.get("kept"):
            bits.append(f"{len(got['kept'])} the {base_name} also gives (same value)")
        if got.get("differ"):
            bits.append(f"{len(got['differ'])} the {base_name} gives another value "
                        f"({_keys_text(got['differ'], 4)}: the {base_name}'s kept)")
        if got.get("kept") or got.get("differ"):
            out.notes[lines[name]] += f"; beneath the {base_name}: " + ", ".join(bits)
        out.files[name] = got.get("added", [])
    out.sources = [base_name] + [n for n in out.files if out.files[n]]
    return out


__all__ = ["CONFIG_FILES", "MAX_CONFIG_BYTES", "MAX_JSON_BYTES", "METADATA_FILES", "NESTED",
           "RUN_CONFIG_FILES", "RunConfig", "read_args_txt", "read_config_file",
           "read_config_files", "read_config_json", "read_json_file", "read_run_config", "read_config_yaml",
           "same_value"]
