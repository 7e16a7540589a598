"""rundiff's test kit for adapter authors: `pytest_plugins = ["rundiff_core.testing"]`.

- `AdapterContract`: subclass it in your adapter's tests and provide a `written_run` fixture that
  writes a REAL run with the real client or format and returns a `WrittenRun`. The contract checks
  sniffing (its own run, and not other adapters' runs), listing, full histories (value by value,
  steps and times), config/summary round-trips, read-only access, truncated and corrupt input,
  unknown run ids and the arm hooks (`seed_siblings`, `collection`). One bar for every adapter. Guide: docs/plugins/testing.md.
- `LayoutContract`: the same bar for a folder layout of `local:` (rundiff_core.layouts); its
  `written_layout` fixture returns a `WrittenLayout`: a folder the framework wrote, and what must
  be read from it (counted independently of rundiff).
- `isolated_plugins` fixture and `registered_plugin(...)` context manager.
- `run_cli(argv)` (the `rundiff` command in-process), `sniff_path` / `collect_claims` (who claims
  a path) and `get_plugins()` (what loaded), so a plugin's tests need no deeper core import.
- `InMemorySource` / `memory_run(...)` to test engines and reporters without files, and
  `memory_source(runs)` to reach them by address (`memory:NAME`) through the normal resolver.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import re
import shutil
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pytest

from .address import Address
from .detect import collect_claims, sniff_path
from .errors import RundiffError, RunNotFoundError
from .model import Run, RunRef, empty_history, filter_keys, flatten, make_history
from .plugins import Plugins, get_plugins, set_plugins
from .registry import AdapterSpec, adapters_hook
from .source import BaseSource

__all__ = [
    "AdapterContract",
    "CorruptRun",
    "LayoutContract",
    "WrittenLayout",
    "InMemorySource",
    "WrittenRun",
    "assert_history_equal",
    "assert_same_report",
    "collect_claims",
    "get_plugins",
    "hash_tree",
    "isolated_plugins",
    "memory_run",
    "memory_source",
    "redacted",
    "registered_plugin",
    "run_cli",
    "sniff_path",
]


# -- read-only proof ----------------------------------------------------------------------------
def hash_tree(path: str | os.PathLike[str]) -> dict[str, str]:
    """sha256 of every file under `path` (or of the file itself), keyed by relative path."""
    path = os.fspath(path)
    out: dict[str, str] = {}
    files = [path] if os.path.isfile(path) else [
        os.path.join(d, f) for d, _dirs, fs in os.walk(path) for f in fs
    ]
    for f in sorted(files):
        with open(f, "rb") as fh:
            out[os.path.relpath(f, path) if f != path else os.path.basename(f)] = hashlib.sha256(
                fh.read()
            ).hexdigest()
    if os.path.isdir(path):
        for d, dirs, _fs in os.walk(path):
            for name in dirs:
                out.setdefault(os.path.relpath(os.path.join(d, name), path) + "/", "dir")
    return out


# -- expectations --------------------------------------------------------------------------------
def redacted(value: Any) -> Any:
    """`value` as rundiff lets it out (secret-named entries and embedded secrets replaced): what a
    contract fixture expects back for a config it wrote with secrets in it."""
    from .redact import redact

    return redact(value)


# -- the command line ---------------------------------------------------------------------------
def run_cli(argv: Sequence[str]) -> int:
    """Run `rundiff ARGV…` in this process (output to sys.stdout/stderr, e.g. pytest's capsys);
    returns the exit code."""
    from .cli import main

    return main(list(argv))


# -- plugins ------------------------------------------------------------------------------------
@pytest.fixture
def isolated_plugins() -> Iterator[Plugins]:
    """A fresh plugin set (built-ins + installed entry points) for one test, restored afterwards."""
    fresh = Plugins()
    previous = set_plugins(fresh)
    try:
        yield fresh
    finally:
        set_plugins(previous)


@contextlib.contextmanager
def registered_plugin(plugin: object, name: str, plugins: Plugins | None = None) -> Iterator[Plugins]:
    """Register `plugin` for the duration of a `with` block; raises if it was rejected."""
    plugins = plugins or get_plugins()
    before = len(plugins.errors)
    if not plugins.add(plugin, name=name, package=name):
        raise AssertionError(plugins.errors[before:])
    try:
        yield plugins
    finally:
        plugins.remove(name)


# -- in-memory runs ------------------------------------------------------------------------------
def memory_run(
    name: str,
    series: Mapping[str, tuple[Sequence[float], Sequence[float]]],
    *,
    config: Mapping[str, Any] | None = None,
    summary: Mapping[str, Any] | None = None,
    status: str = "finished",
    seed: int | None = None,
    events: Sequence[Any] = (),
    address: str | None = None,
    env: Mapping[str, Any] | None = None,
) -> Run:
    """A Run backed by arrays: `series` maps key → (steps, values)."""
    parts = [make_history(s, [k] * len(s), v) for k, (s, v) in series.items()]
    frame = pd.concat(parts, ignore_index=True) if parts else empty_history()
    return Run(
        address=address or f"memory:{name}",
        name=name,
        run_id=name,
        adapter="memory",
        config=dict(config or {}),
        summary=dict(summary or {}),
        status=status,
        seed=seed,
        env=dict(env or {}),
        events=list(events),
        loader=lambda keys: filter_keys(frame, keys),
    )


class InMemorySource(BaseSource):
    """A RunSource over Runs held in memory (address `memory:NAME`)."""

    def __init__(self, runs: Sequence[Run], address: Address | None = None) -> None:
        super().__init__(address or Address("memory:", "memory", ""))
        self.runs = {r.run_id: r for r in runs}

    def list_runs(self) -> list[RunRef]:
        return [RunRef(r.run_id, r.address, r.name) for r in self.runs.values()]

    def load_run(self, ref: RunRef) -> Run:
        if ref.run_id not in self.runs:
            raise RunNotFoundError(f"no run {ref.run_id!r} in memory source")
        return self.runs[ref.run_id]

    def load_history(self, ref: RunRef, keys: Sequence[str] | None = None) -> pd.DataFrame:
        return self.load_run(ref).history(keys)


_PUBLISHED: dict[str, list[Run]] = {}


class PublishedMemorySource(InMemorySource):
    """The `memory:` adapter's source: the runs `memory_source` published under a name."""

    def __init__(self, address: Address) -> None:
        if address.locator not in _PUBLISHED:
            raise RunNotFoundError(
                f"no in-memory runs published as {address.raw!r}",
                hint=f"published names: {', '.join(sorted(_PUBLISHED)) or '(none)'}",
            )
        super().__init__(_PUBLISHED[address.locator], address)


class _MemoryPlugin:
    """The `memory:` adapter, declared as any plugin declares its adapters (`adapters_hook`)."""

    rundiff_register_adapters = staticmethod(adapters_hook(AdapterSpec(
        name="memory", schemes=("memory",), priority=1000,
        source="rundiff_core.testing:PublishedMemorySource",
        summary="runs held in memory by rundiff_core.testing",
    )))


@contextlib.contextmanager
def memory_source(
    runs: Sequence[Run], name: str = "runs", plugins: Plugins | None = None
) -> Iterator[str]:
    """Publish `runs` as the address `memory:NAME` for one `with` block; yields the address.

    Engines and CLI commands that take addresses then read them like any other source.
    """
    plugins = plugins or get_plugins()
    added = plugins.registry.by_scheme("memory") is None
    if added and not plugins.add(_MemoryPlugin(), name="rundiff-testing-memory", package="rundiff"):
        raise AssertionError(plugins.errors[-1])
    _PUBLISHED[name] = list(runs)
    try:
        yield f"memory:{name}"
    finally:
        _PUBLISHED.pop(name, None)
        if added:
            plugins.remove("rundiff-testing-memory")


# -- comparing histories ------------------------------------------------------------------------
def assert_history_equal(
    actual: pd.DataFrame, expected: pd.DataFrame, *, check_wall_time: bool = True,
    rtol: float = 0.0, atol: float = 0.0, ordered: bool = False,
) -> None:
    """Same points, value by value (NaN == NaN, ±inf exact). Unordered unless `ordered`."""
    cols = ["key", "step", "value"] + (["wall_time"] if check_wall_time else [])

    def norm(df: pd.DataFrame) -> pd.DataFrame:
        d = df[cols].copy()
        d["key"] = d["key"].astype(str)
        if not ordered:
            d = d.sort_values(["key", "step", "value"] + (["wall_time"] if check_wall_time else []),
                              kind="stable", na_position="last")
        return d.reset_index(drop=True)

    a, e = norm(actual), norm(expected)
    assert len(a) == len(e), f"point count differs: got {len(a)}, expected {len(e)}"
    assert (a["key"].to_numpy() == e["key"].to_numpy()).all(), "keys differ"
    for col in cols[1:]:
        x, y = a[col].to_numpy(dtype="float64"), e[col].to_numpy(dtype="float64")
        same = np.isclose(x, y, rtol=rtol, atol=atol, equal_nan=True) | (x == y)
        if not same.all():
            i = int(np.flatnonzero(~same)[0])
            raise AssertionError(f"{col} differs at row {i}: got {x[i]!r}, expected {y[i]!r}\n{a.iloc[i]}")


# -- the contract ---------------------------------------------------------------------------------
@dataclass
class WrittenRun:
    """What a contract fixture wrote: where it is, and what a reader must get back."""

    path: str  # the file or folder holding the run (hashed for the read-only check)
    address: str  # what to pass to rundiff (scheme:locator or a bare path to sniff)
    history: pd.DataFrame  # every point that was written (canonical columns)
    config: Mapping[str, Any] = field(default_factory=dict)
    summary: Mapping[str, Any] = field(default_factory=dict)
    run_id: str | None = None
    sniff_path: str | None = None  # a bare path the adapter must claim (default: `path`)
    check_wall_time: bool = True
    rtol: float = 0.0


@dataclass
class CorruptRun:
    """What a `corrupt_run` fixture damaged: the address to read and the file it broke."""

    address: str
    damaged: str  # the damaged file's name (its basename is what a note must name)
    expect: tuple[str, ...] = ()  # phrases the notes must hold: what the damage cost, e.g. a count


# A note about damage says what was left out: "3 corrupt line(s) skipped", "record dropped", …
_SKIP_WORDS = re.compile(r"skip|dropp|ignor|not loaded|unreadable|lost|discard|cut|truncat|torn",
                         re.I)


def _locator_files(address: str) -> set[str]:
    """Basenames of the files under an address's path (`scheme:PATH#frag` or a bare PATH)."""
    path = address.split("#", 1)[0]
    if not os.path.exists(path) and ":" in path:
        path = path.split(":", 1)[1]
    if os.path.isfile(path):
        return {os.path.basename(path)}
    return {f for _d, _dirs, fs in os.walk(path) for f in fs} if os.path.isdir(path) else set()


def _points_by_key(frame: pd.DataFrame) -> dict[str, list[tuple[float, float]]]:
    """Per key, the (step, value) points in the order the adapter returned them."""
    out: dict[str, list[tuple[float, float]]] = {}
    keys = frame["key"].astype(str).to_numpy()
    for k, s, v in zip(keys, frame["step"].to_numpy("float64"), frame["value"].to_numpy("float64"),
                       strict=True):
        out.setdefault(k, []).append((float(s), float(v)))
    return out


def _same_point(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return all(x == y or (math.isnan(x) and math.isnan(y)) for x, y in zip(a, b, strict=True))


class AdapterContract:
    """Subclass with `adapter = "name"` and fixtures `written_run` (and optionally `corrupt_run`).

    `corrupt_run` returns a `CorruptRun` (or just an address) whose reading must give a typed
    RundiffError or a fidelity note about the damage — naming the damaged file and saying what was
    skipped — never an unhandled exception.
    """

    adapter: str = ""

    # helpers
    def _source(self, raw: str):
        from .resolve import open_source

        return open_source(raw)

    def _spec(self):
        spec = get_plugins().registry.by_name(self.adapter)
        assert spec is not None, f"adapter {self.adapter!r} is not registered"
        return spec

    def _only_run(self, written: WrittenRun) -> Run:
        src = self._source(written.address)
        refs = src.list_runs()
        if written.run_id is not None:
            refs = [r for r in refs if r.run_id == written.run_id] or refs
        assert refs, "the adapter listed no runs"
        return src.load_run(refs[0])

    # the contract
    def test_sniffs_its_own_run(self, written_run: WrittenRun) -> None:
        from .detect import sniff_path

        winner = sniff_path(written_run.sniff_path or written_run.path)
        assert winner.spec.name == self.adapter, f"{winner.spec.name} won the sniff: {winner.claim.reason}"

    def test_lists_the_run(self, written_run: WrittenRun) -> None:
        refs = self._source(written_run.address).list_runs()
        assert refs, "no runs listed"
        if written_run.run_id is not None:
            assert written_run.run_id in {r.run_id for r in refs}

    def test_history_has_every_point(self, written_run: WrittenRun) -> None:
        run = self._only_run(written_run)
        assert_history_equal(run.history(), written_run.history,
                             check_wall_time=written_run.check_wall_time, rtol=written_run.rtol)

    def test_history_keys_subset(self, written_run: WrittenRun) -> None:
        run = self._only_run(written_run)
        keys = sorted(written_run.history["key"].astype(str).unique())
        if not keys:
            pytest.skip("run has no metrics")
        got = run.history([keys[0]])
        assert set(got["key"].astype(str)) == {keys[0]}
        assert len(got) == int((written_run.history["key"].astype(str) == keys[0]).sum())

    def test_config_and_summary_round_trip(self, written_run: WrittenRun) -> None:
        run = self._only_run(written_run)
        flat = run.flat_config
        for key, value in flatten(dict(written_run.config)).items():
            assert key in flat, f"config key {key} missing (have {sorted(flat)[:20]})"
            assert _same(flat[key], value), f"config {key}: {flat[key]!r} != {value!r}"
        for key, value in written_run.summary.items():
            assert key in run.summary, f"summary key {key} missing"
            assert _same(run.summary[key], value), f"summary {key}: {run.summary[key]!r} != {value!r}"

    def test_arm_hooks_are_consistent(self, written_run: WrittenRun) -> None:
        """`seed_siblings(ref)` includes `ref`; `collection(ref)` is None or an address whose
        listing holds the run and names the same collection for it (docs/diff.md#arms)."""
        from .engines.arms import collection_of, declared_siblings

        src = self._source(written_run.address)
        refs = src.list_runs()
        if written_run.run_id is not None:
            refs = [r for r in refs if r.run_id == written_run.run_id] or refs
        ref = refs[0]
        assert ref.address in {r.address for r in declared_siblings(src, ref)}, \
            "seed_siblings(ref) must include ref"
        coll = collection_of(src, ref)
        if coll is None:
            return
        other = self._source(coll)
        again = [r for r in other.list_runs() if r.address == ref.address]
        assert again, f"collection {coll} does not list {ref.address}"
        assert collection_of(other, again[0]) == coll, "a run must name one collection"

    def test_read_only(self, written_run: WrittenRun) -> None:
        before = hash_tree(written_run.path)
        run = self._only_run(written_run)
        run.history()
        _ = run.metric_keys()
        assert hash_tree(written_run.path) == before, "the adapter changed its input tree"

    def test_unknown_run_id_is_a_clear_error(self, written_run: WrittenRun) -> None:
        src = self._source(written_run.address)
        ref = src.list_runs()[0]
        bogus = RunRef("no-such-run-id", ref.address + "-no-such-run", "no-such-run")
        with pytest.raises(RundiffError):
            src.load_run(bogus).history()

    @pytest.fixture
    def foreign_paths(self, tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, str | None]]:
        """Paths no adapter but their owner may win: (path, owning adapter or None).

        To add runs of formats close to yours, override `extra_foreign_paths` instead.
        """
        from .demo import write_journal_run

        root = tmp_path_factory.mktemp("foreign")
        (root / "empty").mkdir()
        (root / "notes.txt").write_text("not a run\n")
        (root / "table.csv").write_text("name,colour\napple,red\n")
        journal = write_journal_run(str(root / "journal-run"), config={"lr": 0.1},
                                    rows=[{"step": 0, "loss": 1.0}, {"step": 1, "loss": 0.5}])
        return [(str(root / "empty"), None), (str(root / "notes.txt"), None),
                (str(root / "table.csv"), None), (journal, "journal")]

    @pytest.fixture
    def extra_foreign_paths(self) -> list[tuple[str, str | None]]:
        """Override: more (path, owner) pairs your adapter must not win."""
        return []

    def test_does_not_claim_foreign_runs(
        self,
        foreign_paths: list[tuple[str, str | None]],
        extra_foreign_paths: list[tuple[str, str | None]],
    ) -> None:
        from .detect import collect_claims

        for path, owner in [*foreign_paths, *extra_foreign_paths]:
            if owner == self.adapter:
                continue
            claims = collect_claims(path)
            mine = [c.claim.reason for c in claims if c.spec.name == self.adapter]
            if owner is None:
                assert not mine, f"{self.adapter} claims {path}, which is no run: {mine}"
            else:
                assert claims and claims[0].spec.name != self.adapter, (
                    f"{self.adapter} wins {path}, a {owner} run: {mine}"
                )

    def test_truncated_copy_is_typed_or_read(self, written_run: WrittenRun, tmp_path) -> None:
        """Every file of a copy cut to half its size: a typed error, or a read whose points are a
        prefix of the full run's (per key, in the adapter's order) — never a traceback, never a
        point that was not written (a number cut short, a record half read)."""
        if written_run.path not in written_run.address:
            pytest.skip("the run's address does not contain its path; cannot point at a copy")
        copy = os.path.join(str(tmp_path), "truncated-copy", os.path.basename(written_run.path))
        if os.path.isdir(written_run.path):
            shutil.copytree(written_run.path, copy)
            files = [os.path.join(d, f) for d, _dirs, fs in os.walk(copy) for f in fs]
        else:
            os.makedirs(os.path.dirname(copy))
            shutil.copy2(written_run.path, copy)
            files = [copy]
        for f in files:
            size = os.path.getsize(f)
            if size > 1:
                with open(f, "r+b") as fh:
                    fh.truncate(size // 2)
        full = _points_by_key(self._only_run(written_run).history())
        try:
            src = self._source(written_run.address.replace(written_run.path, copy))
            read = []
            for ref in src.list_runs():
                run = src.load_run(ref)
                read.append((ref, run.history()))
                _ = run.metric_keys()
        except RundiffError:
            return
        if written_run.run_id is not None:
            read = [(ref, h) for ref, h in read if ref.run_id == written_run.run_id] or read
        for _ref, history in read[:1]:
            for key, points in _points_by_key(history).items():
                assert key in full, f"the truncated copy has key {key!r}, which was never written"
                want = full[key][: len(points)]
                assert len(points) <= len(full[key]) and all(
                    _same_point(p, q) for p, q in zip(points, want, strict=True)
                ), (f"{key}: the truncated copy's points are not a prefix of the full run's: "
                    f"first difference at {next((i for i, (p, q) in enumerate(zip(points, want, strict=False)) if not _same_point(p, q)), len(want))}: "
                    f"{points[:3]}… vs {want[:3]}…")

    @pytest.fixture
    def corrupt_run(self) -> CorruptRun | str:
        """Override: write a truncated/corrupt input; return a CorruptRun (or its address)."""
        pytest.skip("this adapter's tests provide no corrupt_run fixture")

    def test_corrupt_input_is_typed_or_counted(self, corrupt_run: CorruptRun | str) -> None:
        """A typed error, or a note about the damage: it names the damaged file (any file of the
        run when the fixture gives only an address) and says what was skipped."""
        address = corrupt_run.address if isinstance(corrupt_run, CorruptRun) else corrupt_run
        runs: list[Run] = []
        try:
            src = self._source(address)
            runs = [src.load_run(r) for r in src.list_runs()]
            for run in runs:
                run.history()
        except RundiffError as exc:
            assert str(exc).strip(), "the typed error has no message"
            return
        assert runs, "corrupt input produced neither an error nor a run"
        notes = [n for run in runs for n in run.fidelity]
        assert notes, "corrupt input was read without a fidelity note"
        names = ({os.path.basename(corrupt_run.damaged)} if isinstance(corrupt_run, CorruptRun)
                 else _locator_files(address))
        about = [n for n in notes if any(name in n for name in names) and _SKIP_WORDS.search(n)]
        assert about, (f"no fidelity note names the damaged file ({', '.join(sorted(names)[:5])}) "
                       f"and says what was skipped; notes: {notes}")
        for phrase in corrupt_run.expect if isinstance(corrupt_run, CorruptRun) else ():
            assert any(phrase in n for n in about), f"no note about the damage says {phrase!r}: {about}"


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, int | float) and isinstance(b, int | float) and not isinstance(a, bool):
        return math.isclose(float(a), float(b), rel_tol=1e-9)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=False))
    return a == b or str(a) == str(b)



def assert_same_report(a: Any, b: Any, *, rel_tol: float = 1e-9, abs_tol: float = 1e-12,
                       where: str = "$") -> None:
    """Two JSON reports are the same report: equal keys, lists, strings and flags, numbers equal
    within `rel_tol`/`abs_tol`. Two processes (or BLAS kernels) may round a least-squares fit
    differently in its last bits; a report compared bit for bit across processes fails on that.
    The first difference is named by its JSON path."""
    if isinstance(a, dict) and isinstance(b, dict):
        assert a.keys() == b.keys(), f"{where}: keys differ: {sorted(set(a) ^ set(b))}"
        for k in a:
            assert_same_report(a[k], b[k], rel_tol=rel_tol, abs_tol=abs_tol, where=f"{where}.{k}")
    elif isinstance(a, list | tuple) and isinstance(b, list | tuple):
        assert len(a) == len(b), f"{where}: {len(a)} items against {len(b)}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same_report(x, y, rel_tol=rel_tol, abs_tol=abs_tol, where=f"{where}[{i}]")
    elif (isinstance(a, int | float) and isinstance(b, int | float) and
          not isinstance(a, bool) and not isinstance(b, bool)):
        same = (math.isnan(a) and math.isnan(b)) if (math.isnan(a) or math.isnan(b)) else \
            math.isclose(a, b, rel_tol=rel_tol, abs_tol=abs_tol)
        assert same, f"{where}: {a!r} != {b!r}"
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


# -- layouts ------------------------------------------------------------------------------------
@dataclass
class WrittenLayout:
    """A folder a framework wrote and what `local:` must read from it: the layout that claims it,
    how many runs it holds, and per run (by its path relative to `path`, "." for the folder
    itself) points per key, last values, config entries (dotted keys) and declared goals. The
    figures must come from the files independently of rundiff."""

    path: str
    layout: str
    runs: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    n_runs: int | None = None  # default: len(runs)


class LayoutContract:
    """Subclass with `layout = "name"` and a `written_layout` fixture returning a WrittenLayout."""

    layout = ""

    def _runs(self, w: WrittenLayout) -> dict[str, Run]:
        from .resolve import open_source

        source = open_source(f"local:{w.path}")
        out = {}
        for ref in source.list_runs():
            run = source.load_run(ref)
            rel = os.path.relpath(run.meta["path"].split("#", 1)[0], w.path)
            out[rel] = run
        return out

    def test_layout_is_registered(self, written_layout: WrittenLayout) -> None:
        from .plugins import layouts_in_order

        assert self.layout and layouts_in_order().get(self.layout) is not None, self.layout

    def test_claims_its_folder(self, written_layout: WrittenLayout) -> None:
        runs = self._runs(written_layout)
        want = written_layout.n_runs if written_layout.n_runs is not None else len(written_layout.runs)
        assert len(runs) == want, sorted(runs)
        claimed = {r.meta["layout"] for r in runs.values()}
        assert self.layout in claimed, claimed
        for rel in written_layout.runs:
            assert rel in runs and runs[rel].meta["layout"] == self.layout, (rel, sorted(runs))

    def test_detection_names_the_layout(self, written_layout: WrittenLayout) -> None:
        claims = collect_claims(written_layout.path)
        local = [c.claim for c in claims if c.spec.name == "local"]
        assert local and self.layout in local[0].reason, claims

    def test_every_point_and_value(self, written_layout: WrittenLayout) -> None:
        runs = self._runs(written_layout)
        for rel, want in written_layout.runs.items():
            run = runs[rel]
            for key, n in (want.get("points") or {}).items():
                assert key in run.metric_keys(), (rel, key, run.metric_keys()[:20])
                assert run.point_count(key) == n, (rel, key, run.point_count(key), n)
            for key, v in (want.get("last") or {}).items():
                got = run.last_value(key)
                assert got == v or (math.isnan(got) and math.isnan(v)) or math.isclose(
                    got, v, rel_tol=1e-6), (rel, key, got, v)
            flat = run.flat_config
            for key, v in (want.get("config") or {}).items():
                assert flat.get(key) == v, (rel, key, flat.get(key), v)
            goals = run.meta.get("goals") or {}
            for key, g in (want.get("goals") or {}).items():
                assert goals.get(key, {}).get("goal") == g, (rel, key, goals.get(key))

    def test_says_which_file_each_key_came_from(self, written_layout: WrittenLayout) -> None:
        for run in self._runs(written_layout).values():
            if run.metric_keys():
                assert any(n.startswith("layout: ") for n in run.fidelity), run.fidelity
                files = run.meta.get("key_files")
                if files:
                    assert set(files) <= set(run.metric_keys()) | set(files), files

    def test_read_only(self, written_layout: WrittenLayout) -> None:
        before = hash_tree(written_layout.path)
        for run in self._runs(written_layout).values():
            run.history()
        assert hash_tree(written_layout.path) == before

    def test_does_not_claim_an_empty_folder(self, tmp_path) -> None:
        from .layouts import LayoutFolder
        from .plugins import layouts_in_order

        module = layouts_in_order().module(self.layout)
        assert module.claim(LayoutFolder(str(tmp_path), [], [])) is None
