"""Where things live inside a fleet dataset, and reading what is there (shared by export and the
`parquet:` adapter). Reading never writes."""

from __future__ import annotations

import json
import os
from functools import lru_cache
from typing import Any
from urllib.parse import quote

import pyarrow as pa
import pyarrow.parquet as pq

try:  # the reader behind pq.ParquetFile, reached without its Python set-up
    from pyarrow._parquet import ParquetReader as _ParquetReader
except ImportError:  # pragma: no cover - a pyarrow that moved it: the public path still works
    _ParquetReader = None

from ..errors import InputError
from .schema import FORMAT, MANIFEST, PARQUET_META_KEY, SCHEMA_VERSION

PART_FILE = "part-0.parquet"


def manifest_path(root: str) -> str:
    return os.path.join(root, MANIFEST)


def points_dir(root: str) -> str:
    return os.path.join(root, "points")


def partition_dir(root: str, source: str, run_uid: str) -> str:
    """`points/source=S/run_uid=U`: values URI-escaped, as pyarrow's Hive partitioning expects."""
    return os.path.join(points_dir(root), f"source={_escape(source)}",
                        f"run_uid={_escape(run_uid)}")


def _escape(value: str) -> str:
    """`quote(value, safe='')`, skipped for plain ASCII letters and digits (which it keeps):
    run uids are hex, and a 100,000-run query builds every run's path."""
    return value if value.isascii() and value.isalnum() else quote(value, safe="")


@lru_cache(maxsize=8192)  # a fleet query asks for the same few thousand paths again and again
def points_file(root: str, source: str, run_uid: str) -> str:
    return os.path.join(partition_dir(root, source, run_uid), PART_FILE)


def runs_file(root: str) -> str:
    return os.path.join(root, "runs", PART_FILE)


def errors_file(root: str) -> str:
    return os.path.join(root, "errors", PART_FILE)


def tmp_dir(root: str) -> str:
    return os.path.join(root, "_tmp")


def is_dataset(root: str) -> bool:
    """A fleet dataset has the manifest file (what the `parquet:` adapter sniffs for)."""
    return os.path.isfile(manifest_path(root))


def read_manifest(root: str) -> dict[str, Any]:
    """The manifest, checked: right format and a schema version this rundiff can read."""
    path = manifest_path(root)
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except FileNotFoundError:
        raise InputError(
            f"{root} is not a rundiff fleet dataset (no {MANIFEST})",
            hint="create one with `rundiff export SRC… -o DATASET/`",
        ) from None
    except (OSError, ValueError) as exc:
        raise InputError(f"{path} is unreadable ({exc})",
                         hint="re-run `rundiff export` into a fresh folder") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise InputError(f"{path} is not a rundiff fleet manifest",
                         hint="point at a folder written by `rundiff export`")
    check_version(data.get("schema_version"), path)
    return data


def check_version(version: Any, where: str) -> None:
    try:
        v = int(version)
    except (TypeError, ValueError):
        raise InputError(f"{where}: missing or bad fleet schema_version {version!r}") from None
    if v > SCHEMA_VERSION:
        raise InputError(
            f"{where} uses fleet schema v{v}; this rundiff reads up to v{SCHEMA_VERSION}",
            hint="upgrade rundiff (pip install -U rundiff)",
        )


def read_table(path: str, columns: list[str] | None = None,
               read_dictionary: list[str] | None = None) -> pa.Table:
    """One Parquet file of the dataset, with corrupt files turned into a typed InputError.

    The files are small and a query opens hundreds: the whole file is read into memory and, when
    every column is wanted, handed to pyarrow's reader directly, skipping `pq.ParquetFile`'s
    Python set-up (a third of the cost)."""
    try:
        with open(path, "rb") as fh:
            source = pa.BufferReader(fh.read())
        if columns is None and _ParquetReader is not None:
            reader = _ParquetReader()
            reader.open(source, read_dictionary=read_dictionary, pre_buffer=False)
            _check_file_version(reader.metadata, path)
            return reader.read_all(use_threads=False)
        pf = pq.ParquetFile(source, read_dictionary=read_dictionary)  # columns by name, nested too
        _check_file_version(pf.metadata, path)
        return pf.read(columns=columns, use_threads=False)
    except FileNotFoundError:
        raise  # the caller says which file should have been there
    except (pa.ArrowException, OSError, KeyError) as exc:  # KeyError: a column it lacks
        raise InputError(
            f"{path} is not a readable Parquet file ({type(exc).__name__}: {exc})",
            hint="re-run `rundiff export` for this dataset (add --full to rewrite every run)",
        ) from None


def _check_file_version(metadata: pq.FileMetaData, path: str) -> None:
    kv = metadata.metadata or {}
    if PARQUET_META_KEY in kv:
        check_version(kv[PARQUET_META_KEY].decode(), path)


def read_runs(root: str, columns: list[str] | None = None) -> pa.Table | None:
    """The runs table, or None when no export has finished yet."""
    path = runs_file(root)
    if not os.path.isfile(path):
        return None
    return read_table(path, columns)
