"""Parse CSVLogger's two files: a sparse wide `metrics.csv` and a tagged `hparams.yaml`.

`metrics.csv` has one column per metric plus `step` (and usually `epoch`, which the Trainer logs
as a metric). Each row holds only the metrics logged together, so most cells are empty: an empty
cell is "not logged here", never a point. Everything the file does not let us read is counted and
reported as a fidelity note, never guessed.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import yaml

from rundiff_core.errors import InputError
from rundiff_core.model import empty_history, make_history
from rundiff_core.parsing.yamlsafe import load_yaml_plain

STEP = "step"
_NAN_TEXT = {"nan", "+nan", "-nan"}


def _lines(numbers: list[int], limit: int = 5) -> str:
    shown = ", ".join(str(n) for n in numbers[:limit])
    return shown + (", …" if len(numbers) > limit else "")


def read_metrics(path: str, keys: Sequence[str] | None = None) -> tuple[pd.DataFrame, list[str]]:
    """Every point in a metrics.csv (only `keys` when given), in logged order, plus notes.

    Logged order is row order, then column order within a row (Lightning writes columns sorted).
    A header without a `step` column is not CSVLogger's and raises InputError.
    """
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc
    notes: list[str] = []
    if not raw.strip():
        return empty_history(), ["metrics.csv is empty: no metric history"]
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = raw.decode("utf-8-sig", errors="replace")
        notes.append("metrics.csv has bytes that are not UTF-8; they were replaced")
    if "\x00" in text:  # a crash can leave a block of NUL bytes where the last write was
        notes.append(f"{text.count(chr(0))} NUL byte(s) removed (the file was damaged)")
        text = text.replace("\x00", "")
    try:
        rows = list(csv.reader(io.StringIO(text, newline="")))
    except csv.Error as exc:
        raise InputError(f"{path} is not readable CSV: {exc}",
                         hint="the file is damaged; check it, or copy a clean version") from exc
    if not rows or not rows[0]:
        return empty_history(), [*notes, "metrics.csv has no header: no metric history"]
    header, body = rows[0], rows[1:]
    if STEP not in header:
        raise InputError(
            f"{path} has no '{STEP}' column (header: {', '.join(header)[:200]})",
            hint="this is not a Lightning CSVLogger metrics.csv; try the local: scheme for other CSVs",
        )
    if len(set(header)) != len(header):
        dupes = sorted({c for c in header if header.count(c) > 1})
        notes.append(f"duplicate column(s) {', '.join(dupes)}: only the first of each is read")

    # Lightning ends every row with a line break: a last line without one was cut mid-write.
    if body and not text.endswith(("\n", "\r")):
        body = body[:-1]
        notes.append("last line has no line ending (file cut while being written): dropped")
    width = len(header)
    good: list[list[str]] = []
    good_lines: list[int] = []  # 1-based line numbers of `good`, for notes (assumes no quoted newlines)
    malformed: list[int] = []
    for i, row in enumerate(body, start=2):
        if len(row) == width:
            good.append(row)
            good_lines.append(i)
        elif row:  # csv.reader yields [] for a blank line: nothing was logged there
            malformed.append(i)
    if malformed:
        notes.append(
            f"{len(malformed)} malformed row(s) skipped: wrong number of fields "
            f"(line {_lines(malformed)})"
        )
    if not good:
        return empty_history(), notes

    columns = list(zip(*good, strict=True))
    first = {name: j for j, name in reversed(list(enumerate(header)))}
    step_text = pd.Series(columns[first[STEP]], dtype=object)
    steps = pd.to_numeric(step_text.str.strip(), errors="coerce").to_numpy(dtype="float64")
    bad_step = np.isnan(steps)
    if bad_step.any():
        lines = [good_lines[i] for i in np.flatnonzero(bad_step)]
        notes.append(
            f"{len(lines)} row(s) without a numeric step skipped (line {_lines(lines)})"
        )

    wanted = None if keys is None else set(keys)
    row_parts, col_parts, val_parts, key_parts = [], [], [], []
    skipped: dict[str, int] = {}
    for name, j in first.items():
        if name == STEP or (wanted is not None and name not in wanted):
            continue
        cells = pd.Series(columns[j], dtype=object).str.strip()
        present = (cells != "").to_numpy() & ~bad_step
        if not present.any():
            continue
        text_cells = cells[present]
        values = pd.to_numeric(text_cells, errors="coerce").to_numpy(dtype="float64")
        not_number = np.isnan(values) & ~text_cells.str.lower().isin(_NAN_TEXT).to_numpy()
        if not_number.any():
            skipped[name] = int(not_number.sum())
        rows_idx = np.flatnonzero(present)[~not_number]
        row_parts.append(rows_idx)
        col_parts.append(np.full(len(rows_idx), j))
        val_parts.append(values[~not_number])
        key_parts.append(np.full(len(rows_idx), name, dtype=object))
    if skipped:
        shown = ", ".join(f"{k} ({n})" for k, n in sorted(skipped.items()))
        notes.append(f"non-numeric values skipped: {shown}")
    if not row_parts:
        return empty_history(), notes
    rows_all = np.concatenate(row_parts)
    cols_all = np.concatenate(col_parts)
    order = np.lexsort((cols_all, rows_all))
    rows_all = rows_all[order]
    frame = make_history(
        steps[rows_all],
        np.concatenate(key_parts)[order],
        np.concatenate(val_parts)[order],
    )
    return frame, notes


def read_hparams(path: str) -> tuple[dict[str, Any], list[str]]:
    """hparams.yaml as plain data: `!!python/...` tags are read as values, never executed."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        return {}, ["no hparams.yaml: config diff unavailable for this run"]
    except OSError as exc:
        return {}, [f"hparams.yaml unreadable ({exc.strerror or exc}): config not loaded"]
    try:
        data = load_yaml_plain(raw)
    except yaml.YAMLError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return {}, [f"hparams.yaml is not valid YAML ({first}): config not loaded"]
    if data is None:
        return {}, []
    if not isinstance(data, dict):
        return {"hparams": data}, ["hparams.yaml is not a mapping: kept under the key 'hparams'"]
    return _string_keys(data), []


def _string_keys(value: Any) -> Any:
    """YAML allows any key type; configs are compared by dotted string keys."""
    if isinstance(value, dict):
        return {str(k): _string_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_string_keys(v) for v in value]
    return value
