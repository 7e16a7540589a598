"""Read neptune-exporter Parquet (the official migration format) with pyarrow, vectorised.

Layout: `<data>/<project>/<run>_part_<n>.parquet`, one run per file set, long rows with columns
`project_id, run_id, attribute_path, attribute_type, step decimal(18,6), timestamp[ms, UTC],
int_value, float_value, string_value, bool_value, datetime_value, string_set_value, file_value,
histogram_value` (neptune-exporter `model.SCHEMA`). Single values have no step; metrics are
`float_series` rows. The exporter renames part 0 last, so a run is complete once part 0 exists.

Vectorised throughout: only the needed columns are read, row groups are skipped on their
`attribute_type` statistics, id/path/type strings stay dictionary-coded and are matched on codes,
and a run's id comes from footer statistics when each file holds one run. Steps equal
`float(Decimal(step))` (a direct decimal→float cast is off by an ulp for a few percent of
values). A null `float_value` on a series row is a NaN the exporter wrote as null (pandas →
Arrow), kept as NaN.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from rundiff_core import InputError, empty_history

from .attributes import RunData
from .layout import ExportGroup

PARAM_TYPES = ("float", "int", "string", "bool", "datetime", "string_set")
METRIC_TYPE = "float_series"
VALUE_COLUMN = {
    "float": "float_value",
    "int": "int_value",
    "string": "string_value",
    "bool": "bool_value",
    "datetime": "datetime_value",
    "string_set": "string_set_value",
}
HISTORY_COLUMNS = ("attribute_path", "step", "timestamp", "float_value")
_DIGEST = re.compile(r"-[0-9a-f]{16}$")  # neptune-exporter's sanitize_path_part suffix


@dataclass(frozen=True)
class ExportRun:
    """One run inside an exporter file group."""

    group: ExportGroup
    run_id: str
    project_id: str | None
    shared: bool  # the files hold other runs too: filter rows by run_id
    unreadable: tuple[tuple[str, str], ...] = ()  # (part file, reason)

    @property
    def readable_parts(self) -> list[str]:
        bad = {p for p, _ in self.unreadable}
        return [p for p in self.group.parts if p not in bad]


def _reason(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text[:120]}" if text else type(exc).__name__


DICT_COLUMNS = ("project_id", "run_id", "attribute_path", "attribute_type")


def _open(part: str) -> pq.ParquetFile:
    """A Parquet file whose id/path/type strings stay dictionary-encoded (masks work on codes)."""
    names = pq.read_schema(part).names
    return pq.ParquetFile(part, read_dictionary=[c for c in DICT_COLUMNS if c in names])


def _leaf(pf: pq.ParquetFile, column: str) -> int:
    """The Parquet leaf-column index of a top-level flat column (-1 when absent)."""
    schema = pf.metadata.schema
    return next((i for i in range(len(schema)) if schema.column(i).path == column), -1)


def _stats_single(pf: pq.ParquetFile, column: str) -> tuple[bool, object]:
    """(True, value) when every row group's statistics say `column` holds one value only."""
    idx = _leaf(pf, column)
    if idx < 0 or pf.metadata.num_row_groups == 0:
        return False, None
    seen = set()
    for rg in range(pf.metadata.num_row_groups):
        st = pf.metadata.row_group(rg).column(idx).statistics
        if st is None or not st.has_min_max or st.min != st.max or st.null_count:
            return False, None
        seen.add(st.min)
    return (len(seen) == 1), (next(iter(seen)) if len(seen) == 1 else None)


def list_group_runs(group: ExportGroup) -> list[ExportRun]:
    """The runs in a file group (normally exactly one), from the `run_id`/`project_id` columns;
    the footer statistics answer without reading rows when each file holds one run."""
    ids: dict[str, str | None] = {}
    bad: list[tuple[str, str]] = []
    for part in group.parts:
        try:
            pf = _open(part)
            if "run_id" not in pf.schema_arrow.names:
                bad.append((part, "no run_id column"))
                continue
            one, rid = _stats_single(pf, "run_id")
            if one:
                _p_one, pid = _stats_single(pf, "project_id")
                ids.setdefault(str(rid), pid if isinstance(pid, str) else None)
                continue
            cols = [c for c in ("run_id", "project_id") if c in pf.schema_arrow.names]
            table = pf.read(columns=cols)
        except Exception as exc:  # a torn or foreign file: reported at load, never a traceback
            bad.append((part, _reason(exc)))
            continue
        for row in table.group_by(cols).aggregate([]).to_pylist():
            rid = row.get("run_id")
            if rid is not None:
                ids.setdefault(str(rid), row.get("project_id"))
    if not ids:  # nothing readable: name the run after its files so the error can say which
        ids[_DIGEST.sub("", group.prefix)] = None
    shared = len(ids) > 1
    return [ExportRun(group, rid, pid, shared, tuple(bad)) for rid, pid in ids.items()]


def _mask(column: pa.ChunkedArray, values: Sequence[str], negate: bool = False) -> pa.ChunkedArray:
    """Rows whose (dictionary-encoded) value is in `values`: decided once per dictionary entry."""
    value_set = pa.array(list(values), pa.string())
    chunks = []
    for chunk in column.chunks:
        if pa.types.is_dictionary(chunk.type):
            hit = pc.is_in(chunk.dictionary.cast(pa.string()), value_set=value_set)
            if negate:
                hit = pc.invert(hit)
            picked = pc.take(hit, chunk.indices)
        else:
            picked = pc.is_in(chunk.cast(pa.string()), value_set=value_set)
            if negate:
                picked = pc.invert(picked)
        chunks.append(pc.fill_null(picked, False))
    return pa.chunked_array(chunks, pa.bool_())


def _may_hold(pf: pq.ParquetFile, rg: int, types: Sequence[str], negate: bool) -> bool:
    """Row-group pruning on the attribute_type statistics (exporter batches are per kind)."""
    idx = _leaf(pf, "attribute_type")
    if idx < 0:
        return True
    st = pf.metadata.row_group(rg).column(idx).statistics
    if st is None or not st.has_min_max:
        return True
    lo, hi = st.min, st.max
    if negate:
        return not (lo == hi and lo in types)
    return any(lo <= t <= hi for t in types)


def _scan(part: str, columns: Sequence[str], types: Sequence[str], *, negate: bool = False,
          run_id: str | None = None, paths: Sequence[str] | None = None) -> pa.Table | None:
    """The rows of one part whose attribute_type is (not, with `negate`) in `types`, optionally of
    one run and some attribute paths; `columns` that the file lacks are left out."""
    pf = _open(part)
    names = pf.schema_arrow.names
    cols = [c for c in columns if c in names]
    need = list(dict.fromkeys([*cols, "attribute_type", *(["run_id"] if run_id else []),
                               *(["attribute_path"] if paths is not None else [])]))
    need = [c for c in need if c in names]
    out = []
    for rg in range(pf.metadata.num_row_groups):
        if not _may_hold(pf, rg, types, negate):
            continue
        table = pf.read_row_group(rg, columns=need)
        if "attribute_type" not in table.column_names:
            continue
        mask = _mask(table["attribute_type"], types, negate)
        if run_id is not None and "run_id" in table.column_names:
            mask = pc.and_(mask, _mask(table["run_id"], [run_id]))
        if paths is not None:
            mask = pc.and_(mask, _mask(table["attribute_path"], paths))
        picked = table.filter(mask).select(cols)
        if picked.num_rows:
            out.append(picked)
    return _concat(out)


def _concat(tables: list[pa.Table]) -> pa.Table | None:
    tables = [t for t in tables if t is not None and t.num_rows]
    if not tables:
        return None
    if len(tables) == 1:
        return tables[0]
    try:  # dictionary columns may differ in dictionary only: chunks keep their own
        return pa.concat_tables(tables, promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return pa.concat_tables([_undictionary(t) for t in tables], promote_options="permissive")


def _undictionary(table: pa.Table) -> pa.Table:
    """Decode dictionary columns so parts with different dictionaries concatenate."""
    for i, field in enumerate(table.schema):
        if pa.types.is_dictionary(field.type):
            table = table.set_column(i, field.name, pc.cast(table.column(i), field.type.value_type))
    return table


def read_run(run: ExportRun) -> RunData:
    """Single values (config, summary, sys fields) and notes; the history stays lazy."""
    parts = run.readable_parts
    if not parts:
        detail = "; ".join(f"{os.path.basename(p)}: {r}" for p, r in run.unreadable[:3])
        raise InputError(
            f"no readable Parquet part for Neptune run {run.run_id} in {run.group.directory} ({detail})",
            hint="re-export the run with neptune-exporter, or check the files were copied whole",
        )
    notes = [f"{os.path.basename(p)} unreadable ({r}): its rows are missing" for p, r in run.unreadable]
    if not run.group.complete:
        notes.append(
            f"export incomplete: {run.group.prefix}_part_0.parquet is missing (the exporter writes part 0 "
            "last), so this run's data may be partial"
        )
    if run.group.tmp_parts:
        notes.append(f"{run.group.tmp_parts} unfinished .parquet.tmp part(s) from an interrupted export not read")
    wanted = ["attribute_path", "attribute_type", *VALUE_COLUMN.values()]
    atoms: dict = {}
    skipped: dict[str, tuple[set, int]] = {}
    rid = run.run_id if run.shared else None
    for part in parts:
        try:
            table = _scan(part, wanted, PARAM_TYPES, run_id=rid)
            others = _scan(part, ["attribute_type", "attribute_path"], [*PARAM_TYPES, METRIC_TYPE],
                           negate=True, run_id=rid)
        except Exception as exc:
            notes.append(f"{os.path.basename(part)} unreadable ({_reason(exc)}): its rows are missing")
            continue
        if others is not None:
            others = _undictionary(others)
            for row in others.group_by(["attribute_type", "attribute_path"]).aggregate(
                    [("attribute_path", "count")]).to_pylist():
                paths, count = skipped.get(row["attribute_type"], (set(), 0))
                paths.add(row["attribute_path"])
                skipped[row["attribute_type"]] = (paths, count + row["attribute_path_count"])
        if table is None:
            continue
        cols = table.column_names
        for row in _undictionary(table).to_pylist():
            column = VALUE_COLUMN.get(row["attribute_type"])
            if column in cols:
                value = row[column]
                atoms[row["attribute_path"]] = sorted(value) if isinstance(value, list) else value
    if skipped:
        notes.append("not loaded (rundiff compares float series): " + "; ".join(
            f"{kind} {len(paths)} attribute(s), {count} row(s)" for kind, (paths, count) in sorted(skipped.items())))
    meta = {"project": run.project_id, "path": run.group.directory,
            "parts": [os.path.basename(p) for p in run.group.parts]}
    return RunData("exporter", run.run_id, atoms, notes, [], meta, None, finished_hint=True)


def _steps(column: pa.ChunkedArray) -> np.ndarray:
    """float64 steps, each exactly float(Decimal(step)) (pyarrow's decimal→float cast is not)."""
    if pa.types.is_decimal(column.type):
        return np.concatenate([_decimal_chunk(c) for c in column.chunks]) if column.num_chunks \
            else np.empty(0, "float64")
    if not pa.types.is_floating(column.type):
        column = pc.cast(column, pa.float64())
    return column.to_numpy(zero_copy_only=False).astype("float64", copy=False)


def _decimal_chunk(chunk: pa.Array) -> np.ndarray:
    """Unscaled integers ÷ 10^scale: one correctly rounded division is exact while the integer
    fits a double's 53 bits (|step| < 9e9 at scale 6); larger ones go through their text."""
    t = chunk.type
    n = len(chunk)
    if t.byte_width != 16 or t.precision > 18 or n == 0:  # not a decimal128 whose value fits 64 bits
        return pc.cast(pc.cast(chunk, pa.string()), pa.float64()).to_numpy(zero_copy_only=False)
    words = np.frombuffer(chunk.buffers()[1], dtype="<i8", count=2 * (chunk.offset + n))
    unscaled = words[2 * chunk.offset::2]  # low word of each little-endian 128-bit value
    out = unscaled.astype("float64") / (10.0 ** t.scale)
    big = np.flatnonzero(np.abs(unscaled) >= 1 << 53)
    if len(big):
        text = pc.cast(pc.cast(chunk.take(pa.array(big)), pa.string()), pa.float64())
        out[big] = text.to_numpy(zero_copy_only=False)
    if chunk.null_count:
        out[~chunk.is_valid().to_numpy(zero_copy_only=False)] = np.nan
    return out


def _seconds(column: pa.ChunkedArray) -> np.ndarray:
    """Unix seconds from an Arrow timestamp (any unit) or a numeric column of milliseconds."""
    t = column.type
    if pa.types.is_timestamp(t):
        scale = {"s": 1.0, "ms": 1e3, "us": 1e6, "ns": 1e9}[t.unit]
        ints = pc.cast(column, pa.int64())
        return pc.cast(ints, pa.float64()).to_numpy(zero_copy_only=False) / scale
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        return pc.cast(column, pa.float64()).to_numpy(zero_copy_only=False) / 1e3
    return np.full(len(column), np.nan)


def _codes(column: pa.ChunkedArray) -> tuple[pa.Array, list[str]]:
    """(int32 codes, categories) of a string or dictionary column, without decoding strings."""
    if not pa.types.is_dictionary(column.type):
        column = pc.dictionary_encode(column)
    column = column.unify_dictionaries()
    categories = column.chunk(0).dictionary.cast(pa.string()).to_pylist() if column.num_chunks else []
    indices = pa.chunked_array([c.indices for c in column.chunks], column.type.index_type).combine_chunks()
    return pc.cast(indices, pa.int32()), categories


def read_history(run: ExportRun, keys: Sequence[str] | None = None) -> tuple[pd.DataFrame, list[str]]:
    """Every float_series point of the run (for `keys` when given), in file order."""
    notes: list[str] = []
    if keys is not None and not keys:
        return empty_history(), notes
    tables = []
    for part in run.readable_parts:
        try:
            tables.append(_scan(part, HISTORY_COLUMNS, [METRIC_TYPE], run_id=run.run_id if run.shared else None,
                                paths=None if keys is None else list(keys)))
        except Exception as exc:
            notes.append(f"{os.path.basename(part)} unreadable ({_reason(exc)}): its rows are missing")
    table = _concat(tables)
    if table is None:
        return empty_history(), notes
    n = table.num_rows
    missing = [c for c in HISTORY_COLUMNS if c not in table.column_names]
    if "attribute_path" in missing:
        raise InputError(f"Neptune export for run {run.run_id} has no attribute_path column",
                         hint="this does not look like neptune-exporter output")
    steps = _steps(table["step"]) if "step" in table.column_names else np.full(n, np.nan)
    wall = _seconds(table["timestamp"]) if "timestamp" in table.column_names else np.full(n, np.nan)
    if "float_value" in table.column_names:
        values_col = pc.cast(table["float_value"], pa.float64())
        null_values = values_col.null_count
        values = values_col.to_numpy(zero_copy_only=False).astype("float64", copy=False)
    else:
        null_values, values = n, np.full(n, np.nan)
    indices, categories = _codes(table["attribute_path"])
    codes = pc.fill_null(indices, 0).to_numpy(zero_copy_only=False)
    if indices.null_count:
        notes.append(f"{indices.null_count} float_series row(s) without an attribute_path skipped")
        keep = pc.is_valid(indices).to_numpy(zero_copy_only=False)
        codes, steps, values, wall = codes[keep], steps[keep], values[keep], wall[keep]
    null_steps = int(np.isnan(steps).sum())
    if null_steps:
        notes.append(f"{null_steps} float_series point(s) without a step (step NaN)")
    if null_values:
        notes.append(f"{null_values} float_series point(s) with a null float_value read as NaN")
    frame = pd.DataFrame({
        "step": steps,
        "key": pd.Categorical.from_codes(codes.astype("int32"), categories=categories),
        "value": values,
        "wall_time": wall,
    })
    return frame, notes
