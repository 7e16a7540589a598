"""Fleet queries on Dask: `FleetFacts`'s per-key and values-at-step questions and its spike scan
(fleet/pushdown.py), and `watch`'s what-is-new query (fleet/pushdown_tail.py `_query_watch`),
answered by dask.dataframe instead of DuckDB, for fleets too large for one machine's cores.

The inputs are exactly DuckDB's: `FleetFacts._sources()` says which pack segment row groups and
which partition files hold each selected run (a stale entry is never read). Each Dask partition
is a batch of whole runs (row groups of one segment, or a batch of partition files) with its rows
in logged order, so every per-(run, key) answer is computed inside one partition — no shuffle —
and the answers come back in `FleetFacts`'s shapes. The semantics are the module docstring's of
fleet/pushdown.py: NULL is NaN, non-finite steps are dropped from slicing and NaN steps from the
last step, a duplicated step keeps its last logged value, the first bad step is the first logged
non-finite value's. The window scan DuckDB does first (`_query_near`) saves it reading columns; a
partition here reads its columns whole anyway, so `query_near` is the exact `query_at`.

The loss-series spike scan runs there too: each task reads a partition's loss-like series with
fleet/pushdown.py's own `_loss_of` and applies the same spike rule. With `--scheduler`, the
workers must read the dataset at the same path as the client (and have rundiff installed).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import InputError, MissingDependencyError, UsageError

PART_ROWS = 2_000_000  # rows per Dask partition (whole runs: a partition may hold more)
SPIKE_PART_ROWS = 500_000  # smaller for the spike scan: its per-run Python work balances better
# a partition's parts: ("segment", path, ((first row group, row groups, n_points), ...), uids)
# or ("files", ((path, n_points), ...), uids)
Part = tuple[Any, ...]
KEY_COLUMNS = ["run_uid", "key", "n", "last", "n_bad", "first_bad", "n_wall", "wall_min",
               "wall_max", "step_min"]
AT_COLUMNS = ["run_uid", "key", "n", "last", "lo", "value_lo", "hi", "value_hi"]
WATCH_COLUMNS = ["run_uid", "key", "n", "last", "wall", "value", "n_new", "value_new", "n_bad",
                 "first_bad"]


class DaskQueries:
    """A Dask client (an existing scheduler, or a LocalCluster of threads started here) that
    answers `FleetFacts`' queries; use it as a context manager (the cluster it starts is closed
    on exit)."""

    def __init__(self, scheduler: str | None = None, workers: int | None = None) -> None:
        if workers is not None and workers < 1:
            raise UsageError("--workers must be 1 or more")
        self.scheduler = scheduler
        self.workers = workers
        self._engine: Any = None
        self.client: Any = None

    def __enter__(self) -> DaskQueries:
        from .engines import DaskEngine

        try:
            import dask.dataframe  # noqa: F401
        except ModuleNotFoundError as exc:
            raise MissingDependencyError(
                "--engine dask needs the 'dask[dataframe,distributed]' packages",
                hint="pip install 'rundiff[fleet]'") from exc
        # threads in this process: the work is pyarrow reads and numpy reductions over whole
        # columns, and worker processes would cost seconds of start-up and a copy of every answer
        self._engine = DaskEngine(self.scheduler, self.workers, processes=False)
        self.client = self._engine.__enter__().client
        return self

    def __exit__(self, *exc: object) -> None:
        if self._engine is not None:
            self._engine.__exit__(*exc)
        self._engine = self.client = None

    # -- the queries FleetFacts dispatches here ------------------------------------------------
    def query_keys(self, facts: Any) -> dict[str, dict[str, tuple[Any, ...]]]:
        """`FleetFacts._query_keys`: {uid: {key: KeyFacts}}."""
        frame = self._compute(facts, ["key", "step", "value", "wall_time"], _key_facts, KEY_COLUMNS)
        out: dict[str, dict[str, tuple[Any, ...]]] = {}
        for uid, key, n, last, n_bad, first_bad, nw, wmin, wmax, smin in frame.itertuples(
                index=False, name=None):
            out.setdefault(uid, {})[key] = (int(n), float(last), int(n_bad), float(first_bad),
                                            int(nw), float(wmin), float(wmax), float(smin))
        return out

    def query_at(self, facts: Any, targets: Mapping[str, float]
                 ) -> dict[tuple[str, float], dict[str, tuple[Any, ...]]]:
        """`FleetFacts._query_at`: {(key, target): {uid: Candidates}} for runs with a finite step."""
        wanted = {str(k): float(t) for k, t in targets.items()}
        frame = self._compute(facts, ["key", "step", "value"], _candidates, AT_COLUMNS, wanted)
        out: dict[tuple[str, float], dict[str, tuple[Any, ...]]] = {
            (k, t): {} for k, t in targets.items()}
        for uid, key, n, last, lo, vlo, hi, vhi in frame.itertuples(index=False, name=None):
            out[(key, targets[key])][uid] = (int(n), float(last), float(lo), float(vlo),
                                              float(hi), float(vhi))
        return out

    query_near = query_at  # see the module docstring

    def query_watch(self, facts: Any, prev: Mapping[str, float | None]
                    ) -> dict[str, dict[str, tuple[Any, ...]]]:
        """fleet/pushdown_tail.py `_query_watch`: {uid: {key: (n, last step, newest finite wall,
        last value, new points, their last value, their NaN/inf count, their first bad step)}}
        (`prev[uid]`: the step the previous check saw; None or absent: every point is new)."""
        wanted = {str(u): (None if p is None else float(p)) for u, p in prev.items()}
        frame = self._compute(facts, ["key", "step", "value", "wall_time"], _watch_facts,
                              WATCH_COLUMNS, wanted)
        out: dict[str, dict[str, tuple[Any, ...]]] = {}
        for uid, key, n, last, wall, value, n_new, v_new, n_bad, first_bad in frame.itertuples(
                index=False, name=None):
            out.setdefault(uid, {})[key] = (int(n), float(last), float(wall), float(value),
                                            int(n_new), float(v_new), int(n_bad),
                                            float(first_bad))
        return out

    def query_spikes(self, facts: Any, rule: Any) -> dict[str, dict[str, list[Any]]]:
        """`FleetFacts.spikes`' scan: `rule` over every loss-like series, on the workers (a
        partition of runs a task; `rule` travels by reference, so it must be importable)."""
        if self.client is None:
            raise RuntimeError("use DaskQueries as a context manager (with DaskQueries(): ...)")
        parts = partitions(facts, SPIKE_PART_ROWS)
        out: dict[str, dict[str, list[Any]]] = {}
        futures = self.client.map(spikes_of, parts, rule=rule, pure=False)
        try:
            for got in self.client.gather(futures):
                out.update(got)
        except (ValueError, OSError) as exc:
            raise _unreadable(exc) from None
        return out

    def _compute(self, facts: Any, columns: list[str], per_part: Any, result_columns: list[str],
                 *extra: Any) -> Any:
        import dask.dataframe as dd
        import pandas as pd

        if self.client is None:
            raise RuntimeError("use DaskQueries as a context manager (with DaskQueries(): ...)")
        empty = pd.DataFrame({c: pd.Series(dtype=object if c in ("run_uid", "key") else
                                           np.float64) for c in result_columns})
        parts = partitions(facts)
        if not parts:
            return empty
        points = dd.from_map(read_part, parts, args=(columns,), meta=_points_meta(columns),
                             enforce_metadata=False, label="rundiff-fleet-points")
        answers = points.map_partitions(per_part, *extra, meta=empty, enforce_metadata=False)
        try:
            return self.client.compute(answers).result()
        except (ValueError, OSError) as exc:
            raise _unreadable(exc) from None


def _unreadable(exc: BaseException) -> InputError:
    """A file that disagrees with its index, went missing or was torn since it was listed."""
    return InputError(f"a fleet file could not be read as indexed ({type(exc).__name__}: {exc})",
                      hint="re-run `rundiff export` on this dataset")


def partitions(facts: Any, part_rows: int | None = None) -> list[Part]:
    """The Dask partitions over the rows `facts._sources()` selects: batches of whole runs of
    about PART_ROWS rows, one segment's row groups or partition files each."""
    limit = PART_ROWS if part_rows is None else part_rows
    by_segment, files = facts._sources()
    parts: list[Part] = []
    for seg, entries in by_segment.items():
        batch: list[tuple[int, int, int]] = []
        uids: list[str] = []
        rows = 0
        for uid, e in entries.items():
            batch.append((int(e[0]), int(e[1]), int(e[2])))
            uids.append(uid)
            rows += int(e[2])
            if rows >= limit:
                parts.append(("segment", seg.path, tuple(batch), tuple(uids)))
                batch, uids, rows = [], [], 0
        if batch:
            parts.append(("segment", seg.path, tuple(batch), tuple(uids)))
    batch_f: list[tuple[str, int]] = []
    uids = []
    rows = 0
    for path, uid in files:
        n = int(facts.rows[uid]["n_points"])
        batch_f.append((path, n))
        uids.append(uid)
        rows += n
        if rows >= limit:
            parts.append(("files", tuple(batch_f), tuple(uids)))
            batch_f, uids, rows = [], [], 0
    if batch_f:
        parts.append(("files", tuple(batch_f), tuple(uids)))
    return parts


def _points_meta(columns: Sequence[str]) -> Any:
    import pandas as pd

    meta = {"run_uid": pd.Series(dtype="category")}
    for c in columns:
        meta[c] = pd.Series(dtype="category" if c == "key" else np.float64)
    return pd.DataFrame(meta)


def _read(part: Part, cols: Sequence[str]) -> tuple[Any, tuple[str, ...], list[int]]:
    """(table of `cols`, uids, rows of each) of one partition, each run's rows in turn in logged
    order. A segment's rows are told apart by its index (the row groups of each entry), as the
    `parquet:` adapter reads them."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from . import layout

    if part[0] == "segment":
        _kind, path, entries, uids = part
        groups = [g for first, n, _p in entries for g in range(first, first + n)]
        reader = pq.ParquetFile(path, read_dictionary=["key"], pre_buffer=False)
        table = reader.read_row_groups(groups, columns=list(cols), use_threads=False)
        counts = [p for _f, _n, p in entries]
        if table.num_rows != sum(counts):
            raise ValueError(f"{path}: row groups hold {table.num_rows} rows, its index says "
                             f"{sum(counts)}")
        return table, uids, counts
    _kind, files, uids = part
    tables = []
    for path, n in files:
        t = layout.read_table(path, read_dictionary=["key"]).select(list(cols))
        if t.num_rows != n:
            raise ValueError(f"{path} holds {t.num_rows} rows, the runs table says {n}")
        tables.append(t)
    return pa.concat_tables(tables), uids, [n for _p, n in files]


def read_part(part: Part, wanted: Sequence[str]) -> Any:
    """One partition's points as a pandas frame (run_uid, *wanted); run on a worker, which opens
    the files itself."""
    import pandas as pd

    table, uids, counts = _read(part, [c for c in wanted if c != "run_uid"])
    frame = table.to_pandas(self_destruct=True)
    frame.insert(0, "run_uid", pd.Categorical.from_codes(
        np.repeat(np.arange(len(uids), dtype=np.int32), counts), categories=list(uids)))
    if "key" in frame and not isinstance(frame["key"].dtype, pd.CategoricalDtype):
        frame["key"] = frame["key"].astype("category")
    return frame


def spikes_of(part: Part, rule: Any) -> dict[str, dict[str, list[Any]]]:
    """{uid: {loss-like key: rule(steps, values)}} of one partition's runs: the series
    `FleetFacts.loss_series` streams (its own `_loss_of`), on a worker."""
    from .pushdown import _loss_of

    table, uids, counts = _read(part, ["key", "step", "value"])
    out: dict[str, dict[str, list[Any]]] = {}
    for uid, key, steps, values in _loss_of(uids, counts, table):
        out.setdefault(uid, {})[key] = rule(steps, values)
    return out


def _groups(frame: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(group of each row, run_uid and key of each group) for the (run, key) pairs of `frame`:
    dense codes from the categoricals' codes, in first-seen order."""
    import pandas as pd

    run = frame["run_uid"].cat
    key = frame["key"].cat
    pair = run.codes.to_numpy(np.int64) * max(1, len(key.categories)) + key.codes.to_numpy(
        np.int64)
    group, uniques = pd.factorize(pair)
    n_keys = max(1, len(key.categories))
    return (group, np.asarray(run.categories, dtype=object)[uniques // n_keys],
            np.asarray(key.categories, dtype=object)[uniques % n_keys])


def _reduce(group: np.ndarray, n: int, values: np.ndarray, how: str) -> np.ndarray:
    """Per group min or max of `values`, NaN ignored (NaN when a group has none), as SQL's
    min/max ignore NULL."""
    out = np.full(n, np.nan)
    (np.fmax if how == "max" else np.fmin).at(out, group, values)  # fmax(NaN, x) is x
    return out


def _last_row(group: np.ndarray, n: int, rows: np.ndarray) -> np.ndarray:
    """Per group the highest row index of `rows` (its last logged), -1 when none."""
    out = np.full(n, -1, dtype=np.int64)
    np.maximum.at(out, group[rows], rows)
    return out


def _first_row(group: np.ndarray, n: int, rows: np.ndarray) -> np.ndarray:
    """Per group the lowest row index of `rows` (its first logged), -1 when none."""
    out = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(out, group[rows], rows)
    out[out == np.iinfo(np.int64).max] = -1
    return out


def _pick(values: np.ndarray, rows: np.ndarray) -> np.ndarray:
    return np.where(rows >= 0, values[np.maximum(rows, 0)], np.nan)


def _key_facts(frame: Any) -> Any:
    """Per (run, key): rows, last non-NaN step, non-finite values and the first one's step,
    finite wall times and their span, the lowest non-NaN step (NaN when none)."""
    import pandas as pd

    if frame.empty:
        return pd.DataFrame({c: [] for c in KEY_COLUMNS})
    group, uids, keys = _groups(frame)
    n = len(uids)
    step = frame["step"].to_numpy(np.float64)
    value = frame["value"].to_numpy(np.float64)
    wall = frame["wall_time"].to_numpy(np.float64)
    bad = ~np.isfinite(value)
    good_wall = np.isfinite(wall)
    walls = np.where(good_wall, wall, np.nan)
    return pd.DataFrame({
        "run_uid": uids, "key": keys, "n": np.bincount(group, minlength=n),
        "last": _reduce(group, n, step, "max"),
        "n_bad": np.bincount(group, weights=bad, minlength=n).astype(np.int64),
        "first_bad": _pick(step, _first_row(group, n, np.flatnonzero(bad))),
        "n_wall": np.bincount(group, weights=good_wall, minlength=n).astype(np.int64),
        "wall_min": _reduce(group, n, walls, "min"), "wall_max": _reduce(group, n, walls, "max"),
        "step_min": _reduce(group, n, step, "min")})


def _candidates(frame: Any, targets: Mapping[str, float]) -> Any:
    """Per (run, key) of the targets' keys with a finite step: finite steps, the last one, the
    last step below the key's target and the first at or above it, each with the value logged
    last at that step."""
    import pandas as pd

    step = frame["step"].to_numpy(np.float64)
    keep = np.isfinite(step) & frame["key"].isin(list(targets)).to_numpy()
    if not keep.any():
        return pd.DataFrame({c: [] for c in AT_COLUMNS})
    sub = frame.loc[keep, ["run_uid", "key", "step", "value"]].reset_index(drop=True)
    group, uids, keys = _groups(sub)
    n = len(uids)
    s = sub["step"].to_numpy(np.float64)
    value = sub["value"].to_numpy(np.float64)
    t = np.array([targets[k] for k in keys], dtype=np.float64)[group]
    lo = _reduce(group, n, np.where(s < t, s, np.nan), "max")
    hi = _reduce(group, n, np.where(s >= t, s, np.nan), "min")
    at_lo = _last_row(group, n, np.flatnonzero(s == lo[group]))
    at_hi = _last_row(group, n, np.flatnonzero(s == hi[group]))
    return pd.DataFrame({
        "run_uid": uids, "key": keys, "n": np.bincount(group, minlength=n),
        "last": _reduce(group, n, s, "max"), "lo": lo, "value_lo": _pick(value, at_lo),
        "hi": hi, "value_hi": _pick(value, at_hi)})


def _watch_facts(frame: Any, prev: Mapping[str, float | None]) -> Any:
    """Per (run, key): rows, last non-NaN step, newest finite wall time, the last row's value;
    the new rows (step past the run's previous step and not NaN; every row when it has none),
    the last one's value, how many are NaN/±inf and the first of those's step — DuckDB's
    `_query_watch` exactly (NULL is NaN; comparisons with a NaN previous step are false)."""
    import pandas as pd

    if frame.empty:
        return pd.DataFrame({c: [] for c in WATCH_COLUMNS})
    group, uids, keys = _groups(frame)
    n = len(uids)
    step = frame["step"].to_numpy(np.float64)
    value = frame["value"].to_numpy(np.float64)
    wall = frame["wall_time"].to_numpy(np.float64)
    run = frame["run_uid"].cat
    before = np.array([np.nan if prev.get(u) is None else prev[u] for u in run.categories],
                      dtype=np.float64)
    fresh = np.array([prev.get(u) is None for u in run.categories], dtype=bool)
    codes = run.codes.to_numpy(np.int64)
    with np.errstate(invalid="ignore"):
        new = fresh[codes] | ((step > before[codes]) & ~np.isnan(step))
    bad = new & ~np.isfinite(value)
    every = np.arange(len(frame))
    return pd.DataFrame({
        "run_uid": uids, "key": keys, "n": np.bincount(group, minlength=n),
        "last": _reduce(group, n, step, "max"),
        "wall": _reduce(group, n, np.where(np.isfinite(wall), wall, np.nan), "max"),
        "value": _pick(value, _last_row(group, n, every)),
        "n_new": np.bincount(group, weights=new, minlength=n).astype(np.int64),
        "value_new": _pick(value, _last_row(group, n, np.flatnonzero(new))),
        "n_bad": np.bincount(group, weights=bad, minlength=n).astype(np.int64),
        "first_bad": _pick(step, _first_row(group, n, np.flatnonzero(bad)))})
