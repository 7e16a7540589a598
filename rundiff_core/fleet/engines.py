"""Where the per-run work runs: this process, a process pool, or a Dask cluster.

An engine takes batches of `RunTask`s and yields each batch's `RunResult`s as they finish (any
order). The local engine's workers write their partitions themselves; the Dask engine by default
ships each run's points back to the client, which writes them, so workers need no access to the
output folder (`write_in="workers"` lets them write when the dataset is on a shared filesystem).
Dask is imported only when asked for.
"""

from __future__ import annotations

import datetime as _dt
import math
import multiprocessing
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from ..errors import InputError, MissingDependencyError, UsageError
from . import faults
from .worker import LOCAL_SOURCES, Prior, RunResult, RunTask, export_batch, pool_batch, pool_init

ENGINES = ("local", "dask")
INPROCESS_BELOW = 8  # fewer runs than this are exported in-process: a pool would only add startup


def default_workers() -> int:
    """A modest pool: every core but capped at 4, so a shared machine stays usable."""
    return max(1, min(4, os.cpu_count() or 1))


def batch_size(n_tasks: int, slots: int) -> int:
    """Enough batches to balance slow runs across `slots`, few enough to amortise overhead."""
    return max(1, min(32, math.ceil(n_tasks / max(1, slots * 8))))


def make_batches(tasks: Sequence[RunTask], size: int) -> list[list[RunTask]]:
    return [list(tasks[i:i + size]) for i in range(0, len(tasks), size)]


def _mp_context() -> multiprocessing.context.BaseContext:
    """forkserver (no fork of a threaded parent; imports paid once, by the server), spawn on
    Windows."""
    if sys.platform == "win32":
        return multiprocessing.get_context("spawn")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["rundiff_core.fleet.worker", "rundiff_core.resolve",
                                "rundiff_core.plugins"])
    return ctx


class LocalEngine:
    """Exports in this process (`workers=0`) or in a pool of worker processes."""

    name = "local"

    def __init__(self, workers: int | None = None) -> None:
        if workers is not None and workers < 0:
            raise UsageError("--workers must be 0 (in-process) or more")
        self.workers = default_workers() if workers is None else workers
        self.used_workers = 0

    def __enter__(self) -> LocalEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def run(self, tasks: Sequence[RunTask], prior: Mapping[str, Prior], write_root: str,
            exported_at: _dt.datetime, full: bool, cache: dict[str, Any]) -> Iterator[list[RunResult]]:
        inproc = [t for t in tasks if t.opens in LOCAL_SOURCES]
        remote = [t for t in tasks if t.opens not in LOCAL_SOURCES]
        if self.workers <= 1 or len(remote) < INPROCESS_BELOW:
            inproc, remote = list(tasks), []
        for batch in make_batches(inproc, 1):
            yield export_batch(batch, prior, write_root, exported_at, full, cache=cache)
        if not remote:
            return
        self.used_workers = min(self.workers, len(remote))
        queue = make_batches(remote, batch_size(len(remote), self.used_workers))
        retried: set[RunTask] = set()
        while queue:
            broken: list[list[RunTask]] = []
            pool = ProcessPoolExecutor(max_workers=self.used_workers, mp_context=_mp_context(),
                                       initializer=pool_init,
                                       initargs=(dict(prior), os.environ.get(faults.ENV)))
            try:
                pending = {pool.submit(pool_batch, b, write_root, exported_at, full): b
                           for b in queue}
                queue = []
                while pending:
                    done, _ = wait(pending, return_when=FIRST_COMPLETED)
                    for fut in done:
                        batch = pending.pop(fut)
                        try:
                            results = fut.result()
                        except BrokenProcessPool:
                            broken.append(batch)
                            continue
                        yield results
            finally:
                pool.shutdown(wait=True, cancel_futures=True)
            # A worker died (OOM killer, a crash in a native library): retry each of the batches
            # it took down one run at a time in a fresh pool; a run that kills a worker alone is
            # recorded as failed.
            for task in (t for b in broken for t in b):
                if task in retried:
                    yield [_died(task)]
                else:
                    retried.add(task)
                    queue.append([task])


def _died(task: RunTask) -> RunResult:
    return RunResult(input=task.input, address=task.ref.address, outcome="failed", error={
        "stage": "load", "error_type": "WorkerDied",
        "message": "the worker process exporting this run died (killed, out of memory, or a "
                   "crash in a native library); try --workers 0 to see the error",
        "traceback": None})


def _batch_failed(batch: Sequence[RunTask], exc: BaseException) -> list[RunResult]:
    """Every run of a batch the cluster could not run (e.g. KilledWorker), as failures."""
    return [RunResult(input=t.input, address=t.ref.address, outcome="failed", error={
        "stage": "load", "error_type": type(exc).__name__,
        "message": " ".join(str(exc).split()) or type(exc).__name__, "traceback": None})
        for t in batch]


class DaskEngine:
    """Fans batches out to a Dask cluster (an existing scheduler, or a LocalCluster we start)."""

    name = "dask"

    def __init__(self, scheduler: Any = None, workers: int | None = None,
                 write_in: str = "client", connect_timeout: str = "15s",
                 processes: bool = True) -> None:
        if write_in not in ("client", "workers"):
            raise UsageError(f"--write-in must be client or workers, not {write_in!r}")
        self.scheduler = scheduler
        self.workers = workers
        self.write_in = write_in
        self.connect_timeout = connect_timeout
        self.processes = processes  # a LocalCluster of processes, or of threads in this one
        self.used_workers = 0
        self.client: Any = None
        self._owned: list[Any] = []

    def __enter__(self) -> DaskEngine:
        """Connect (or start a LocalCluster) before the dataset is touched."""
        self.client, self._owned = self._client()
        return self

    def __exit__(self, *exc: object) -> None:
        for thing in self._owned:
            thing.close()
        self.client, self._owned = None, []

    def _client(self) -> tuple[Any, list[Any]]:
        try:
            from dask.distributed import Client, LocalCluster
        except ModuleNotFoundError as exc:
            if (exc.name or "").split(".")[0] in ("dask", "distributed"):
                raise MissingDependencyError(
                    "--engine dask needs the 'dask[distributed]' package",
                    hint="pip install 'rundiff[fleet]'",
                ) from exc
            raise
        if self.scheduler is not None and not isinstance(self.scheduler, str):
            return self.scheduler, []  # a Client the caller owns
        if self.scheduler:
            try:
                client = Client(self.scheduler, timeout=self.connect_timeout, set_as_default=False)
            except (OSError, TimeoutError) as exc:
                raise InputError(
                    f"cannot reach the Dask scheduler at {self.scheduler} ({exc})",
                    hint="check --scheduler (e.g. tcp://HOST:8786) and that the scheduler runs",
                ) from None
            return client, [client]
        n = self.workers or default_workers()
        # no dashboard; the scheduler's bare HTTP endpoint on a free loopback port, not 8787
        # (taken by any other cluster on the machine, which prints a warning)
        quiet = {"dashboard_address": None,
                 "scheduler_kwargs": {"dashboard_address": "127.0.0.1:0"}}
        if self.processes:
            cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                   host="127.0.0.1", **quiet)
        else:  # one worker of n threads in this process, over loopback TCP (inproc:// would
            # look up this host's outward address)
            cluster = LocalCluster(n_workers=1, threads_per_worker=n, processes=False,
                                   protocol="tcp://", host="127.0.0.1", **quiet)
        client = Client(cluster, set_as_default=False)
        return client, [client, cluster]

    def run(self, tasks: Sequence[RunTask], prior: Mapping[str, Prior], write_root: str,
            exported_at: _dt.datetime, full: bool, cache: dict[str, Any]) -> Iterator[list[RunResult]]:
        inproc = [t for t in tasks if t.opens in LOCAL_SOURCES]
        remote = [t for t in tasks if t.opens not in LOCAL_SOURCES]
        for batch in make_batches(inproc, 1):  # objects in this process cannot travel
            yield export_batch(batch, prior, write_root, exported_at, full, cache=cache)
        if not remote:
            return
        from dask.distributed import as_completed

        client = self.client
        if client is None:
            raise RuntimeError("use the DaskEngine as a context manager (with engine: ...)")
        slots = sum((client.nthreads() or {}).values()) or 1
        self.used_workers = len(client.nthreads() or {})
        [prior_future] = client.scatter([dict(prior)], broadcast=True, hash=False)
        root = write_root if self.write_in == "workers" else None
        batches = {}
        for batch in make_batches(remote, batch_size(len(remote), slots)):
            fut = client.submit(export_batch, batch, prior_future, root, exported_at, full,
                                pure=False)
            batches[fut.key] = (fut, batch)
        try:
            for fut in as_completed([f for f, _ in batches.values()], loop=client.loop):
                _, batch = batches.pop(fut.key)
                try:
                    results = fut.result()
                except Exception as exc:  # KilledWorker, a lost worker: fail the batch, go on
                    results = _batch_failed(batch, exc)
                fut.release()
                yield results
        finally:
            client.cancel([f for f, _ in batches.values()] + [prior_future])


def make_engine(name: str, *, workers: int | None = None, scheduler: Any = None,
                write_in: str | None = None) -> LocalEngine | DaskEngine:
    """The engine named on the command line, with its options checked."""
    if name == "local":
        if scheduler is not None:
            raise UsageError("--scheduler needs --engine dask")
        if write_in not in (None, "workers"):
            raise UsageError("--write-in client needs --engine dask")
        return LocalEngine(workers)
    if name == "dask":
        return DaskEngine(scheduler, workers, write_in or "client")
    raise UsageError(f"unknown engine {name!r}", hint="choose one of: " + ", ".join(ENGINES))
