"""Read a journal run directory's files into the core model (no tracker SDK needed)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from rundiff_core import HistoryColumns, RunEvent, step_notes

# pyarrow (~0.15 s to import here), polars and PyYAML are imported where they are used: a flat
# metrics.jsonl is read with numpy alone, and `rundiff ls` pays for no reader it does not run.

STEP_FIELDS = ("step", "_step", "global_step", "iteration", "iter")
TIME_FIELDS = ("time", "wall_time", "timestamp", "_timestamp", "ts")
KEY_FIELDS = ("key", "name", "metric")
EVENT_KIND_FIELDS = ("event", "type", "kind")


def _first(names: Sequence[str], available: Sequence[str]) -> str | None:
    return next((n for n in names if n in available), None)


def _arrow_numeric(col: Any) -> tuple[np.ndarray, np.ndarray] | None:
    """(values as float64, present mask) for a numeric/bool Arrow column; None for text."""
    import pyarrow as pa

    from rundiff_core import numeric_column

    t = col.type
    if not (pa.types.is_boolean(t) or pa.types.is_integer(t) or pa.types.is_floating(t)
            or pa.types.is_null(t)):
        return None
    return numeric_column(col)


def _py_numeric(rows: list[dict[str, Any]], key: str) -> tuple[np.ndarray, np.ndarray] | None:
    values = np.full(len(rows), np.nan)
    present = np.zeros(len(rows), dtype=bool)
    saw_number = False
    for i, row in enumerate(rows):
        v = row.get(key)
        if isinstance(v, bool | int | float):
            values[i] = float(v)
            present[i] = True
            saw_number = True
    return (values, present) if saw_number else None


def read_metrics(path: str, keys: Sequence[str] | None = None) -> tuple[HistoryColumns, list[str]]:
    """Every point of metrics.jsonl (wide or long rows) as canonical history columns, plus notes.

    Columns, not a DataFrame: `rundiff ls` and the one-metric-at-a-time engines never need pandas.
    Flat rows of numbers (the usual file) are parsed by numpy alone; anything else by
    `read_jsonl` (pyarrow or polars, or json per line) — the same rows either way."""
    from rundiff_core import read_flat_jsonl

    flat = read_flat_jsonl(path, name=os.path.basename(path))
    got_flat = _flat_columns(flat) if flat is not None else None
    if got_flat is not None:
        names, nrows, getter = got_flat
        notes = list(flat.notes)
        text = None  # no long rows here: _flat_columns declined them
    else:
        names, nrows, getter, text, notes = _jsonl_columns(path)
    if nrows == 0:
        return HistoryColumns.empty(), notes
    step_name = _first(STEP_FIELDS, names)
    time_name = _first(TIME_FIELDS, names)
    key_fields = [f for f in KEY_FIELDS if f in names]
    key_name = key_fields[0] if key_fields else None
    if step_name is None:
        steps = np.arange(nrows, dtype="float64")
        notes.append(f"{os.path.basename(path)}: no step field; row order used as step")
    else:
        got = getter(step_name)
        steps = got[0] if got else np.arange(nrows, dtype="float64")
    got_time = getter(time_name) if time_name else None
    wall = got_time[0] if got_time else np.full(nrows, np.nan)

    if key_name is not None and "value" in names and text is not None:  # long rows
        got = getter("value")
        values, present = got if got else (np.full(nrows, np.nan), np.zeros(nrows, bool))
        key_values = np.asarray(text(key_name), dtype=object)
        for other in key_fields[1:]:  # rows may name their metric under `key` or `name`
            missing = _missing(key_values)
            if missing.any():
                key_values[missing] = np.asarray(text(other), dtype=object)[missing]
        keep = present & ~_missing(key_values)
        names_kept = key_values[keep].astype(str)
        uniques, codes = np.unique(names_kept, return_inverse=True)  # sorted names
        kept_names = [str(k) for k in uniques]
        cols = HistoryColumns(steps[keep], codes.astype(np.int32), kept_names, values[keep],
                              wall[keep])
        if keys is not None:
            cols = cols.select([k for k in kept_names if k in set(keys)])
        index = cols.key_index()
        notes += step_notes(((k, cols.step[index[k]]) for k in sorted(index)),
                            os.path.basename(path))
        return cols, notes

    reserved = {step_name, time_name}
    metric_names = [n for n in names if n not in reserved]
    if keys is not None:
        wanted = set(keys)
        metric_names = [n for n in metric_names if n in wanted]
    cols, masks, kept, text_fields = [], [], [], []
    for name in metric_names:
        got = getter(name)
        if got is None:
            text_fields.append(name)
            continue
        cols.append(got[0])
        masks.append(got[1])
        kept.append(name)
    if text_fields:
        notes.append(f"{os.path.basename(path)}: non-numeric fields not loaded: {', '.join(text_fields[:8])}")
    if not kept:
        return HistoryColumns.empty(), notes
    # Key by key: each metric's points stay in logged order (the order that matters for
    # duplicates and restarts); a fully present column needs no mask at all.
    idx = [None if m.all() else np.flatnonzero(m) for m in masks]
    pick = lambda arr, i: arr if i is None else arr[i]  # noqa: E731
    notes += step_notes(
        ((name, pick(steps, i)) for name, i in zip(kept, idx, strict=True)), os.path.basename(path)
    )
    counts = [nrows if i is None else len(i) for i in idx]
    cols = HistoryColumns(
        np.concatenate([pick(steps, i) for i in idx]),
        np.repeat(np.arange(len(kept), dtype=np.int32), counts),
        kept,
        np.concatenate([pick(c, i) for c, i in zip(cols, idx, strict=True)]),
        np.concatenate([pick(wall, i) for i in idx]),
    )
    return cols, notes


Getter = Callable[[str], "tuple[np.ndarray, np.ndarray] | None"]


def _jsonl_columns(path: str) -> tuple[list[str], int, Getter, Callable[[str], list[Any]], list[str]]:
    """(names, rows, numeric getter, text getter, notes) from the general JSONL reader."""
    from rundiff_core import read_jsonl

    res = read_jsonl(path, name=os.path.basename(path))
    notes = list(res.notes)
    if res.table is not None:
        import pyarrow as pa

        table = res.table
        while any(pa.types.is_struct(f.type) for f in table.schema):
            table = table.flatten()
        return (table.column_names, table.num_rows,
                lambda name: _arrow_numeric(table.column(name)),
                lambda name: table.column(name).to_pylist(), notes)
    rows = [_flatten_row(r) for r in (res.rows or [])]
    return (list(dict.fromkeys(k for r in rows for k in r)), len(rows),
            lambda name: _py_numeric(rows, name), lambda name: [r.get(name) for r in rows], notes)


def _flat_columns(flat: Any) -> tuple[list[str], int, Getter] | None:
    """(names, rows, numeric getter) from the numpy reader's templates and json.loads'd lines:
    the columns the per-line path builds from the same rows. None for long rows (`key` and
    `value` fields), which need the general path's text columns."""
    marks = np.zeros(flat.n_lines, dtype=bool)
    for part in flat.templates:
        marks[part.lines] = True
    if any(_arrow_ambiguous(obj) for _, obj in flat.fallback):
        return None
    fallback = [(i, _flatten_row(obj)) for i, obj in flat.fallback]
    for i, _ in fallback:
        marks[i] = True
    rowpos = np.cumsum(marks) - 1
    nrows = int(marks.sum())
    seen = [(int(part.lines[0]), j, k) for part in flat.templates for j, k in enumerate(part.keys)]
    seen += [(i, j, k) for i, row in fallback for j, k in enumerate(row)]
    names = list(dict.fromkeys(k for _, _, k in sorted(seen)))
    if "value" in names and any(f in names for f in KEY_FIELDS):
        return None
    whole = len(flat.templates) == 1 and not fallback and len(flat.templates[0].lines) == nrows
    fallback_rows = [(int(rowpos[i]), row) for i, row in fallback]
    places = [rowpos[part.lines] for part in flat.templates]
    cache: dict[str, tuple[np.ndarray, np.ndarray] | None] = {}

    def getter(name: str) -> tuple[np.ndarray, np.ndarray] | None:
        if name in cache:
            return cache[name]
        if whole and name in flat.templates[0].keys:
            got = flat.templates[0].values[flat.templates[0].keys.index(name)]
            cache[name] = (got, np.ones(nrows, dtype=bool))
            return cache[name]
        values = np.full(nrows, np.nan)
        present = np.zeros(nrows, dtype=bool)
        saw_number = False
        for part, where in zip(flat.templates, places, strict=True):
            if name in part.keys:
                values[where] = part.values[part.keys.index(name)]
                present[where] = True
                saw_number = True
        for row_at, row in fallback_rows:
            v = row.get(name)
            if isinstance(v, bool | int | float):
                values[row_at] = float(v)
                present[row_at] = True
                saw_number = True
        cache[name] = (values, present) if saw_number else None
        return cache[name]

    return names, nrows, getter


def _arrow_ambiguous(obj: dict[str, Any]) -> bool:
    """A null or an empty object somewhere in the row: on fields that hold nothing else, Arrow
    and the per-line reader disagree (an empty numeric column vs none), so the general reader,
    whichever path it takes, decides for such a file."""
    return any(v is None or (isinstance(v, dict) and (not v or _arrow_ambiguous(v)))
               for v in obj.values())


def _missing(values: np.ndarray) -> np.ndarray:
    """None/NaN cells of an object array (what pandas.isna says, without pandas)."""
    return np.array([v is None or (isinstance(v, float) and v != v) for v in values], dtype=bool)


def _flatten_row(row: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in row.items():
        name = f"{prefix}.{k}" if prefix else k
        if isinstance(v, dict):
            out.update(_flatten_row(v, name))
        else:
            out[name] = v
    return out


def read_events(path: str) -> tuple[list[RunEvent], list[str]]:
    """events.jsonl rows → RunEvents; the kind comes from `event`, `type` or `kind`."""
    from rundiff_core import read_jsonl

    res = read_jsonl(path, name=os.path.basename(path))
    # Plain Python rows (lists stay lists, so redaction descends into payloads); a field another
    # row has and this one lacks is null in the Arrow table: drop it, as the per-line path does.
    rows = ([{k: v for k, v in r.items() if v is not None} for r in res.table.to_pylist()]
            if res.table is not None else (res.rows or []))
    events = []
    for row in rows:
        row = {k: v for k, v in row.items()
               if v is not None and not (isinstance(v, float) and np.isnan(v))}
        kind_field = _first(EVENT_KIND_FIELDS, list(row))
        kind = str(row.pop(kind_field)).lower() if kind_field else "unknown"
        step = row.pop("step", None)
        t = next((row.pop(f) for f in TIME_FIELDS if f in row), None)
        events.append(
            RunEvent(
                kind=kind,
                step=float(step) if isinstance(step, int | float) else None,
                time=float(t) if isinstance(t, int | float) else None,
                payload=row,
            )
        )
    return events, list(res.notes)


def read_text(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read().strip()
    except FileNotFoundError:
        return None


def read_yaml(path: str) -> tuple[dict[str, Any], list[str]]:
    text = read_text(path)
    if text is None:
        return {}, []
    from rundiff_core import YamlRefused, load_yaml_plain

    try:
        data = load_yaml_plain(text, os.path.basename(path))
    except YamlRefused as exc:
        return {}, [f"{exc}; config empty"]
    except Exception as exc:  # yaml.YAMLError and friends: degrade, never crash
        return {}, [f"{os.path.basename(path)}: unreadable YAML ({type(exc).__name__}); config empty"]
    return (data if isinstance(data, dict) else {"value": data}), []


def read_json_object(path: str) -> tuple[dict[str, Any] | None, list[str]]:
    text = read_text(path)
    if text is None:
        return None, []
    try:
        data = json.loads(text)
    except ValueError:
        return {}, [f"{os.path.basename(path)}: not valid JSON; ignored"]
    return (data if isinstance(data, dict) else {"value": data}), []


def read_env(path: str) -> dict[str, str]:
    """env.txt: KEY=VALUE lines (also `KEY: VALUE`); comments and blanks ignored."""
    text = read_text(path)
    env: dict[str, str] = {}
    for line in (text or "").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[7:]
        for sep in ("=", ":"):
            if sep in line:
                k, v = line.split(sep, 1)
                env[k.strip()] = v.strip().strip('"').strip("'")
                break
    return env
