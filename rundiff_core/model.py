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
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

HISTORY_COLUMNS = ("step", "key", "value", "wall_time")

STATUSES = ("running", "finished", "crashed", "unknown")


def empty_history() -> pd.DataFrame:
    """A history frame with no rows and the canonical dtypes."""
    return pd.DataFrame(
        {
            "step": pd.Series([], dtype="float64"),
            "key": pd.Series([], dtype="object"),
            "value": pd.Series([], dtype="float64"),
            "wall_time": pd.Series([], dtype="float64"),
        }
    )


_HISTORY_INDEX = pd.Index(HISTORY_COLUMNS)
_PLACEMENTS = [np.array([i]) for i in range(len(HISTORY_COLUMNS))]
try:  # pandas' public low-level constructor (the one pyarrow's to_pandas uses), pandas ≥ 3
    from pandas.api.internals import create_dataframe_from_blocks as _from_blocks
except ImportError:  # pragma: no cover
    _from_blocks = None


def history_frame(step: np.ndarray, key: Any, value: np.ndarray, wall_time: np.ndarray) -> pd.DataFrame:
    """The canonical frame from column arrays. Ready arrays (float64 numpy, categorical key)
    become blocks as they are — zero-copy, 4× faster than the dict constructor on small runs,
    which matters when a query loads hundreds; anything else goes through the constructor."""
    floats = (step, value, wall_time)
    if _from_blocks is not None and isinstance(key, pd.Categorical) and all(
            isinstance(a, np.ndarray) and a.dtype == np.float64 and a.ndim == 1
            and len(a) == len(key) for a in floats):
        blocks = [(a.reshape(1, -1), _PLACEMENTS[i]) for i, a in ((0, step), (2, value),
                                                                     (3, wall_time))]
        blocks.append((key, _PLACEMENTS[1]))
        return _from_blocks(blocks, pd.RangeIndex(len(key)), _HISTORY_INDEX)
    return pd.DataFrame(dict(zip(HISTORY_COLUMNS, (step, key, value, wall_time), strict=True)),
                        copy=False)


def make_history(
    step: Sequence[float] | np.ndarray,
    key: Sequence[str] | np.ndarray | pd.Categorical,
    value: Sequence[float] | np.ndarray,
    wall_time: Sequence[float] | np.ndarray | None = None,
) -> pd.DataFrame:
    """Build a canonical history frame from column arrays (vectorised; no per-point objects)."""
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


def flatten(mapping: Mapping[str, Any], prefix: str = "", sep: str = ".") -> dict[str, Any]:
    """Flatten nested mappings to dotted keys; lists stay values."""
    out: dict[str, Any] = {}
    for k, v in mapping.items():
        name = f"{prefix}{sep}{k}" if prefix else str(k)
        if isinstance(v, Mapping) and v:
            out.update(flatten(v, name, sep))
        else:
            out[name] = v
    return out


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
    loader: Callable[[Sequence[str] | None], pd.DataFrame] | None = field(
        default=None, repr=False, compare=False
    )
    _cache: dict[tuple[str, ...] | None, pd.DataFrame] = field(
        default_factory=dict, repr=False, compare=False
    )
    _key_index: dict[str, np.ndarray] | None = field(default=None, repr=False, compare=False)
    _keys: list[str] | None = field(default=None, repr=False, compare=False)
    _columns: tuple[np.ndarray, ...] = field(default=(), repr=False, compare=False)
    _series: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = field(
        default_factory=dict, repr=False, compare=False
    )

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
        if None in self._cache:
            if wanted is None:
                return self._cache[None]
            if wanted not in self._cache:
                self._cache[wanted] = self._slice(wanted)
            return self._cache[wanted]
        if wanted not in self._cache:
            frame = empty_history() if self.loader is None else self.loader(wanted)
            for text in frame.attrs.pop("fidelity", None) or ():
                self.note(text)
            self._cache[wanted] = frame
        return self._cache[wanted]

    def _build_key_index(self, full: pd.DataFrame) -> None:
        key = full["key"].array
        if isinstance(key, pd.Categorical) and len(key) and key.codes.min() >= 0:
            codes, names = key.codes, key.categories.tolist()  # no re-hashing
        else:
            codes, uniques = pd.factorize(full["key"], sort=False)
            names = uniques.tolist() if hasattr(uniques, "tolist") else list(uniques)
        order = np.argsort(codes, kind="stable")
        bounds = np.searchsorted(codes[order], np.arange(len(names) + 1))
        self._key_index = {str(k): order[bounds[i]:bounds[i + 1]] for i, k in enumerate(names)
                           if bounds[i + 1] > bounds[i]}  # unused categories are no keys
        self._keys = sorted(self._key_index)
        self._columns = tuple(full[c].to_numpy() for c in ("step", "value", "wall_time"))

    def _slice(self, keys: tuple[str, ...]) -> pd.DataFrame:
        full = self._cache[None]
        if self._key_index is None:
            self._build_key_index(full)
        present = [k for k in keys if k in self._key_index]
        parts = [self._key_index[k] for k in present]
        if not parts:
            return empty_history()
        rows = parts[0] if len(parts) == 1 else np.concatenate(parts)
        key_codes = np.repeat(np.arange(len(parts), dtype=np.int32), [len(p) for p in parts])
        if len(parts) > 1:  # back to logged order
            order = np.argsort(rows, kind="stable")
            rows, key_codes = rows[order], key_codes[order]
        step, value, wall = self._columns
        return history_frame(step[rows], pd.Categorical.from_codes(key_codes, categories=present),
                             value[rows], wall[rows])

    def series(self, key: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(steps, values, wall_times) of one metric as numpy arrays, logged order, cached.

        The cheap path for engines that touch one metric of many runs: no DataFrame per call.
        """
        hit = self._series.get(key)
        if hit is None:
            if None not in self._cache:
                self.history()
            full = self._cache[None]
            if self._key_index is None:
                self._build_key_index(full)
            rows = self._key_index.get(key, np.array([], dtype=np.intp))
            step, value, wall = self._columns
            hit = (step[rows], value[rows], wall[rows])
            self._series[key] = hit
        return hit

    def metric_keys(self) -> list[str]:
        """Names of the logged metrics (loads the full history once)."""
        if self._keys is None:
            if None not in self._cache:
                self.history()
            self._build_key_index(self._cache[None])
        return list(self._keys)

    def note(self, text: str) -> None:
        """Record a fidelity note once (what was skipped, merged or could not be read)."""
        if text not in self.fidelity:
            self.fidelity.append(text)

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
