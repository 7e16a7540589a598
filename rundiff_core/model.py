"""The data model every adapter fills and every engine reads.

A `Run` is metadata plus a lazy history. History is always long form — one row per logged point,
columns `step` (float64, so decimal and non-integer steps survive), `key`, `value` (float64, NaN and
±inf kept as logged) and `wall_time` (float64 Unix seconds, NaN when the tracker kept none) — each
key's points in the order they were logged (the interleaving of different keys is not kept). Duplicate steps and restarts stay as rows; adapters describe them in
`Run.fidelity`. This one shape is what fleet export writes, so any run from any backend exports
to one table (`run_uid`, key, step, value, wall_time) plus a runs table built from `Run.to_record()`.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Union

import numpy as np

from .parsing.nested import flatten

if TYPE_CHECKING:
    import pandas as pd

HISTORY_COLUMNS = ("step", "key", "value", "wall_time")

STATUSES = ("running", "finished", "crashed", "unknown")


@dataclass
class HistoryColumns:
    """A history as column arrays: what a loader may return instead of a DataFrame.

    Same meaning as the long frame (`step`, `key`, `value`, `wall_time`), with the key as int32
    codes into `keys`. Engines that read one metric at a time (`Run.series`) and `rundiff ls` work
    from these arrays directly, so a command that never needs a DataFrame never imports pandas
    (~0.4 s of start-up here). `notes` are fidelity notes, like a frame's `attrs["fidelity"]`.
    """

    step: np.ndarray
    key_codes: np.ndarray
    keys: list[str]
    value: np.ndarray
    wall_time: np.ndarray
    notes: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.step)

    @classmethod
    def empty(cls, notes: Sequence[str] = ()) -> HistoryColumns:
        none = np.array([], dtype=np.float64)
        return cls(none, np.array([], dtype=np.int32), [], none, none, list(notes))

    @classmethod
    def from_frame(cls, frame: pd.DataFrame) -> HistoryColumns:
        """The columns of a canonical frame (categorical keys are taken as codes, no re-hashing)."""
        import pandas as pd

        key = frame["key"].array
        if isinstance(key, pd.Categorical) and (not len(key) or key.codes.min() >= 0):
            codes, names = key.codes, [str(k) for k in key.categories.tolist()]
        else:
            codes, uniques = pd.factorize(frame["key"], sort=False)
            names = [str(k) for k in (uniques.tolist() if hasattr(uniques, "tolist") else uniques)]
        notes = list(frame.attrs.get("fidelity", None) or ())
        as_float = lambda c: np.asarray(frame[c].to_numpy(), dtype=np.float64)  # noqa: E731
        return cls(as_float("step"), np.asarray(codes, dtype=np.int32), names, as_float("value"),
                   as_float("wall_time"), notes)

    def to_frame(self) -> pd.DataFrame:
        import pandas as pd

        codes = self.key_codes
        if len(codes) and codes.dtype != np.int32:
            codes = codes.astype(np.int32)
        return history_frame(self.step, pd.Categorical.from_codes(codes, categories=self.keys),
                             self.value, self.wall_time)

    def key_index(self) -> dict[str, np.ndarray]:
        """Row indices of each logged key, logged order kept (unused key names are dropped)."""
        codes = self.key_codes
        if not len(codes):
            return {}
        if len(self.keys) == 1:
            return {self.keys[0]: np.arange(len(codes))}
        order = np.argsort(codes, kind="stable")
        bounds = np.searchsorted(codes[order], np.arange(len(self.keys) + 1))
        return {str(k): order[bounds[i]:bounds[i + 1]] for i, k in enumerate(self.keys)
                if bounds[i + 1] > bounds[i]}

    def select(self, keys: Sequence[str], index: Mapping[str, np.ndarray] | None = None
               ) -> HistoryColumns:
        """The rows of `keys`, in logged order."""
        index = self.key_index() if index is None else index
        present = [k for k in keys if k in index]
        parts = [index[k] for k in present]
        if not parts:
            return HistoryColumns.empty()
        rows = parts[0] if len(parts) == 1 else np.concatenate(parts)
        codes = np.repeat(np.arange(len(parts), dtype=np.int32), [len(p) for p in parts])
        if len(parts) > 1:  # back to logged order
            order = np.argsort(rows, kind="stable")
            rows, codes = rows[order], codes[order]
        return HistoryColumns(self.step[rows], codes, present, self.value[rows],
                              self.wall_time[rows])


#: What `RunSource.load_history` returns: the canonical long frame, or the same as columns.
History = Union["pd.DataFrame", HistoryColumns]


def empty_history() -> pd.DataFrame:
    """A history frame with no rows and the canonical dtypes."""
    import pandas as pd

    return pd.DataFrame(
        {
            "step": pd.Series([], dtype="float64"),
            "key": pd.Series([], dtype="object"),
            "value": pd.Series([], dtype="float64"),
            "wall_time": pd.Series([], dtype="float64"),
        }
    )


_FRAME_PARTS: list[Any] = []


def _frame_parts() -> tuple[Any, Any, Any]:
    """(column index, block placements, pandas' block constructor or None), built on first use."""
    if not _FRAME_PARTS:
        import pandas as pd

        try:  # pandas' public low-level constructor (the one pyarrow's to_pandas uses), pandas ≥ 3
            from pandas.api.internals import create_dataframe_from_blocks as from_blocks
        except ImportError:  # pragma: no cover
            from_blocks = None
        _FRAME_PARTS.extend([pd.Index(HISTORY_COLUMNS),
                             [np.array([i]) for i in range(len(HISTORY_COLUMNS))], from_blocks])
    return _FRAME_PARTS[0], _FRAME_PARTS[1], _FRAME_PARTS[2]


def key_rows(frame: pd.DataFrame, wanted: Iterable[str]) -> dict[str, np.ndarray]:
    """Row positions of each wanted key in a long history frame (through the categorical codes
    when the adapter gave them); a key the frame lacks is left out when keys are categorical."""
    import pandas as pd

    if not len(frame):
        return {}
    col = frame["key"]
    if isinstance(col.dtype, pd.CategoricalDtype):
        cats = col.cat.categories
        codes = col.cat.codes.to_numpy()
        return {k: np.flatnonzero(codes == cats.get_loc(k)) for k in wanted if k in cats}
    keys = col.to_numpy()
    return {k: np.flatnonzero(keys == k) for k in wanted}


def history_frame(step: np.ndarray, key: Any, value: np.ndarray, wall_time: np.ndarray) -> pd.DataFrame:
    """The canonical frame from column arrays. Ready arrays (float64 numpy, categorical key)
    become blocks as they are — zero-copy, 4× faster than the dict constructor on small runs,
    which matters when a query loads hundreds; anything else goes through the constructor."""
    import pandas as pd

    index, placements, from_blocks = _frame_parts()
    floats = (step, value, wall_time)
    if from_blocks is not None and isinstance(key, pd.Categorical) and all(
            isinstance(a, np.ndarray) and a.dtype == np.float64 and a.ndim == 1
            and len(a) == len(key) for a in floats):
        blocks = [(a.reshape(1, -1), placements[i]) for i, a in ((0, step), (2, value),
                                                                    (3, wall_time))]
        blocks.append((key, placements[1]))
        return from_blocks(blocks, pd.RangeIndex(len(key)), index)
    return pd.DataFrame(dict(zip(HISTORY_COLUMNS, (step, key, value, wall_time), strict=True)),
                        copy=False)


def make_history(
    step: Sequence[float] | np.ndarray,
    key: Sequence[str] | np.ndarray | pd.Categorical,
    value: Sequence[float] | np.ndarray,
    wall_time: Sequence[float] | np.ndarray | None = None,
) -> pd.DataFrame:
    """Build a canonical history frame from column arrays (vectorised; no per-point objects)."""
    import pandas as pd

    step_arr = np.asarray(step, dtype="float64")
    n = len(step_arr)
    wt = np.full(n, np.nan) if wall_time is None else np.asarray(wall_time, dtype="float64")
    return history_frame(
        step_arr,
        key if isinstance(key, pd.Categorical) else np.asarray(key, dtype=object),
        np.asarray(value, dtype="float64"),
        wt,
    )


def filter_keys(history: pd.DataFrame, keys: Iterable[str] | None) -> pd.DataFrame:
    """Rows of `history` whose key is in `keys` (all rows when keys is None)."""
    if keys is None:
        return history
    wanted = list(keys)
    return history[history["key"].isin(wanted)].reset_index(drop=True)


@dataclass(frozen=True)
class RunEvent:
    """Something that happened to a run besides a metric: resume, rollback, kill, OOM, restart."""

    kind: str
    step: float | None = None
    time: float | None = None
    payload: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RunRef:
    """Enough to name a run inside a source before loading it."""

    run_id: str
    address: str
    name: str | None = None


@dataclass
class Run:
    """One run from any backend; `history()` loads points lazily and only for the keys asked."""

    address: str
    name: str
    run_id: str
    adapter: str
    config: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    status: str = "unknown"
    seed: int | None = None
    git_sha: str | None = None
    env: dict[str, Any] = field(default_factory=dict)
    events: list[RunEvent] = field(default_factory=list)
    fidelity: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    #: Where the run's seeds can be, recorded by `engines.arms.attach` when rundiff loads it from a
    #: source (adapters leave both alone): the address of its collection and the addresses of the
    #: seed siblings its source declares. None/() for a run built in memory.
    collection: str | None = field(default=None, repr=False, compare=False)
    declared_siblings: tuple[str, ...] = field(default=(), repr=False, compare=False)
    loader: Callable[[Sequence[str] | None], History] | None = field(
        default=None, repr=False, compare=False
    )
    # (sorted keys asked, or None for all) → what was loaded: a frame, or columns until a frame
    # is asked for
    _cache: dict[tuple[str, ...] | None, Any] = field(default_factory=dict, repr=False,
                                                      compare=False)
    _key_index: dict[str, np.ndarray] | None = field(default=None, repr=False, compare=False)
    _keys: list[str] | None = field(default=None, repr=False, compare=False)
    _full: HistoryColumns | None = field(default=None, repr=False, compare=False)
    _series: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = field(
        default_factory=dict, repr=False, compare=False
    )
    _last: dict[str, float] = field(default_factory=dict, repr=False, compare=False)

    @property
    def uid(self) -> str:
        """Stable id across sessions: a hash of the canonical address."""
        return hashlib.sha1(self.address.encode()).hexdigest()[:16]

    @property
    def flat_config(self) -> dict[str, Any]:
        return flatten(self.config)

    def history(self, keys: Iterable[str] | None = None) -> pd.DataFrame:
        """Every logged point for `keys` (all keys when None), never sampled.

        Once the full history is loaded, per-key slices come from an index built once, so engines
        that ask for one metric of many runs many times do not rescan the frame.
        """
        wanted = None if keys is None else tuple(sorted(set(keys)))
        got = self._load(wanted)
        if isinstance(got, HistoryColumns):
            got = got.to_frame()
            self._cache[wanted] = got
        return got

    def _load(self, wanted: tuple[str, ...] | None) -> Any:
        """What `history(wanted)` is built from — a frame or columns — loading once."""
        if wanted in self._cache:
            return self._cache[wanted]
        if None in self._cache:
            got = self._columns_full().select(wanted, self._index())
        else:
            got = HistoryColumns.empty() if self.loader is None else self.loader(wanted)
            notes = got.notes if isinstance(got, HistoryColumns) else \
                got.attrs.pop("fidelity", None)
            for text in notes or ():
                self.note(text)
            # which file each key came from, where a run is read from several (`local:` layouts)
            key_files = None if isinstance(got, HistoryColumns) else got.attrs.pop("key_files", None)
            if key_files:
                self.meta.setdefault("key_files", {}).update(key_files)
        self._cache[wanted] = got
        return got

    def _columns_full(self) -> HistoryColumns:
        """The full history as columns (loaded once; a frame from the loader is converted once)."""
        if self._full is None:
            got = self._load(None)
            self._full = got if isinstance(got, HistoryColumns) else HistoryColumns.from_frame(got)
        return self._full

    def _index(self) -> dict[str, np.ndarray]:
        if self._key_index is None:
            self._key_index = self._columns_full().key_index()
            self._keys = sorted(self._key_index)
        return self._key_index

    def series(self, key: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(steps, values, wall_times) of one metric as numpy arrays, logged order, cached.

        The cheap path for engines that touch one metric of many runs: no DataFrame per call.
        """
        hit = self._series.get(key)
        if hit is None:
            full = self._columns_full()
            rows = self._index().get(key, np.array([], dtype=np.intp))
            hit = (full.step[rows], full.value[rows], full.wall_time[rows])
            self._series[key] = hit
        return hit

    def metric_keys(self) -> list[str]:
        """Names of the logged metrics (loads the full history once)."""
        self._index()
        return list(self._keys or ())

    def last_step(self, key: str) -> float:
        """The largest finite-or-infinite logged step of `key` (NaN when it has none), cached:
        many-run engines ask it of every run for every metric, often more than once."""
        hit = self._last.get(key)
        if hit is None:
            steps = self.series(key)[0]
            logged = steps[~np.isnan(steps)]
            hit = self._last[key] = float(logged.max()) if len(logged) else float("nan")
        return hit

    def point_count(self, key: str) -> int:
        """How many points `key` logged (a fleet run answers from its stored facts)."""
        return len(self.series(key)[0])

    def tail_values(self, key: str, n: int = 8) -> np.ndarray | None:
        """The values of `key`'s last `n` points, or None when they cannot be had without reading
        the history (a fleet run without stored facts)."""
        return self.series(key)[1][-n:]

    def last_value(self, key: str) -> float:
        """The value logged at `key`'s last step (the last of duplicates); NaN when it has none."""
        steps, values, _ = self.series(key)
        last = self.last_step(key)
        if math.isnan(last):
            return math.nan
        hits = np.flatnonzero(steps == last)
        return float(values[hits[-1]])

    def nonfinite(self, key: str) -> tuple[int, float | None]:
        """(how many NaN/±inf values `key` logged, the step of the first in logged order)."""
        steps, values, _ = self.series(key)
        bad = ~np.isfinite(values)
        if not bad.any():
            return 0, None
        return int(bad.sum()), float(steps[bad][0])

    def wall_span(self) -> tuple[int, float, float]:
        """(finite wall times logged over every key, earliest, latest); NaNs when there are none."""
        wall = self._columns_full().wall_time
        wall = wall[np.isfinite(wall)]
        if not len(wall):
            return 0, float("nan"), float("nan")
        return len(wall), float(wall.min()), float(wall.max())

    def n_points(self) -> int:
        """How many points the full history holds (loads it once; no DataFrame needed)."""
        return len(self._columns_full())

    def loaded_points(self) -> int:
        """How many points this run holds in memory now (0 before its history is read): what a
        cache of loaded runs counts against its size cap, without reading anything."""
        if self._full is not None:
            return len(self._full)
        return max((len(got) for got in self._cache.values()), default=0)

    def release_history(self) -> None:
        """Forget the loaded history (read again on the next ask): a long-lived process that
        keeps the run's metadata, not its points."""
        self._cache.clear()
        self._series.clear()
        self._last.clear()
        self._full = None
        self._key_index = None
        self._keys = None

    def note(self, text: str) -> None:
        """Record a fidelity note once (what was skipped, merged or could not be read)."""
        if text not in self.fidelity:
            self.fidelity.append(text)

    def defer_summary(self, loader: Callable[[], dict[str, Any]]) -> None:
        """Compute `summary` on first read: folding it may cost as much as reading the history
        (wandb writes a summary record beside nearly every row), and `diff`/`ls` never read it."""
        self.__dict__["_summary_loader"] = loader

    @property
    def summary_deferred(self) -> bool:
        """True while the summary is still a pending fold: asking whether it holds a key costs the
        fold, so a command that only peeks (ls looking for agent outcomes) checks this first."""
        return "_summary_loader" in self.__dict__

    def map_summary(self, fn: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        """Replace the summary by `fn(summary)` — now, or when a deferred summary is computed."""
        pending = self.__dict__.pop("_summary_loader", None)
        if pending is None:
            self.summary = fn(self.summary)
        else:
            self.defer_summary(lambda: fn(pending()))

    def events_of(self, kind: str) -> list[RunEvent]:
        return [e for e in self.events if e.kind == kind]

    def to_record(self) -> dict[str, Any]:
        """The run as a plain mapping (no history): the row shape of a runs table."""
        return {
            "run_uid": self.uid,
            "address": self.address,
            "adapter": self.adapter,
            "run_id": self.run_id,
            "name": self.name,
            "status": self.status,
            "seed": self.seed,
            "git_sha": self.git_sha,
            "config": self.config,
            "summary": self.summary,
            "env": self.env,
            "events": [
                {"kind": e.kind, "step": e.step, "time": e.time, "payload": dict(e.payload)}
                for e in self.events
            ],
            "fidelity": list(self.fidelity),
            "meta": self.meta,
        }


def _get_summary(run: Run) -> dict[str, Any]:
    loader = run.__dict__.pop("_summary_loader", None)
    if loader is not None:
        run.__dict__["_summary"] = loader()
    return run.__dict__.setdefault("_summary", {})


def _set_summary(run: Run, value: dict[str, Any]) -> None:
    run.__dict__.pop("_summary_loader", None)
    run.__dict__["_summary"] = value


# A property set after the dataclass is built, so `summary` stays an ordinary field for __init__,
# fields() and to_record() while `defer_summary` can postpone it.
Run.summary = property(_get_summary, _set_summary, doc="Final values, redacted; may be computed on "  # type: ignore[assignment]
                       "first read (see defer_summary).")
