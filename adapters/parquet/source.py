"""ParquetSource: runs of a fleet dataset (`rundiff export`), read without the original trackers.

Address grammar (docs/fleet.md):

    parquet:DATASET                     every run
    parquet:DATASET#RUN_UID             one run (a unique prefix of 4+ characters works; so does an
                                        exact run name)
    parquet:DATASET#FIELD=GLOB[,GLOB…][&FIELD=GLOB…]
                                        runs whose FIELD matches any GLOB (fnmatch), every FIELD
                                        ANDed; FIELD is one of FILTER_FIELDS

Only the small runs table is read to list and describe runs (cached per process while the file is
unchanged). A run's history comes from the dataset's pack (segment files holding a row group per
run; read in batches for multi-run addresses and seed siblings) when the pack holds exactly that
run's points, else from the run's own partition file.
"""

from __future__ import annotations

import fnmatch
import itertools
import os
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from rundiff_core import (
    Address,
    AddressError,
    BaseSource,
    InputError,
    Run,
    RunEvent,
    RunNotFoundError,
    RunRef,
    empty_history,
    fleet_storage,
    history_frame,
)

if TYPE_CHECKING:  # pandas loads when a history is read: pushed-down commands need none
    import pandas as pd

FILTER_FIELDS = ("run_uid", "name", "source", "project", "status", "run_id", "input", "address",
                 "seed_group")
MIN_PREFIX = 4
PACK_BATCH = 32  # runs of a multi-run address read from the pack in one call (~5 MB)
_BASE_COLUMNS = [f.name for f in fleet_storage.RUNS_SCHEMA]

# runs-table path → ((mtime_ns, size), rows by uid, uids in order)
_CACHE: dict[str, tuple[tuple[int, int], dict[str, dict[str, Any]], list[str]]] = {}


def _runs_index(root: str) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """The runs table as {run_uid: row}, re-read only when the file changed."""
    path = fleet_storage.runs_file(root)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return {}, []
    stamp = (st.st_mtime_ns, st.st_size)
    hit = _CACHE.get(path)
    if hit is not None and hit[0] == stamp:
        return hit[1], hit[2]
    table = fleet_storage.read_table(path, columns=_BASE_COLUMNS)
    rows = _pylist(table)
    by_uid = {r["run_uid"]: r for r in rows}
    order = sorted(by_uid, key=lambda u: (str(by_uid[u].get("name") or ""), u))
    if len(_CACHE) > 16:
        _CACHE.clear()
    _CACHE[path] = (stamp, by_uid, order)
    return by_uid, order


def _pylist(table: pa.Table) -> list[dict[str, Any]]:
    """`table.to_pylist()`, with timestamp columns converted here: pyarrow imports pandas for
    them (~0.4 s), which a pushed-down many-run command otherwise never needs."""
    stamps = [f for f in table.schema if pa.types.is_timestamp(f.type)]
    if not stamps:
        return table.to_pylist()
    rows = table.drop_columns([f.name for f in stamps]).to_pylist()
    for f in stamps:
        for row, value in zip(rows, _datetimes(table.column(f.name)), strict=True):
            row[f.name] = value
    return rows


def _datetimes(col: Any) -> list[Any]:
    import datetime as dt
    from zoneinfo import ZoneInfo

    unit = {"s": 1_000_000, "ms": 1_000, "us": 1, "ns": None}[col.type.unit]
    try:
        tz = ZoneInfo(col.type.tz) if col.type.tz else None
    except (ValueError, KeyError):  # a fixed offset, not a zone name: leave it to pyarrow
        unit = None
    if unit is None:  # nanoseconds too: what pyarrow itself does (no lossy shortcut)
        return col.to_pylist()
    epoch = dt.datetime(1970, 1, 1, tzinfo=tz)
    return [None if v is None else epoch + dt.timedelta(microseconds=v * unit)
            for v in col.cast(pa.int64()).to_pylist()]


_MANIFESTS: dict[str, tuple[tuple[int, int], dict[str, Any]]] = {}


def _manifest(root: str, given: str) -> dict[str, Any]:
    """The checked manifest, re-read only when the file changed (one stat per open)."""
    try:
        st = os.stat(fleet_storage.manifest_path(root))
    except OSError:
        if not os.path.isdir(root):
            raise InputError(f"no such fleet dataset: {given}",
                             hint="create one with `rundiff export SRC… -o DATASET/`") from None
        return fleet_storage.read_manifest(root)  # raises the typed "not a dataset" error
    stamp = (st.st_mtime_ns, st.st_size)
    hit = _MANIFESTS.get(root)
    if hit is None or hit[0] != stamp:
        hit = (stamp, fleet_storage.read_manifest(root))
        _MANIFESTS[root] = hit
    return hit[1]


def split_locator(locator: str) -> tuple[str, str]:
    """`DATASET#FRAGMENT` → (dataset path, fragment); a folder whose name has '#' stays whole."""
    if "#" not in locator or os.path.isdir(locator):
        return locator, ""
    path, _, fragment = locator.rpartition("#")
    return path, fragment


def parse_filters(fragment: str) -> dict[str, list[str]]:
    """`field=glob,glob&field=glob` → {field: [globs]}; unknown fields are an AddressError."""
    out: dict[str, list[str]] = {}
    for part in fragment.split("&"):
        if not part:
            continue
        name, sep, value = part.partition("=")
        name = name.strip()
        if not sep or name not in FILTER_FIELDS:
            raise AddressError(
                f"bad parquet filter {part!r}",
                hint="use #RUN_UID or #FIELD=GLOB[&FIELD=GLOB], FIELD one of "
                + ", ".join(FILTER_FIELDS),
            )
        out.setdefault(name, []).extend(v for v in value.split(",") if v != "")
    return out


def _any_glob(globs: list[str]) -> re.Pattern[str]:
    """One compiled pattern matching any of `globs` (a fleet query can list hundreds); no globs
    match nothing."""
    return re.compile("|".join(f"(?:{fnmatch.translate(g)})" for g in globs) or "(?!)")


class ParquetSource(BaseSource):
    """A fleet dataset, or the runs of it an address fragment selects."""

    def __init__(self, address: Address) -> None:
        super().__init__(address)
        path, self.fragment = split_locator(address.locator or ".")
        self.root = os.path.abspath(os.path.expanduser(path or "."))
        self.manifest = _manifest(self.root, path)
        self.filters = parse_filters(self.fragment) if "=" in self.fragment else None
        self._snapshot: tuple[dict[str, dict[str, Any]], list[str]] | None = None
        self._listed: list[str] = []
        self._position: dict[str, int] = {}
        self._pack: Any = False  # not opened yet; then a Pack, or None when there is none
        self._batch: dict[str, Any] = {}  # tables read from the pack ahead of their run
        self._served: set[str] = set()  # runs whose history this source has returned

    def _index(self) -> tuple[dict[str, dict[str, Any]], list[str]]:
        """The runs table as this source first saw it: one consistent view per source (a re-export
        while it is open shows up in the next source opened)."""
        if self._snapshot is None:
            self._snapshot = _runs_index(self.root)
        return self._snapshot

    # -- listing --------------------------------------------------------------------------------
    def _selected(self) -> list[str]:
        by_uid, order = self._index()
        frag = self.fragment
        if not frag:
            return order
        if self.filters is not None:
            patterns = [(f, _any_glob(globs)) for f, globs in self.filters.items()]
            return [u for u in order if all(
                p.match(str(by_uid[u].get(f) or "")) for f, p in patterns)]
        if frag in by_uid:
            return [frag]
        matches = [u for u in order if len(frag) >= MIN_PREFIX and u.startswith(frag)]
        if not matches:
            matches = [u for u in order if by_uid[u].get("name") == frag]
        if len(matches) > 1 and all(m.startswith(frag) for m in matches):
            raise AddressError(f"run uid prefix {frag!r} is ambiguous in {self.root}: "
                               + ", ".join(matches[:5]), hint="give more characters of the uid")
        if not matches:
            raise RunNotFoundError(
                f"no run {frag!r} in fleet dataset {self.root}",
                hint=f"`rundiff ls parquet:{self.root}` lists its runs with their uids",
            )
        return matches

    def _address(self, uid: str) -> str:
        return f"parquet:{self.root}#{uid}"

    def list_runs(self) -> list[RunRef]:
        by_uid, _ = self._index()
        self._listed = self._selected()
        self._position = {u: i for i, u in enumerate(self._listed)}
        return [RunRef(run_id=u, address=self._address(u), name=by_uid[u].get("name"))
                for u in self._listed]

    def _row(self, ref: RunRef) -> dict[str, Any]:
        by_uid, _ = self._index()
        row = by_uid.get(ref.run_id)
        if row is None:
            raise RunNotFoundError(f"no run {ref.run_id!r} in fleet dataset {self.root}",
                                   hint=f"`rundiff ls parquet:{self.root}` lists its runs")
        return row

    # -- loading --------------------------------------------------------------------------------
    def load_run(self, ref: RunRef) -> Run:
        row = self._row(ref)
        uid = row["run_uid"]
        try:
            events = [
                RunEvent(kind=str(e.get("kind")), step=e.get("step"), time=e.get("time"),
                         payload=e.get("payload") or {})
                for e in fleet_storage.from_json(row.get("events_json"), []) or []
            ]
            config = fleet_storage.from_json(row.get("config_json"), {})
            summary = fleet_storage.from_json(row.get("summary_json"), {})
            env = fleet_storage.from_json(row.get("env_json"), {})
            origin_meta = fleet_storage.from_json(row.get("meta_json"), {})
        except ValueError as exc:
            raise InputError(f"run {uid} in {self.root} has unreadable JSON metadata ({exc})",
                             hint="re-export it: `rundiff export … --full`") from None
        exported = row.get("exported_at")
        run = Run(
            address=self._address(uid),
            name=row.get("name") or uid,
            run_id=row.get("run_id") or uid,  # the original tracker's id, as reports show it
            adapter="parquet",
            config=config if isinstance(config, dict) else {"value": config},
            summary=summary if isinstance(summary, dict) else {"value": summary},
            status=row.get("status") or "unknown",
            seed=row.get("seed"),
            git_sha=row.get("git_sha"),
            env=env if isinstance(env, dict) else {},
            events=events,
            fidelity=list(row.get("fidelity") or []),
            meta={
                "dataset": self.root,
                "run_uid": uid,
                "path": fleet_storage.points_file(self.root, row.get("source") or "", uid),
                "project": row.get("project"),
                "origin_address": row.get("address"),
                "origin_adapter": row.get("source"),
                "origin_run_id": row.get("run_id"),
                "origin_meta": origin_meta,
                "exported_at": exported.isoformat() if hasattr(exported, "isoformat") else exported,
                "n_points": row.get("n_points"),
            },
        )
        return self.bind(run, ref)

    def load_history(self, ref: RunRef, keys: Sequence[str] | None = None) -> pd.DataFrame:
        row = self._row(ref)
        if not row.get("n_points"):
            return empty_history()
        table = self._packed(row)
        if table is None:
            table = self._partition(row)
        frame = _frame(table)
        if len(frame) != row["n_points"]:
            frame.attrs["fidelity"] = [
                f"partition holds {len(frame)} points, the runs table says {row['n_points']}: "
                "the export that wrote it was interrupted; re-run `rundiff export`"
            ]
        if keys is not None:
            wanted = set(keys)
            notes = frame.attrs.get("fidelity")
            frame = frame[frame["key"].isin(wanted)].reset_index(drop=True)
            if notes:
                frame.attrs["fidelity"] = notes
        return frame

    def _packed(self, row: dict[str, Any]) -> Any:
        """The run's points from the dataset's pack when it holds exactly them (see fleet/pack.py),
        else None. A multi-run address reads the next PACK_BATCH listed runs in the same call."""
        uid = row["run_uid"]
        self._served.add(uid)
        table = self._batch.pop(uid, None)
        if table is not None:
            return table
        if self._pack is False:
            self._pack = fleet_storage.open_pack(self.root)
        pack = self._pack
        entry = pack.entry(uid, row.get("n_points"), row.get("content_hash")) if pack else None
        if entry is None:
            return None
        wanted = [(uid, entry)]
        pos = self._position.get(uid)
        if pos is not None and len(self._batch) < 4 * PACK_BATCH:  # bounded memory
            by_uid, _ = self._index()
            for nxt in itertools.islice(self._listed, pos + 1, None):
                if len(wanted) >= PACK_BATCH:
                    break
                if nxt in self._served or nxt in self._batch:
                    continue
                r = by_uid.get(nxt)
                e = pack.entry(nxt, r.get("n_points"), r.get("content_hash")) if r else None
                if e is not None:
                    wanted.append((nxt, e))
        try:
            tables = pack.read([e for _u, e in wanted])
        except (pa.ArrowException, OSError, ValueError):
            self._pack = None  # unreadable: every run of this source reads its partition
            return None
        self._batch.update((u, t) for (u, _e), t in zip(wanted[1:], tables[1:], strict=True))
        return tables[0]

    def _partition(self, row: dict[str, Any]) -> Any:
        path = self._points_path(row)
        try:
            return fleet_storage.read_table(path, read_dictionary=["key"])
        except FileNotFoundError:
            raise InputError(
                f"run {row['run_uid']} has {row['n_points']} points in the runs table but its "
                f"partition {path} is missing",
                hint="re-run `rundiff export` on this dataset to rewrite it",
            ) from None

    def _points_path(self, row: dict[str, Any]) -> str:
        return fleet_storage.points_file(self.root, row.get("source") or "", row["run_uid"])

    def collection(self, ref: RunRef) -> str | None:
        """None: the exported `seed_group` already is the run's arm (found by the same rule at
        export), so rundiff searches no further."""
        return None

    def fleet_pushdown(self) -> tuple[str, dict[str, dict[str, Any]]] | None:
        """(dataset root, runs-table rows by uid) for `rundiff_core.fleet.pushdown`, which answers
        many-run queries in DuckDB SQL; None when this dataset has no pack (every history is then
        loaded as usual) or duckdb (the `[fleet]` extra) is not installed."""
        from importlib.util import find_spec

        if find_spec("duckdb") is None:  # found, not imported: stored facts may need no query
            return None
        if fleet_storage.open_pack(self.root) is None:
            return None
        by_uid, _ = self._index()
        return self.root, by_uid

    def seed_siblings(self, ref: RunRef) -> list[RunRef]:
        """Runs of this dataset in the same exported `seed_group` (the arm found at export)."""
        row = self._row(ref)
        group = row.get("seed_group")
        if not group:
            return [ref]
        by_uid, order = self._index()
        groups = self.__dict__.get("_groups")
        if groups is None or groups[0] is not order:  # one pass per runs table, not one per run
            index: dict[str, list[str]] = {}
            for u in order:
                g = by_uid[u].get("seed_group")
                if g:
                    index.setdefault(g, []).append(u)
            groups = self.__dict__["_groups"] = (order, index)
        siblings = groups[1].get(group, [])
        for u in siblings:  # an arm's seeds are loaded together: let them share pack reads
            if u not in self._position:
                self._position[u] = len(self._listed)
                self._listed.append(u)
        refs = self.__dict__.setdefault("_sibling_refs", {})
        got = refs.get(group) if groups is self.__dict__.get("_refs_of") else None
        if got is None:  # each member of an arm asks: build its refs once
            if groups is not self.__dict__.get("_refs_of"):
                refs.clear()
                self.__dict__["_refs_of"] = groups
            got = refs[group] = tuple(
                RunRef(run_id=u, address=self._address(u), name=by_uid[u].get("name"))
                for u in siblings)
        return list(got)


_COLUMNS = ["key", "step", "value", "wall_time"]


def _frame(table: Any) -> pd.DataFrame:
    """A points table (key read as dictionary) → canonical history frame, without copies."""
    import pandas as pd
    key, step, value, wall = (table.columns if table.column_names == _COLUMNS
                              else [table.column(c) for c in _COLUMNS])
    key = key.chunk(0) if key.num_chunks == 1 else key.combine_chunks()
    keys: Any = None
    if hasattr(key, "indices") and key.null_count == 0:
        cats = key.dictionary.to_pylist()
        if len(set(cats)) == len(cats):
            codes = key.indices.to_numpy(zero_copy_only=False)
            # pandas keeps codes in the smallest int type: give it that directly (one copy)
            codes = codes.astype(np.int8 if len(cats) < 127 else np.int32, copy=False)
            keys = pd.Categorical.from_codes(codes, dtype=_key_dtype(tuple(cats)), validate=False)
    if keys is None:  # plain strings, or chunks whose dictionaries repeat values
        plain = key.cast("string") if hasattr(key, "indices") else key
        keys = np.asarray(plain.to_pylist(), dtype=object)
    return history_frame(_floats(step), keys, _floats(value), _floats(wall))


_DTYPES: dict[tuple[str, ...], pd.CategoricalDtype] = {}


def _key_dtype(cats: tuple[str, ...]) -> pd.CategoricalDtype:
    """One categorical dtype per key set: a fleet's runs mostly log the same metric names."""
    dtype = _DTYPES.get(cats)
    if dtype is None:
        import pandas as pd

        if len(_DTYPES) > 256:
            _DTYPES.clear()
        dtype = _DTYPES[cats] = pd.CategoricalDtype(pd.Index(list(cats), dtype=object))
    return dtype


def _floats(col: Any) -> np.ndarray:
    """A float64 column as numpy (nulls, which other writers may produce, become NaN)."""
    arr = col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()
    return arr.to_numpy(zero_copy_only=False)
