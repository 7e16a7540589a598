"""`export_fleet`: many addresses → one versioned, Hive-partitioned Parquet dataset.

The driver lists runs (cheap), hands them to an engine in batches, writes what the engine returns,
and finally rewrites the small runs and errors tables and the manifest atomically. The runs table is
written even when the export is interrupted, so it always describes the partitions on disk.
"""

from __future__ import annotations

import datetime as _dt
import os
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ..address import parse_address
from ..errors import InputError, RundiffError, UsageError
from ..plugins import get_plugins
from . import layout, pack_writer, writer
from .engines import DaskEngine, LocalEngine, make_engine
from .schema import RUNS_SCHEMA, base_row, errors_table, runs_table
from .worker import LOCAL_SOURCES, Prior, RunResult, RunTask, close_sources, register_local_source


@dataclass
class ExportSummary:
    """What an export did: counts by outcome, sizes, speed, and why runs failed."""

    dataset: str
    engine: str
    workers: int
    inputs: list[str]
    runs_seen: int = 0
    new: int = 0
    updated: int = 0
    unchanged: int = 0
    skipped: int = 0
    failed: int = 0
    inputs_failed: int = 0
    pruned: int = 0
    points_written: int = 0
    bytes_written: int = 0
    runs_in_dataset: int = 0
    points_in_dataset: int = 0
    dataset_bytes: int = 0
    seconds: float = 0.0
    interrupted: bool = False
    pack_bytes: int = 0  # the packed copy of the points rewritten by this export (see pack.py)
    pack_problem: str | None = None  # why the pack could not be written (the dataset is whole)
    failures: list[dict[str, Any]] = field(default_factory=list)

    @property
    def runs_per_second(self) -> float:
        return self.runs_seen / self.seconds if self.seconds else 0.0

    @property
    def points_per_second(self) -> float:
        return self.points_written / self.seconds if self.seconds else 0.0

    def reasons(self) -> list[tuple[str, int]]:
        """Failure reasons grouped (`ErrorType: message`), most frequent first."""
        counts = Counter(f"{f['error_type']}: {f['message']}" for f in self.failures)
        return counts.most_common()

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["runs_per_second"] = self.runs_per_second
        d["points_per_second"] = self.points_per_second
        d["failures"] = [{k: v for k, v in f.items() if k != "traceback"} for f in self.failures]
        return d


ProgressHook = Callable[[int, int, int], None]  # (done, total, failed)


def _normalize_input(raw: str) -> str:
    """Make a local path absolute so every worker (any cwd, any process) opens the same thing."""
    addr = parse_address(raw)
    if addr.scheme is None or get_plugins().registry.by_scheme(addr.scheme) is None:
        return os.path.abspath(raw) if os.path.exists(raw) else raw
    if addr.locator and os.path.exists(addr.locator):
        return f"{addr.scheme}:{os.path.abspath(addr.locator)}"
    head, sep, fragment = addr.locator.partition("#")  # e.g. parquet:fleet/#UID, mlflow:mlruns#7
    if sep and head and os.path.exists(head):
        return f"{addr.scheme}:{os.path.abspath(head)}#{fragment}"
    return raw


def _resolved(source: Any, token: str) -> str:
    """`scheme:locator` of an opened source, so workers open it without sniffing the path again
    (sniffing a big folder by every adapter costs more than exporting a run)."""
    if token in LOCAL_SOURCES:
        return token
    addr = getattr(source, "address", None)
    scheme = getattr(addr, "scheme", None)
    if scheme and get_plugins().registry.by_scheme(scheme) is not None:
        return f"{scheme}:{addr.locator}"
    return token


def _prior(root: str, rows: dict[str, dict[str, Any]]) -> dict[str, Prior]:
    """What the dataset holds per run; a run whose partition file went missing is left out, so
    it is exported again as new."""
    out = {}
    for uid, row in rows.items():
        n = int(row.get("n_points") or 0)
        if n and not os.path.isfile(layout.points_file(root, row.get("source") or "", uid)):
            continue
        out[uid] = Prior(row.get("fingerprint"), row.get("status"), row.get("content_hash"),
                         row.get("source"), n)
    return out


def _read_prior_rows(root: str) -> dict[str, dict[str, Any]]:
    table = layout.read_runs(root, [f.name for f in RUNS_SCHEMA])
    if table is None:
        return {}
    return {r["run_uid"]: base_row(r) for r in table.to_pylist()}


def _dir_bytes(path: str) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(dirpath, name))
            except OSError:
                pass
    return total


def _failure(input_address: str, *, stage: str, error_type: str, message: str,
             at: _dt.datetime, address: str | None = None, run_uid: str | None = None,
             tb: str | None = None) -> dict[str, Any]:
    """An errors-table row; every text is scrubbed of secrets (URLs with passwords, tokens)."""
    from ..redact import redact_text

    def clean(text: str | None) -> str | None:
        return None if text is None else " ".join(redact_text(str(text)).split())

    return {"input": clean(input_address), "address": clean(address), "run_uid": run_uid,
            "stage": stage, "error_type": error_type, "message": clean(message), "at": at,
            "traceback": None if tb is None else redact_text(tb)}


class _SelfExportError(UsageError):
    """An input is the output dataset itself."""


def list_tasks(
    sources: Iterable[Any], cache: dict[str, Any], at: _dt.datetime, out_root: str = ""
) -> tuple[list[RunTask], list[str], list[dict[str, Any]], list[BaseException]]:
    """Open every input and list its runs (deduplicated by address); failures are recorded."""
    from ..resolve import open_source

    tasks: list[RunTask] = []
    inputs: list[str] = []
    failures: list[dict[str, Any]] = []
    errors: list[BaseException] = []
    seen: set[str] = set()
    for src in sources:
        if isinstance(src, str):
            token = _normalize_input(src)
        else:
            token = register_local_source(src)
        inputs.append(token)
        stage = "open"
        try:
            if token not in cache:
                cache[token] = LOCAL_SOURCES.get(token) or open_source(token)
            if out_root and getattr(cache[token], "root", None) == out_root:
                raise _SelfExportError(f"{token} is the dataset being written",
                                       hint="export into another folder")
            stage = "list"
            refs = cache[token].list_runs()
        except _SelfExportError:
            raise
        except Exception as exc:  # one unreachable input does not stop the fleet
            errors.append(exc)
            msg = exc.message if isinstance(exc, RundiffError) else str(exc)
            failures.append(_failure(token, stage=stage, error_type=type(exc).__name__,
                                     message=msg, at=at))
            continue
        opens = _resolved(cache[token], token)
        if opens != token:
            cache.setdefault(opens, cache[token])
        for ref in refs:
            if ref.address not in seen:
                seen.add(ref.address)
                tasks.append(RunTask(token, ref, opens))
    return tasks, inputs, failures, errors


def export_fleet(
    sources: Sequence[Any],
    dataset: str,
    *,
    engine: str | LocalEngine | DaskEngine = "local",
    workers: int | None = None,
    scheduler: Any = None,
    write_in: str | None = None,
    full: bool = False,
    prune: bool = False,
    progress: bool | ProgressHook | None = None,
    pack: bool = True,
) -> ExportSummary:
    """Export every run the `sources` name into the dataset folder `dataset`.

    `sources` are addresses (anything `rundiff ls` accepts) or RunSource objects (in-process only).
    Re-running updates the dataset incrementally (see docs/fleet.md); `full=True` rewrites every
    run; `prune=True` drops runs that are no longer listed by any input. A per-run failure goes to
    the errors table and the summary; the export carries on. `pack=False` writes (and keeps) no
    packed copy of the points (`_pack/`, which makes `parquet:` reads faster; see fleet/pack.py).
    """
    eng = engine if not isinstance(engine, str) else make_engine(
        engine, workers=workers, scheduler=scheduler, write_in=write_in)
    with eng:  # a Dask engine connects here, before the dataset is touched
        return _export(sources, os.path.abspath(dataset), eng, full, prune, progress, pack)


def _export(sources: Sequence[Any], root: str, eng: LocalEngine | DaskEngine, full: bool,
            prune: bool, progress: bool | ProgressHook | None, pack: bool) -> ExportSummary:
    started = time.perf_counter()
    at = _dt.datetime.now(_dt.UTC).replace(microsecond=0)
    writer.prepare(root)
    cache: dict[str, Any] = {}
    summary = ExportSummary(dataset=root, engine=eng.name, workers=0, inputs=[])
    with writer.DatasetLock(root):
        prior_rows = _read_prior_rows(root)
        try:
            tasks, summary.inputs, list_failures, list_errors = list_tasks(sources, cache, at,
                                                                           root)
        except BaseException:
            close_sources(cache)
            raise
        summary.failures.extend(list_failures)
        summary.inputs_failed = len(list_failures)
        if not tasks and list_errors:
            close_sources(cache)
            err = list_errors[0]
            if isinstance(err, RundiffError):
                raise err
            raise InputError(f"could not list runs from {summary.inputs[0]}: {err}") from err
        if not tasks:
            close_sources(cache)
            raise InputError(f"{', '.join(summary.inputs)} name(s) no runs",
                             hint="run `rundiff ls` on each input to see what is there")
        rows = dict(prior_rows)
        seen_uids: set[str] = set()
        hook = _progress_hook(progress, len(tasks))
        done = 0
        completed = False
        try:
            for results in eng.run(tasks, _prior(root, prior_rows), root, at, full, cache):
                for res in results:
                    _apply(res, root, rows, prior_rows, seen_uids, summary, at)
                done += len(results)
                hook(done, len(tasks), summary.failed)
            completed = True
        except KeyboardInterrupt:
            summary.interrupted = True
            raise
        finally:
            hook(-1, len(tasks), summary.failed)
            close_sources(cache)
            for token in summary.inputs:
                LOCAL_SOURCES.pop(token, None)
            summary.workers = eng.used_workers
            summary.runs_seen = done
            if prune and completed and not list_failures:
                listed = {t.ref.address for t in tasks}
                summary.pruned = _prune(root, rows, seen_uids, listed)
            _finish(root, rows, summary, started, pack=pack if completed else None)
    return summary


def _apply(res: RunResult, root: str, rows: dict[str, dict[str, Any]],
           prior_rows: dict[str, dict[str, Any]], seen: set[str], summary: ExportSummary,
           at: _dt.datetime) -> None:
    """Fold one run's result into the dataset (writing its points when the engine returned them)."""
    if res.run_uid:
        seen.add(res.run_uid)
    if res.outcome == "failed":
        summary.failed += 1
        err = res.error or {}
        summary.failures.append(_failure(res.input, address=res.address, run_uid=res.run_uid,
                                         stage=err.get("stage", "?"),
                                         error_type=err.get("error_type", "Error"),
                                         message=err.get("message", ""), at=at,
                                         tb=err.get("traceback")))
        return
    if res.outcome == "skipped":
        summary.skipped += 1
        return
    before = prior_rows.get(res.run_uid or "")
    if res.outcome in ("new", "updated"):
        try:
            if before is not None and before.get("source") not in (None, res.source):
                writer.remove_points(root, before["source"], res.run_uid)
            if res.points is not None or res.n_points == 0:  # the engine left the write to us
                res.bytes_written += writer.write_points(root, res.source, res.run_uid, res.points)
        except OSError as exc:
            summary.failed += 1
            summary.failures.append(_failure(res.input, address=res.address, run_uid=res.run_uid,
                                             stage="write", error_type=type(exc).__name__,
                                             message=str(exc), at=at))
            return
        finally:
            res.points = None
        summary.points_written += res.n_points
        summary.bytes_written += res.bytes_written
    setattr(summary, res.outcome, getattr(summary, res.outcome) + 1)
    if res.row is not None:
        rows[res.run_uid] = res.row


def _prune(root: str, rows: dict[str, dict[str, Any]], seen: set[str], listed: set[str]) -> int:
    """Drop rows (and partitions) of runs no input listed this time, and orphan partitions.

    A run that was listed but failed to load is kept (its last good export stays)."""
    gone = [uid for uid, row in rows.items() if uid not in seen and row.get("address") not in listed]
    for uid in gone:
        writer.remove_points(root, rows[uid].get("source") or "", uid)
        del rows[uid]
    pdir = layout.points_dir(root)
    if os.path.isdir(pdir):
        for sdir in os.scandir(pdir):
            if not sdir.is_dir() or not sdir.name.startswith("source="):
                continue
            for rdir in os.scandir(sdir.path):
                uid = rdir.name.partition("=")[2]
                if rdir.is_dir() and rdir.name.startswith("run_uid=") and uid not in rows:
                    writer.remove_points(root, sdir.name.partition("=")[2], uid)
    return len(gone)


def _finish(root: str, rows: dict[str, dict[str, Any]], summary: ExportSummary,
            started: float, *, pack: bool | None) -> None:
    """Rewrite the runs and errors tables, the pack (unless the export stopped early: `pack` is
    None, and the old pack's entries for rewritten runs no longer match) and the manifest; fill in
    the summary's totals."""
    writer.atomic_write_table(runs_table(rows.values()), layout.runs_file(root), root)
    writer.atomic_write_table(errors_table(summary.failures), layout.errors_file(root), root)
    if pack is not None:
        summary.pack_bytes, summary.pack_problem = pack_writer.update_pack(root, rows, enabled=pack)
    summary.runs_in_dataset = len(rows)
    summary.points_in_dataset = sum(int(r.get("n_points") or 0) for r in rows.values())
    summary.seconds = time.perf_counter() - started
    last = {k: v for k, v in summary.to_dict().items() if k not in ("failures", "dataset")}
    last["failures"] = len(summary.failures)
    writer.write_manifest(root, last)
    import shutil

    shutil.rmtree(layout.tmp_dir(root), ignore_errors=True)
    summary.dataset_bytes = _dir_bytes(root)


def _progress_hook(progress: bool | ProgressHook | None, total: int) -> ProgressHook:
    """A callable progress sink: rich bar on a TTY (or when asked), nothing otherwise."""
    if callable(progress):
        return progress
    show = sys.stderr.isatty() if progress is None else bool(progress)
    if not show:
        return lambda done, total, failed: None
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    bar = Progress(TextColumn("exporting"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("runs · {task.fields[failed]} failed"), TimeElapsedColumn(),
                   TimeRemainingColumn(), console=Console(stderr=True), transient=True)
    task = bar.add_task("export", total=total, failed=0)
    bar.start()

    def hook(done: int, total: int, failed: int) -> None:
        if done < 0:
            bar.stop()
            return
        bar.update(task, completed=done, failed=failed)

    return hook
