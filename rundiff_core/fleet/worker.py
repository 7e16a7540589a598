"""Export one run (or a batch of them): the unit of work every engine runs, in any process.

Everything crossing a process boundary here is plain data (`RunTask`, `Prior`, `RunResult`,
pyarrow tables). A worker opens each input address once and keeps the source for the batch.
A failure is caught per run and returned as data — it never stops the other runs.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import os
import signal
import time
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ..errors import RundiffError
from ..model import Run, RunRef
from . import faults
from .fingerprint import content_hash, fingerprint
from .schema import TERMINAL_STATUSES, run_row
from .writer import points_table, write_points

# Sources handed over as objects (tests, notebooks): usable only by in-process engines.
LOCAL_SOURCES: dict[str, Any] = {}


@dataclass(frozen=True)
class RunTask:
    """One run to export: the input that listed it (as the user gave it), the address a worker
    opens for it (already resolved to `scheme:locator`, so no worker sniffs again), and its ref."""

    input: str
    ref: RunRef
    source_address: str = ""

    @property
    def opens(self) -> str:
        return self.source_address or self.input


@dataclass(frozen=True)
class Prior:
    """What the dataset already holds for a run (from the runs table)."""

    fingerprint: str | None
    status: str | None
    content_hash: str | None
    source: str | None
    n_points: int


@dataclass
class RunResult:
    """The outcome of one task.

    `outcome`: `new` (first export), `updated` (points rewritten), `unchanged` (history loaded,
    identical: partition kept, metadata row refreshed), `skipped` (fingerprint unchanged on a
    finished run: nothing loaded) or `failed` (see `error`).
    """

    input: str
    address: str
    run_uid: str | None = None
    source: str | None = None
    outcome: str = "failed"
    row: dict[str, Any] | None = None
    points: pa.Table | None = None  # set when the engine asked the client to write
    n_points: int = 0
    bytes_written: int = 0
    error: dict[str, Any] | None = None
    seconds: float = 0.0
    fidelity: list[str] = field(default_factory=list)


def uid_of(address: str) -> str:
    """Run.uid for a run whose address is `address` (same hash as the model)."""
    return hashlib.sha1(address.encode()).hexdigest()[:16]


def register_local_source(source: Any) -> str:
    """Make an in-memory RunSource addressable by in-process engines; returns its token. Its runs
    are redacted like those of an opened address."""
    from ..redact import redacted_source

    token = f"<in-process source {id(source):x}>"
    LOCAL_SOURCES[token] = redacted_source(source)
    return token


def _open(input_address: str, cache: dict[str, Any]) -> Any:
    if input_address in LOCAL_SOURCES:
        return LOCAL_SOURCES[input_address]
    if input_address not in cache:
        from ..resolve import open_source

        cache[input_address] = open_source(input_address)
    return cache[input_address]


def _history_stats(history: pd.DataFrame) -> dict[str, Any]:
    """Keys, point count, step and wall-time ranges (NaN-aware) for the runs table."""
    if not len(history):
        return {"keys": [], "n_points": 0}
    keys = history["key"]
    if isinstance(keys.dtype, pd.CategoricalDtype):
        cat = keys.array
        names = [str(cat.categories[c]) for c in np.unique(cat.codes) if c >= 0]
    else:
        names = [str(k) for k in pd.unique(keys)]
    out: dict[str, Any] = {"keys": sorted(set(names)), "n_points": int(len(history))}
    for col, lo, hi in (("step", "first_step", "last_step"), ("wall_time", "start_time", "end_time")):
        arr = history[col].to_numpy(dtype="float64")
        arr = arr[~np.isnan(arr)]
        out[lo] = float(arr.min()) if len(arr) else None
        out[hi] = float(arr.max()) if len(arr) else None
    return out


def _siblings(source: Any, ref: RunRef) -> list[str]:
    """uids of the seed siblings the source declares (engines.arms rule 1); [] when none."""
    from ..engines.arms import declared_siblings

    uids = sorted({uid_of(r.address) for r in declared_siblings(source, ref)})
    return uids if len(uids) > 1 else []


def _collection(source: Any, ref: RunRef) -> str | None:
    """The collection searched for equal-config seeds (engines.arms rule 2); None: none."""
    from ..engines.arms import collection_of

    try:
        return collection_of(source, ref)
    except Exception:  # noqa: BLE001 - a nicety; never fail the run for it
        return None


def export_run(
    task: RunTask,
    prior: Mapping[str, Prior],
    *,
    write_root: str | None,
    exported_at: _dt.datetime,
    full: bool = False,
    cache: dict[str, Any] | None = None,
) -> RunResult:
    """Load, compare with what the dataset holds, and write (or return) one run's partition."""
    started = time.perf_counter()
    cache = {} if cache is None else cache
    result = RunResult(input=task.input, address=task.ref.address)
    stage = "open"
    try:
        source = _open(task.opens, cache)
        stage = "load"
        run: Run = source.load_run(task.ref)
        result.address, result.run_uid, result.source = run.address, run.uid, run.adapter
        before = prior.get(run.uid)
        fp = fingerprint(run)
        if (not full and before is not None and fp is not None and before.fingerprint == fp
                and run.status in TERMINAL_STATUSES and before.status == run.status
                and before.source == run.adapter):
            result.outcome = "skipped"
            result.n_points = before.n_points
            return result
        stage = "history"
        history = run.history()
        chash = content_hash(history)
        row = run_row(run, input_address=task.input, history_stats=_history_stats(history),
                      fingerprint=fp, content_hash=chash, siblings=_siblings(source, task.ref),
                      exported_at=exported_at, collection=_collection(source, task.ref))
        result.row, result.n_points = row, row["n_points"]
        if (not full and before is not None and before.content_hash == chash
                and before.source == run.adapter):
            result.outcome = "unchanged"
            return result
        stage = "write"
        table = points_table(history) if len(history) else None
        if before is not None and before.source not in (None, run.adapter) and write_root:
            write_points(write_root, before.source, run.uid, None)  # the run changed adapter
        if write_root is not None:
            result.bytes_written = write_points(write_root, run.adapter, run.uid, table)
        else:
            result.points = table
        result.outcome = "new" if before is None else "updated"
        return result
    except Exception as exc:  # a failed run is data: the export goes on
        result.outcome = "failed"
        result.row = result.points = None
        result.error = {
            "stage": stage,
            "error_type": type(exc).__name__,
            "message": _one_line(exc),
            "traceback": None if isinstance(exc, RundiffError) else traceback.format_exc(limit=6),
        }
        return result
    finally:
        result.seconds = time.perf_counter() - started


def _one_line(exc: BaseException) -> str:
    text = exc.message if isinstance(exc, RundiffError) else str(exc)
    return " ".join(text.split()) or type(exc).__name__


def export_batch(
    tasks: Sequence[RunTask],
    prior: Mapping[str, Prior],
    write_root: str | None,
    exported_at: _dt.datetime,
    full: bool = False,
    cache: dict[str, Any] | None = None,
) -> list[RunResult]:
    """Export several runs in this process, sharing opened sources (closed at the end unless
    the caller passed its own `cache`)."""
    own = cache is None
    cache = {} if cache is None else cache
    try:
        return [export_run(t, prior, write_root=write_root, exported_at=exported_at, full=full,
                           cache=cache) for t in tasks]
    finally:
        if own:
            close_sources(cache)


def close_sources(cache: dict[str, Any]) -> None:
    """Close each opened source once (one may be cached under several addresses)."""
    for src in {id(s): s for s in cache.values()}.values():
        if src in LOCAL_SOURCES.values():
            continue  # the caller owns objects it handed in
        try:
            src.close()
        except Exception:  # closing is best effort
            pass
    cache.clear()


# -- process-pool plumbing: the prior state is sent once per worker process ---------------------
_POOL_PRIOR: Mapping[str, Prior] = {}


def pool_init(prior: Mapping[str, Prior], pause: str | None = None) -> None:
    """Per worker process: keep the prior state; leave Ctrl-C to the driver, which stops handing
    out work and lets in-flight runs finish their (atomic) writes. `pause` is the driver's
    fault-injection setting (faults.py): a forkserver started earlier does not carry it."""
    global _POOL_PRIOR
    _POOL_PRIOR = prior
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if pause:
        os.environ[faults.ENV] = pause


_POOL_SOURCES: dict[str, Any] = {}  # opened once per worker process, for the whole export


def pool_batch(tasks: Sequence[RunTask], write_root: str | None, exported_at: _dt.datetime,
               full: bool = False) -> list[RunResult]:
    return export_batch(tasks, _POOL_PRIOR, write_root, exported_at, full, cache=_POOL_SOURCES)
