"""Keras `History.history` dumped as JSON (`json.dump(history.history, f)`): a dict of equal-length
lists of numbers, one list per metric (`loss`, `accuracy`, `val_loss`, `lr`, per-output names
such as `LMOutput_loss`), one value per epoch. Each file is one run; a folder may hold several
(its other files are left to the `files` sniff).

- claimed by content, under any `.json` name (`history.json`, `training_history.json`,
  `2021-01-08_11_54_16-history.json`): the first few KiB must open a dict whose first value is a
  list of numbers, with a Keras-like key (`loss`, `val_*`, `*acc`, `*accuracy`, `*loss`, `lr`,
  `learning_rate`) or `hist` in the file name. Only that head is read to claim. Names other
  layouts own are never claimed (`*results*.json`, `*meta*.json`, `trainer_state.json`,
  `run.json`, `info.json`, config files).
- x = the list index, 0-based, as Keras counts epochs (`History.epoch`); an `epoch` list of the
  same length, when the dump holds one, is the x instead. Two `fit()` calls concatenated are one
  longer list: nothing marks the join.
- a JSON *string* holding the dict's Python repr (`json.dump(str(history.history))`) is decoded
  with `ast.literal_eval` — never `eval` — Python's bare `nan`/`inf` reprs mapped to NaN/inf first.
- no config, summary or status: the file holds only the metric lists.
"""

from __future__ import annotations

import ast
import io
import math
import os
import re
import tokenize
from typing import Any

import rundiff_core  # the data model (numpy) loads when a log is read, not to sniff
from rundiff_core import Claimed, LayoutFolder, LayoutRun

from ..lazy import np, pd
from .common import CONFIG_FILES, Meta, name_matches, read_json

HEAD_BYTES = 4096
NOT_MINE = ("*results*.json", "*meta*.json", "trainer_state.json", "run.json", "info.json",
            "dvclive.json", "package.json", "package-lock.json", "tsconfig.json")
_NUM = rb"(?:[-+]?(?:\d|\.\d)|NaN|-?Infinity)"
# Patterns compiled (and cached by re) on first use: a sniff of JSON files that open no list never
# compiles them. Each needs a `[` in the head, which `sniff_history` checks first.
_JSON_HEAD = rb'\A\s*\{\s*"((?:[^"\\]|\\.){1,200})"\s*:\s*\[\s*' + _NUM
_REPR_HEAD = rb"\A\s*\"\{\s*'([^'\\\"]{1,200})'\s*:\s*\[\s*(?:[-+]?(?:\d|\.\d)|nan|-?inf)"
_JSON_KEYS = rb'"((?:[^"\\]|\\.){1,200})"\s*:\s*\['
_REPR_KEYS = rb"'([^'\\\"]{1,200})'\s*:\s*\["
_NAN_MARK = "\x00rundiff-nan\x00"


def _kerasish(key: str) -> bool:
    k = key.lower()
    return k == "loss" or k.startswith("val_") or k.endswith(("loss", "acc", "accuracy")) or \
        k in ("lr", "learning_rate")


def sniff_history(path: str, head: bytes | None = None) -> str | None:
    """'json' or 'repr' when the file's head is a Keras history dump, else None (reads
    HEAD_BYTES at most)."""
    name = os.path.basename(path)
    low = name.lower()
    if not low.endswith(".json") or low in CONFIG_FILES or \
            name_matches(low, NOT_MINE):
        return None
    if head is None:
        try:
            with open(path, "rb") as fh:
                head = fh.read(HEAD_BYTES)
        except OSError:
            return None
    head = head.lstrip(b"\xef\xbb\xbf")
    if b"[" not in head:  # both shapes open a list at once: no `[`, no history
        return None
    if re.match(_JSON_HEAD, head):
        kind, keys = "json", re.findall(_JSON_KEYS, head)
    elif re.match(_REPR_HEAD, head):
        kind, keys = "repr", re.findall(_REPR_KEYS, head)
    else:
        return None
    names = [k.decode("utf-8", "replace") for k in keys]
    return kind if "hist" in low or any(_kerasish(k) for k in names) else None


_REASON = {"json": "Keras History.history as JSON (a dict of per-epoch lists)",
           "repr": "Keras History.history as a JSON string holding the dict's Python repr"}


def claim(folder: LayoutFolder) -> Claimed | None:
    runs = []
    for name in folder.files:
        if name.lower().endswith(".json"):
            kind = sniff_history(folder.join(name), folder.head(name, HEAD_BYTES))
            if kind is not None:
                runs.append(LayoutRun(folder.join(name), "keras-history", [folder.join(name)],
                                      _REASON[kind], {"kind": kind}))
    if not runs:
        return None
    from .files import sniff_files  # the folder's other files: what `files` would find there

    mine = {os.path.basename(r.path) for r in runs}
    return Claimed(runs + sniff_files(folder.path, [f for f in folder.files if f not in mine]))


def claim_file(path: str) -> list[LayoutRun] | None:
    kind = sniff_history(path)
    if kind is None:
        return None
    return [LayoutRun(path, "keras-history", [path], _REASON[kind], {"kind": kind})]


def _literal(text: str) -> Any:
    """A Python literal's value by `ast.literal_eval` only; Python's bare `nan`/`inf` reprs
    (which literal_eval refuses) are first turned into a NaN marker and `1e999`."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        pass
    try:
        toks = []
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            s = tok.string
            if tok.type == tokenize.NAME and s in ("nan", "inf"):
                s = repr(_NAN_MARK) if s == "nan" else "1e999"
            toks.append((tok.type, s))
        return ast.literal_eval(tokenize.untokenize(toks))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError, tokenize.TokenError):
        return None


def _number(v: Any) -> float | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int | float):
        return float(v)
    if v == _NAN_MARK:
        return math.nan
    return None


def load(path: str, notes: list[str]) -> dict[str, list[float]] | None:
    """The file's series ({key: values}), with notes on how it was decoded and what was skipped."""
    name = os.path.basename(path)
    data = read_json(path, notes)
    if isinstance(data, str):
        decoded = _literal(data)
        if decoded is None:
            notes.append(f"{name}: a JSON string that is not a Python literal; no history")
            return None
        notes.append(f"{name}: a JSON string holding a Python dict repr (json.dump of "
                     "str(history.history)); decoded with ast.literal_eval, never eval")
        data = decoded
    if data is None:
        return None
    if not isinstance(data, dict):
        notes.append(f"{name}: not a dict of lists ({type(data).__name__}); no history")
        return None
    series: dict[str, list[float]] = {}
    skipped: list[str] = []
    for k, v in data.items():
        vals = [_number(x) for x in v] if isinstance(v, list) else None
        if vals is None or not vals or any(x is None for x in vals):
            skipped.append(str(k))
            continue
        series[str(k)] = vals  # type: ignore[assignment]
    if skipped:
        notes.append(f"{name}: {len(skipped)} key(s) not a list of numbers skipped "
                     f"({', '.join(skipped[:5])}{'…' if len(skipped) > 5 else ''})")
    return series


def meta(run: LayoutRun) -> Meta:
    out = Meta()
    name = os.path.basename(run.path)
    series = load(run.path, out.notes)
    if series:
        lengths = sorted({len(v) for v in series.values()})
        out.notes.append(f"{name}: {len(series)} keys × {'/'.join(map(str, lengths))} epochs; "
                         "no config, summary or status (a Keras history holds only metric lists)")
    return out


def history(run: LayoutRun) -> tuple[pd.DataFrame, list[str]]:
    notes: list[str] = []
    name = os.path.basename(run.path)
    series = load(run.path, notes)
    if not series:
        if series is not None:
            notes.append(f"{name}: no list of numbers; no history")
        return rundiff_core.empty_history(), notes
    epoch = series.get("epoch")
    lengths = {len(v) for k, v in series.items() if k != "epoch"}
    x_epoch = epoch is not None and lengths == {len(epoch)}
    if x_epoch:
        series = {k: v for k, v in series.items() if k != "epoch"}
    steps, keys, values = [], [], []
    for k, v in series.items():
        steps.append(np.asarray(epoch, dtype="float64") if x_epoch else
                     np.arange(len(v), dtype="float64"))
        keys.append(np.full(len(v), k, dtype=object))
        values.append(np.asarray(v, dtype="float64"))
    frame = rundiff_core.make_history(np.concatenate(steps), np.concatenate(keys),
                                      np.concatenate(values))
    x = "x = the file's epoch list" if x_epoch else \
        "x = list index (the epoch, 0-based as Keras counts it)"
    notes.append(f"{name} (Keras History.history) → {len(series)} keys; {x}")
    if len({len(v) for v in series.values()}) > 1:
        notes.append(f"{name}: lists of unequal length ("
                     + ", ".join(f"{k} {len(v)}" for k, v in list(series.items())[:6]) + "); each "
                     "read from index 0")
    nan = int(np.isnan(frame["value"].to_numpy()).sum())
    if nan:
        notes.append(f"{name}: {nan} NaN value(s) kept as points")
    return frame, notes
