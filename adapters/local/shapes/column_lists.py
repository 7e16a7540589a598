"""Column lists: a JSON object whose values include lists of numbers — one list per metric, one value
per epoch or step — whatever other keys it holds (`json.dump(history.history, f)` from Keras;
`{"timestamp": …, "backbone": "resnet18", "train_loss": [0.53, …], "val_acc": […]}` from a
training script; nested `{"train": {"loss": […]}}` read as `train/loss`). The shape reader
(`adapters/local/shape.py`) decides a file is one by its content, under any name; this module
reads it. Each file is one run.

- x = the list index, 0-based (as Keras counts epochs); an `epoch`/`step`-like list as long as
  the others is the x instead. Lists of other lengths (per-step beside per-epoch) are each read
  from index 0, and said.
- the object's other leaves are what the file says about the run: tracker metadata (times, host,
  git, …: `rundiff_core.split_metadata`) goes to meta, the rest to config; a list that is not of
  numbers is skipped and named.
- a JSON *string* holding the dict's Python repr (`json.dump(str(history.history))`) is decoded
  with `ast.literal_eval` — never `eval` — Python's bare `nan`/`inf` reprs mapped to NaN/inf first.
"""

from __future__ import annotations

import os
from typing import Any

import rundiff_core  # the data model (numpy) loads when a log is read, not to sniff
from rundiff_core import Claimed, LayoutFolder, LayoutRun

from ..common import Meta
from ..lazy import np, pd


def claim(folder: LayoutFolder) -> Claimed | None:
    return None  # the `files` layout's shape sniff finds column lists among a folder's files


def claim_file(path: str) -> list[LayoutRun] | None:
    from ..shape import shape_of

    shape = shape_of(path, text=False)
    if shape.kind != "columns":
        return None
    return [LayoutRun(path, "column-lists", [path], shape.detail, {path: shape.found})]


def load(run: LayoutRun, notes: list[str]) -> Any:
    """The file's column lists (`shape.ColumnLists`), from the claim's sniff or read again; None
    with a note when the file no longer parses or holds none."""
    from ..shape import ColumnLists, column_lists, load_json_object

    found = run.sniffs.get(run.path)
    if isinstance(found, ColumnLists):
        return found
    name = os.path.basename(run.path)
    data, how = load_json_object(run.path)
    if data is None:
        notes.append(f"{name}: not valid JSON ({how}); no history")
        return None
    cols = column_lists(data, how)
    if cols is None:
        notes.append(f"{name}: no lists of numbers; no history")
    return cols


def _described(cols: Any, name: str) -> str:
    if cols.encoding == "repr":
        return (f"{name}: a JSON string holding a Python dict repr (json.dump of "
                "str(history.history)); decoded with ast.literal_eval, never eval")
    if not cols.other:
        return f"{name}: a JSON object of per-epoch lists only (Keras History.history)"
    return f"{name}: column lists beside {len(cols.other)} other key(s)"


def meta(run: LayoutRun) -> Meta:
    out = Meta()
    name = os.path.basename(run.path)
    cols = load(run, out.notes)
    if cols is None:
        return out
    out.notes.append(_described(cols, name))
    lists = {k: v for k, v in cols.other.items() if isinstance(v, list)}
    from ..documents import document_parts

    config, out.summary, metadata, _ = document_parts(cols.other)  # lists are said below
    out.config, out.meta = config, metadata
    if out.summary:
        out.notes.append(f"{name}: {len(out.summary)} final number(s) → summary")
    if metadata:
        out.notes.append(f"{name}: {', '.join(sorted(metadata)[:4])}"
                         f"{' …' if len(metadata) > 4 else ''} → metadata (not config)")
    if config:
        out.notes.append(f"{name}: {len(config)} other key(s) → config")
    if lists:
        out.notes.append(f"{name}: {len(lists)} list(s) not of numbers skipped "
                         f"({', '.join(list(lists)[:5])}{'…' if len(lists) > 5 else ''})")
    return out


#: Lists that are the x of the others when they are as long (compared case-insensitively).
X_LISTS = ("epoch", "epochs", "step", "steps", "iteration", "iter", "global_step")


def history(run: LayoutRun) -> tuple[pd.DataFrame, list[str]]:
    notes: list[str] = []
    name = os.path.basename(run.path)
    cols = load(run, notes)
    if cols is None:
        return rundiff_core.empty_history(), notes
    series = dict(cols.series)
    lengths = {len(v) for v in series.values()}
    x_key = next((k for k in series if k.lower().rsplit("/", 1)[-1] in X_LISTS
                  and sum(len(v) == len(series[k]) for v in series.values()) > 1), None)
    x_values = series.pop(x_key) if x_key is not None else None
    steps, keys, values = [], [], []
    for k, v in series.items():
        same = x_values is not None and len(v) == len(x_values)
        steps.append(np.asarray(x_values, dtype="float64") if same else
                     np.arange(len(v), dtype="float64"))
        keys.append(np.full(len(v), k, dtype=object))
        values.append(np.asarray(v, dtype="float64"))
    if not series:
        return rundiff_core.empty_history(), notes + [f"{name}: only an x list; no history"]
    frame = rundiff_core.make_history(np.concatenate(steps), np.concatenate(keys),
                                      np.concatenate(values))
    x = f"x = the file's `{x_key}` list" if x_key else "x = list index (0-based)"
    notes.append(f"{name} (column lists) → {len(series)} keys; {x}")
    if len(lengths) > 1:
        notes.append(f"{name}: lists of unequal length ("
                     + ", ".join(f"{k} {len(v)}" for k, v in list(series.items())[:6]) + "); each "
                     "read from index 0" + (f" (x = `{x_key}` where as long)" if x_key else ""))
    nan = int(np.isnan(frame["value"].to_numpy()).sum())
    if nan:
        notes.append(f"{name}: {nan} NaN value(s) kept as points")
    return frame, notes
