"""Read a fleet dataset's tables as pyarrow Tables (for pandas/pyarrow users and the adapter).

Points are read through `pyarrow.dataset` with the Hive partitioning declared (so `run_uid` stays a
string) and filters pushed down: asking for some runs opens only their partition files.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from ..errors import InputError
from . import layout
from .schema import ERRORS_SCHEMA, POINT_FILE_SCHEMA, POINT_PARTITION_SCHEMA

POINTS_SCHEMA = pa.schema(list(POINT_PARTITION_SCHEMA) + list(POINT_FILE_SCHEMA))
"""The points table as a reader sees it: partition columns first, then the file columns."""


def _root(dataset: str) -> str:
    root = os.path.abspath(os.path.expanduser(dataset))
    layout.read_manifest(root)
    return root


def points_dataset(dataset: str, files: list[str] | None = None) -> ds.Dataset:
    """The points table as a `pyarrow.dataset.Dataset` (optionally over some partition files)."""
    root = _root(dataset)
    part = ds.partitioning(POINT_PARTITION_SCHEMA, flavor="hive")
    base = layout.points_dir(root)
    if files is not None:
        return ds.dataset(files, schema=POINTS_SCHEMA, format="parquet", partitioning=part,
                          partition_base_dir=base)
    if not os.path.isdir(base):
        return ds.dataset([], schema=POINTS_SCHEMA, format="parquet")
    return ds.dataset(base, schema=POINTS_SCHEMA, format="parquet", partitioning=part)


def read_points(
    dataset: str,
    *,
    run_uids: Iterable[str] | None = None,
    sources: Iterable[str] | None = None,
    keys: Iterable[str] | None = None,
    columns: list[str] | None = None,
) -> pa.Table:
    """Points of the chosen runs/sources/keys (all when None), each run's rows in logged order."""
    root = _root(dataset)
    files = None
    if run_uids is not None:
        wanted = set(run_uids)
        runs = read_runs(root, columns=["run_uid", "source", "n_points"])
        files = [
            layout.points_file(root, s, u)
            for u, s, n in zip(runs.column("run_uid").to_pylist(), runs.column("source").to_pylist(),
                               runs.column("n_points").to_pylist(), strict=True)
            if u in wanted and n
        ]
    expr = None
    if sources is not None:
        expr = pc.field("source").isin(list(sources))
    if keys is not None:
        k = pc.field("key").isin(list(keys))
        expr = k if expr is None else expr & k
    try:
        return points_dataset(root, files).to_table(columns=columns, filter=expr)
    except (pa.ArrowException, OSError) as exc:
        raise InputError(f"cannot read the points of {root} ({type(exc).__name__}: {exc})",
                         hint="re-run `rundiff export` on this dataset") from None


def read_runs(dataset: str, columns: list[str] | None = None) -> pa.Table:
    """The runs table (base and flattened columns); empty before the first export finished."""
    root = _root(dataset)
    table = layout.read_runs(root, columns)
    if table is None:
        from .schema import runs_table

        return runs_table([])
    return table


def read_errors(dataset: str) -> pa.Table:
    """The failures recorded by the latest export."""
    root = _root(dataset)
    path = layout.errors_file(root)
    if not os.path.isfile(path):
        return ERRORS_SCHEMA.empty_table()
    return layout.read_table(path)
