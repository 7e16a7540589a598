"""The fleet dataset's schema, version 1: what every table holds and how a Run becomes a row.

The layout (see docs/fleet.md, which this module is the reference for):

    DATASET/
      _rundiff_fleet.json                      manifest: format, schema_version, export history
      points/source=S/run_uid=U/part-0.parquet one file per run: key, step, value, wall_time
      runs/part-0.parquet                      one row per run (RUNS_SCHEMA + flattened columns)
      errors/part-0.parquet                    the failures of the latest export (ERRORS_SCHEMA)
      _tmp/                                    in-flight writes; never read, cleaned on start

`source` and `run_uid` of the points table live in the Hive partition path, not in the files.
A reader that finds a `schema_version` newer than `SCHEMA_VERSION` refuses the dataset; any change
to a column's name, type or meaning bumps the version.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa

from ..model import Run, flatten

SCHEMA_VERSION = 1
FORMAT = "rundiff-fleet"
MANIFEST = "_rundiff_fleet.json"
PARQUET_META_KEY = b"rundiff.fleet.schema_version"

# Statuses whose runs no longer change unless their files do: candidates for incremental skipping.
TERMINAL_STATUSES = ("finished", "crashed")

# -- points ---------------------------------------------------------------------------------------
POINT_FILE_SCHEMA = pa.schema(
    [
        pa.field("key", pa.string(), nullable=False),
        pa.field("step", pa.float64()),
        pa.field("value", pa.float64()),
        pa.field("wall_time", pa.float64()),
    ]
)
"""Columns stored in each points file, rows in logged order (duplicates and restarts kept)."""

POINT_PARTITION_SCHEMA = pa.schema([pa.field("source", pa.string()), pa.field("run_uid", pa.string())])
"""The Hive partition columns of the points table (always strings; declare them when reading)."""

# -- runs -----------------------------------------------------------------------------------------
RUNS_SCHEMA = pa.schema(
    [
        pa.field("run_uid", pa.string(), nullable=False),  # Run.uid: hash of the original address
        pa.field("address", pa.string()),  # the canonical address the run was read from
        pa.field("source", pa.string()),  # adapter name: journal, wandb, mlflow, tensorboard, ...
        pa.field("project", pa.string()),  # tracker project/experiment, else the export input
        pa.field("input", pa.string()),  # the SRC given to `rundiff export` that listed the run
        pa.field("run_id", pa.string()),  # the adapter's own id for the run
        pa.field("name", pa.string()),
        pa.field("status", pa.string()),  # running | finished | crashed | unknown
        pa.field("seed", pa.int64()),
        pa.field("git_sha", pa.string()),
        pa.field("config_json", pa.string()),  # full config, secrets redacted, JSON
        pa.field("summary_json", pa.string()),
        pa.field("env_json", pa.string()),
        pa.field("events_json", pa.string()),  # [{kind, step, time, payload}]
        pa.field("meta_json", pa.string()),
        pa.field("fidelity", pa.list_(pa.string())),  # what the adapter skipped, merged or noted
        pa.field("keys", pa.list_(pa.string())),  # metric keys, sorted
        pa.field("n_points", pa.int64()),
        pa.field("first_step", pa.float64()),
        pa.field("last_step", pa.float64()),
        pa.field("start_time", pa.float64()),  # min wall_time (Unix seconds), null when none
        pa.field("end_time", pa.float64()),
        pa.field("siblings", pa.list_(pa.string())),  # run_uids the adapter calls seeds of this arm
        pa.field("collection", pa.string()),  # where the run's equal-config seeds are searched
        pa.field("seed_group", pa.string()),  # derived: smallest run_uid of the run's arm
        pa.field("fingerprint", pa.string()),  # cheap change detector (files / tracker stamp)
        pa.field("content_hash", pa.string()),  # hash of the exported history
        pa.field("exported_at", pa.timestamp("ms", tz="UTC")),
    ]
)
"""Base columns of the runs table. Flattened `config.<key>` / `summary.<key>` columns follow."""

FLAT_PREFIXES = ("config", "summary")
FLAT_MIN_SHARE = 0.25  # a flattened key gets a column when at least this share of runs has it
FLAT_MAX_COLUMNS = 200  # per prefix, most common first

# -- errors ---------------------------------------------------------------------------------------
ERRORS_SCHEMA = pa.schema(
    [
        pa.field("input", pa.string()),
        pa.field("address", pa.string()),
        pa.field("run_uid", pa.string()),
        pa.field("stage", pa.string()),  # open | list | load | history | write
        pa.field("error_type", pa.string()),
        pa.field("message", pa.string()),
        pa.field("at", pa.timestamp("ms", tz="UTC")),
    ]
)
"""Failures of the most recent export (rewritten by each export)."""


def with_version(schema: pa.Schema) -> pa.Schema:
    """`schema` tagged with the fleet schema version in its Parquet key-value metadata."""
    return schema.with_metadata({PARQUET_META_KEY: str(SCHEMA_VERSION).encode()})


# -- JSON -----------------------------------------------------------------------------------------
def _json_default(obj: Any) -> Any:
    if hasattr(obj, "item") and callable(obj.item):  # numpy scalars
        try:
            return obj.item()
        except (TypeError, ValueError):
            pass
    if hasattr(obj, "tolist") and callable(obj.tolist):  # numpy arrays
        return obj.tolist()
    if isinstance(obj, _dt.datetime | _dt.date):
        return obj.isoformat()
    if isinstance(obj, set | frozenset):
        return sorted(obj, key=str)
    if isinstance(obj, bytes):
        return obj.decode("utf-8", "replace")
    return str(obj)


_NONFINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def _finite(value: Any) -> Any:
    if hasattr(value, "ndim") and hasattr(value, "tolist"):  # numpy scalars and arrays
        value = value.tolist()
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, Mapping):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def _restore(value: Any) -> Any:
    if isinstance(value, str):
        return _NONFINITE.get(value, value)
    if isinstance(value, dict):
        return {k: _restore(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_restore(v) for v in value]
    return value


def to_json(value: Any) -> str:
    """Strict JSON (sorted keys) that DuckDB and Spark parse: NaN and ±inf become the strings
    "NaN", "Infinity", "-Infinity", which `from_json` turns back into floats."""
    return json.dumps(_finite(value), sort_keys=True, default=_json_default, ensure_ascii=False,
                      allow_nan=False)


def from_json(text: str | None, default: Any = None) -> Any:
    if text is None or text == "":
        return default
    if text == "{}":  # most runs' env, meta and summary: skip the decoder
        return {}
    if text == "[]":
        return []
    value = json.loads(text)
    # to_json wrote non-finite floats as these strings; skip the walk when none can be there
    return _restore(value) if ('"NaN"' in text or 'Infinity"' in text) else value


# -- a Run as a row -------------------------------------------------------------------------------
PROJECT_META_FIELDS = ("project", "experiment", "experiment_name", "entity_project")


def project_of(run: Run, input_address: str) -> str:
    """The tracker's project/experiment when the adapter reports one, else the export input."""
    for name in PROJECT_META_FIELDS:
        value = run.meta.get(name)
        if isinstance(value, str) and value:
            return value
    return input_address


def run_row(
    run: Run,
    *,
    input_address: str,
    history_stats: Mapping[str, Any],
    fingerprint: str | None,
    content_hash: str | None,
    siblings: list[str],
    exported_at: _dt.datetime,
    collection: str | None = None,
) -> dict[str, Any]:
    """One runs-table row (base columns) from a loaded Run; every value is already redacted."""
    from ..redact import redact

    rec = redact(run.to_record())
    seed = rec.get("seed")
    return {
        "run_uid": run.uid,
        "address": rec["address"],
        "source": run.adapter,
        "project": redact(project_of(run, input_address)),
        "input": redact(input_address),
        "run_id": None if rec.get("run_id") is None else str(rec["run_id"]),
        "name": None if rec.get("name") is None else str(rec["name"]),
        "status": rec.get("status") or "unknown",
        "seed": int(seed) if isinstance(seed, int | float) and not isinstance(seed, bool)
        and math.isfinite(seed) else None,
        "git_sha": rec.get("git_sha") or None,
        "config_json": to_json(rec.get("config") or {}),
        "summary_json": to_json(rec.get("summary") or {}),
        "env_json": to_json(rec.get("env") or {}),
        "events_json": to_json(rec.get("events") or []),
        "meta_json": to_json(rec.get("meta") or {}),
        "fidelity": [str(n) for n in rec.get("fidelity") or []],
        "keys": list(history_stats.get("keys", [])),
        "n_points": int(history_stats.get("n_points", 0)),
        "first_step": history_stats.get("first_step"),
        "last_step": history_stats.get("last_step"),
        "start_time": history_stats.get("start_time"),
        "end_time": history_stats.get("end_time"),
        "siblings": sorted(siblings),
        "collection": None if collection is None else redact(collection),
        "seed_group": None,
        "fingerprint": fingerprint,
        "content_hash": content_hash,
        "exported_at": exported_at,
    }


# -- flattened columns ----------------------------------------------------------------------------
def _flat_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    return "json"


def _column(values: list[Any]) -> pa.Array:
    """One typed column: bool, int64, float64 when every present value agrees, else strings."""
    kinds = {_flat_kind(v) for v in values} - {"null"}
    if kinds == {"bool"}:
        return pa.array(values, pa.bool_())
    if kinds == {"int"} and all(v is None or -(2**63) <= v < 2**63 for v in values):
        return pa.array(values, pa.int64())
    if kinds and kinds <= {"int", "float"}:
        return pa.array([None if v is None else float(v) for v in values], pa.float64())
    return pa.array(
        [None if v is None else (v if isinstance(v, str) else to_json(v)) for v in values],
        pa.string(),
    )


def flattened_columns(
    rows: list[Mapping[str, Any]],
    *,
    min_share: float = FLAT_MIN_SHARE,
    max_columns: int = FLAT_MAX_COLUMNS,
) -> list[tuple[str, pa.Array]]:
    """`config.<key>` and `summary.<key>` columns for keys common across `rows`.

    A dotted (flattened) key gets a column when at least `min_share` of the runs have it, up to
    `max_columns` per prefix, most common first (ties by name). Values keep their type when every
    run agrees (bool, int64, float64); anything else is a string (JSON for lists and objects).
    """
    out: list[tuple[str, pa.Array]] = []
    n = len(rows)
    if n == 0:
        return out
    need = max(1, math.ceil(min_share * n))
    for prefix in FLAT_PREFIXES:
        flats = []
        for row in rows:
            data = from_json(row.get(f"{prefix}_json"), {})
            flats.append(flatten(data) if isinstance(data, Mapping) else {})
        counts: dict[str, int] = {}
        for flat in flats:
            for key in flat:
                counts[key] = counts.get(key, 0) + 1
        common = sorted((k for k, c in counts.items() if c >= need), key=lambda k: (-counts[k], k))
        for key in sorted(common[:max_columns]):
            out.append((f"{prefix}.{key}", _column([flat.get(key) for flat in flats])))
    return out


def seed_groups(rows: list[Mapping[str, Any]]) -> dict[str, str]:
    """run_uid → seed group: the smallest run_uid of the run's arm, by the one arm rule
    (engines.arms): declared `siblings`, else equal configs within one `collection`.

    Derived over the whole table at write time, so a seed exported later joins its old siblings
    without rewriting them. Runs alone in their arm get no group.
    """
    from ..engines.arms import group_runs

    address = {r["run_uid"]: r.get("address") or r["run_uid"] for r in rows}
    runs = []
    for r in rows:
        run = Run(address=address[r["run_uid"]], name=str(r.get("name") or r["run_uid"]),
                  run_id=str(r.get("run_id") or r["run_uid"]), adapter=str(r.get("source") or ""),
                  config=from_json(r.get("config_json"), {}) or {},
                  meta=from_json(r.get("meta_json"), {}) or {})
        coll = r.get("collection")
        run.collection = coll if coll else f"{run.address} (alone)"
        run.declared_siblings = tuple(address[u] for u in r.get("siblings") or () if u in address)
        runs.append(run)
    uid_of = {a: u for u, a in address.items()}
    out: dict[str, str] = {}
    for members, _how in group_runs(runs):
        if len(members) > 1:
            uids = [uid_of[m.address] for m in members]
            out.update(dict.fromkeys(uids, min(uids)))
    return out


def runs_table(rows: Iterable[Mapping[str, Any]], **flat_options: Any) -> pa.Table:
    """The runs table: base columns in schema order, then flattened columns. Sorted by run_uid."""
    rows = sorted(rows, key=lambda r: r["run_uid"])
    groups = seed_groups(rows)
    rows = [{**r, "seed_group": groups.get(r["run_uid"])} for r in rows]
    base = pa.Table.from_pylist([{f.name: r.get(f.name) for f in RUNS_SCHEMA} for r in rows],
                                schema=RUNS_SCHEMA)
    for name, column in flattened_columns(rows, **flat_options):
        base = base.append_column(name, column)
    return base.replace_schema_metadata(with_version(base.schema).metadata)


def errors_table(rows: Iterable[Mapping[str, Any]]) -> pa.Table:
    rows = list(rows)
    table = pa.Table.from_pylist([{f.name: r.get(f.name) for f in ERRORS_SCHEMA} for r in rows],
                                 schema=ERRORS_SCHEMA)
    return table.replace_schema_metadata(with_version(table.schema).metadata)


def base_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """Only the base columns of a runs row read back from disk (flattened ones are derived)."""
    return {f.name: row.get(f.name) for f in RUNS_SCHEMA}
