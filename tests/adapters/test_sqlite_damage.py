"""Damage costs only what it touches in SQLite stores (issue 33): a damaged MLflow, Optuna or
trackio database is named as a damaged store of its kind, with SQLite's cause, where it is and a
hint fitting it; what still reads is read (counted against a clean read of the same store); what
was lost is counted in a note; the input never changes; nothing that reads is a one-line error.

The stores are written here by the installed clients (MLflow through `MlflowClient` on
`sqlite:///…`, telemetry off by tests/conftest.py; Optuna through `optuna.create_study`), the
trackio database is tests/fixtures/trackio/cheetah.db (written by trackio). Each damage is made on
a copy, with a fixed seed: flipped bits, a zeroed 4096-byte page or 512-byte block, a cut tail,
200 inserted bytes. Where a page is targeted (a table's root, a leaf of its tree) SQLite's own
`dbstat` and `sqlite_master` say which, never the reader under test.
"""

from __future__ import annotations

import json
import math
import random
import re
import shutil
import sqlite3
import warnings
from pathlib import Path

import pytest

from rundiff_core.cli import main
from rundiff_core.resolve import load_runs
from rundiff_core.testing import hash_tree

PAGE = 4096
TRACKIO_DB = Path(__file__).resolve().parents[1] / "fixtures" / "trackio" / "cheetah.db"


# -- helpers ------------------------------------------------------------------------------------------


def _ro(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro&immutable=1", uri=True)


def _pages(path: Path, *names: str, kind: str | None = None) -> list[int]:
    """The pages of these tables/indexes (SQLite's dbstat), or their root pages without it."""
    conn = _ro(path)
    try:
        marks = ",".join("?" * len(names))
        try:
            rows = conn.execute(f"SELECT pageno, pagetype FROM dbstat WHERE name IN ({marks})",
                                names).fetchall()
            return sorted(p for p, t in rows if kind is None or t == kind)
        except sqlite3.OperationalError:  # an sqlite built without dbstat
            if kind == "leaf":
                pytest.skip("this sqlite has no dbstat")
            return sorted(r[0] for r in conn.execute(
                f"SELECT rootpage FROM sqlite_master WHERE name IN ({marks})", names))
    finally:
        conn.close()


def _root(path: Path, name: str) -> int:
    conn = _ro(path)
    try:
        return conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (name,)).fetchone()[0]
    finally:
        conn.close()


def _zero_pages(data: bytearray, pages: list[int]) -> bytearray:
    for p in pages:
        data[(p - 1) * PAGE:p * PAGE] = bytes(PAGE)
    return data


def _damaged(src: Path, dst: Path, how: str, seed: int = 33, pages: list[int] | None = None) -> Path:
    """A copy of `src` with one kind of damage, made with a fixed seed."""
    data = bytearray(src.read_bytes())
    rng = random.Random(seed)
    if how == "pages":
        data = _zero_pages(data, pages or [])
    elif how == "block":  # 512 bytes zeroed inside one of `pages`
        page = rng.choice(pages or [2])
        at = (page - 1) * PAGE + rng.randrange(PAGE // 512) * 512
        data[at:at + 512] = bytes(512)
    elif how == "flip":
        for _ in range(16):
            i = rng.randrange(len(data))
            data[i] ^= 1 << rng.randrange(8)
    elif how == "cut":
        data = data[:rng.randrange(len(data) // 2, len(data) * 9 // 10)]
    elif how == "insert":
        at = rng.randrange(len(data) // 4, len(data) * 3 // 4)
        data[at:at] = bytes(rng.getrandbits(8) for _ in range(200))
    else:
        raise ValueError(how)
    dst.write_bytes(bytes(data))
    return dst


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    assert "Traceback" not in out.out + out.err
    return code, out.out, out.err


def _one_line_error(err: str) -> str:
    """stderr of a failed command: one error line, then at most a hint line."""
    lines = err.strip().splitlines()
    assert 1 <= len(lines) <= 2, err
    assert lines[0].startswith("rundiff: error: "), err
    assert len(lines) == 1 or lines[1].strip().startswith("hint: "), err
    return lines[0]


def _value(v: float) -> object:
    return "nan" if isinstance(v, float) and math.isnan(v) else v


def _points(run) -> set[tuple]:
    h = run.history()
    return {(k, float(s), _value(float(v))) for k, s, v in zip(h["key"], h["step"], h["value"],
                                                               strict=True)}


def _read(address: str) -> dict[str, tuple[object, set[tuple]]]:
    return {r.run_id: (r, _points(r)) for r in load_runs(address)}


def _notes(run) -> str:
    return " | ".join(run.fidelity)


# -- MLflow --------------------------------------------------------------------------------------------


def _write_mlflow(path: Path) -> None:
    from mlflow import MlflowClient
    from mlflow.entities import Metric, Param
    from mlflow_server import write_runs

    uri = f"sqlite:///{path}"
    write_runs(uri)  # the awkward runs (NaN/inf, nested, failed, twins…)
    client = MlflowClient(tracking_uri=uri)
    exp = client.create_experiment("long")
    for r in range(4):  # enough points for the metrics table to span many pages
        run = client.create_run(exp, start_time=1_700_000_000_000 + r, run_name=f"long-{r}")
        client.log_batch(run.info.run_id, params=[Param("seed", str(r)), Param("lr", "0.01")])
        for chunk in range(4):
            client.log_batch(run.info.run_id, metrics=[
                Metric(key, 1.0 / (s + 1) + r, 1_700_000_000_000 + 10 * s, s)
                for s in range(chunk * 500, (chunk + 1) * 500) for key in ("loss", "acc")])
        client.set_terminated(run.info.run_id, "FINISHED")


@pytest.fixture(scope="module")
def mlflow_store(tmp_path_factory) -> tuple[Path, dict[str, tuple[object, set[tuple]]]]:
    """(a clean MLflow sqlite store written by the client, what rundiff reads of it)."""
    pytest.importorskip("mlflow")
    import uuid

    db = tmp_path_factory.mktemp("mlflow-damage") / "mlflow.db"
    rng = random.Random(2024)  # run ids from a seed: the same pages every session
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(uuid, "uuid4", lambda: uuid.UUID(int=rng.getrandbits(128), version=4))
        _write_mlflow(db)
    clean = _read(f"mlflow:{db}")
    assert sum(len(p) for _, p in clean.values()) > 16000
    return db, clean


def _check_subset(got: dict, clean: dict) -> None:
    """Every run read is a run of the clean store, every point read one it holds."""
    for rid, (_run, pts) in got.items():
        assert rid in clean, rid
        assert pts <= clean[rid][1], (rid, sorted(pts - clean[rid][1])[:3])


def test_mlflow_metrics_root_zeroed_every_point_rebuilt(mlflow_store, tmp_path, capsys):
    db, clean = mlflow_store
    root = _root(db, "metrics")
    bad = _damaged(db, tmp_path / "mlflow.db", "pages", pages=[root])
    before = hash_tree(tmp_path)
    got = _read(str(bad))  # the bare path: still claimed as an MLflow store
    assert {k: p for k, (_, p) in got.items()} == {k: p for k, (_, p) in clean.items()}
    run = next(r for r, _ in got.values())
    said = _notes(run)
    assert f"mlflow.db: a damaged MLflow store (database disk image is malformed at page {root} " \
           "(zeroed)" in said, said
    assert "rebuilt from an index" in said and "reads as zeros" in said
    assert all(r.adapter == "mlflow" for r, _ in got.values())
    code, out, _ = _cli(capsys, "ls", str(bad), "--format", "json")
    assert code == 0 and len(json.loads(out)) == len(clean)
    assert hash_tree(tmp_path) == before


def test_mlflow_lost_leaf_is_counted_per_run(mlflow_store, tmp_path):
    """A leaf of the metrics table and the index that holds every column (its primary key) both
    zeroed: the leaf's rows are lost, and the run id index says whose — read + lost = logged."""
    db, clean = mlflow_store
    leaves = _pages(db, "metrics", kind="leaf")
    leaf = random.Random(7).choice(leaves)
    pk = _pages(db, "sqlite_autoindex_metrics_1")
    bad = _damaged(db, tmp_path / "mlflow.db", "pages", pages=[leaf, *pk])
    before = hash_tree(tmp_path)
    got = _read(f"mlflow:{bad}")
    _check_subset(got, clean)
    assert set(got) == set(clean)  # every run still listed
    lost_total = 0
    for rid, (run, pts) in got.items():
        said = _notes(run)
        assert "a damaged MLflow store" in said and f"page {min([leaf, *pk])}" in said, said
        lost = 0
        for note in run.fidelity:
            if note.startswith("this run lost "):
                lost = int(note.split()[3])
        assert len(pts) + lost == len(clean[rid][1]), (rid, len(pts), lost, said)
        lost_total += lost
    assert lost_total > 0
    assert hash_tree(tmp_path) == before


def test_mlflow_runs_table_zeroed_runs_still_listed(mlflow_store, tmp_path):
    db, clean = mlflow_store
    bad = _damaged(db, tmp_path / "mlflow.db", "pages", pages=_pages(db, "runs"))
    got = _read(f"mlflow:{bad}")
    with_points = {rid for rid, (_, pts) in clean.items() if pts}
    assert with_points <= set(got)
    for rid in with_points:
        run, pts = got[rid]
        assert pts == clean[rid][1]
        assert run.name == clean[rid][0].name  # from its mlflow.runName tag
        assert "its row in the runs table is lost" in _notes(run)
        assert run.status == "unknown"


def test_mlflow_header_page_zeroed_still_an_mlflow_store(mlflow_store, tmp_path, capsys):
    db, clean = mlflow_store
    bad = _damaged(db, tmp_path / "mlflow.db", "pages", pages=[1])
    code, out, _ = _cli(capsys, "detect", str(bad))
    assert code == 0 and "damaged MLflow sqlite database" in out, out
    got = _read(str(bad))
    _check_subset(got, clean)
    read = sum(len(p) for _, p in got.values())
    assert read == sum(len(p) for _, p in clean.values())  # the schema's other pages hold it
    assert "its header is damaged" in _notes(next(iter(got.values()))[0])


@pytest.mark.parametrize("how", ["block", "cut", "insert", "flip"])
def test_mlflow_damage_keeps_what_reads(mlflow_store, tmp_path, capsys, how):
    db, clean = mlflow_store
    pages = _pages(db, "metrics", kind="leaf") if how == "block" else None
    bad = _damaged(db, tmp_path / "mlflow.db", how, pages=pages)
    before = hash_tree(tmp_path)
    code, out, err = _cli(capsys, "ls", f"mlflow:{bad}", "--format", "json")
    if code == 2:  # nothing reads: one line, its kind, damaged, and a hint
        line = _one_line_error(err)
        assert "a damaged MLflow store" in line and "hint: " in err
    else:
        assert code == 0, err
        rows = json.loads(out)
        assert rows
        got = _read(f"mlflow:{bad}")
        if how != "flip":  # a flipped bit in a value is no damage SQLite can see
            _check_subset(got, clean)
        read = sum(len(p) for _, p in got.values())
        total = sum(len(p) for _, p in clean.values())
        notes = " | ".join(n for row in rows for n in row["fidelity"])
        if how == "insert":
            assert "200 bytes inserted in page" in notes, notes
            assert read >= total - 2 * 400  # at most the page it landed in (and its neighbour)
        if how == "cut":
            assert "cut short" in notes and "copy it again" in notes, notes
        if how == "block":
            assert "a damaged MLflow store" in notes and read >= total - 2 * 400
    assert hash_tree(tmp_path) == before


def test_mlflow_store_with_nothing_readable_is_one_line(mlflow_store, tmp_path, capsys):
    db, _clean = mlflow_store
    tables = ("runs", "metrics", "params", "tags", "latest_metrics", "experiments")
    conn = _ro(db)
    try:
        names = [r[0] for r in conn.execute(
            f"SELECT name FROM sqlite_master WHERE tbl_name IN ({','.join('?' * len(tables))})",
            tables)]
    finally:
        conn.close()
    bad = _damaged(db, tmp_path / "mlflow.db", "pages", pages=_pages(db, *names))
    before = hash_tree(tmp_path)
    code, _out, err = _cli(capsys, "ls", str(bad))
    assert code == 2
    line = _one_line_error(err)
    assert "mlflow.db: a damaged MLflow store (database disk image is malformed at page" in line
    assert "none of its runs could be read" in line and "not an MLflow store" not in err
    assert "reads as zeros" in err
    assert hash_tree(tmp_path) == before


# -- Optuna ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def optuna_store(tmp_path_factory) -> tuple[Path, dict[str, tuple[object, set[tuple]]]]:
    optuna = pytest.importorskip("optuna")
    db = tmp_path_factory.mktemp("optuna-damage") / "study.db"
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    study = optuna.create_study(study_name="tune", storage=f"sqlite:///{db}",
                                sampler=optuna.samplers.RandomSampler(seed=0))

    def objective(trial):
        x = trial.suggest_float("x", -4, 4)
        for step in range(60):
            trial.report((x - 1) ** 2 + 1 / (step + 1), step)
        return (x - 1) ** 2

    study.optimize(objective, n_trials=40)
    clean = _read(f"local:{db}")
    assert len(clean) == 40
    return db, clean


def test_optuna_intermediate_values_lost_are_counted_per_trial(optuna_store, tmp_path):
    db, clean = optuna_store
    leaf = random.Random(5).choice(_pages(db, "trial_intermediate_values", kind="leaf"))
    index = _pages(db, "sqlite_autoindex_trial_intermediate_values_1")
    bad = _damaged(db, tmp_path / "study.db", "pages", pages=[leaf])
    before = hash_tree(tmp_path)
    got = _read(f"local:{bad}")
    _check_subset(got, clean)
    assert set(got) == set(clean)
    lost_total = 0
    for rid, (run, pts) in got.items():
        said = _notes(run)
        assert "study.db: a damaged Optuna store (database disk image is malformed at page" in said
        lost = 0
        for note in run.fidelity:
            if note.startswith("this trial lost "):
                lost = int(note.split()[3])
        assert len(pts) + lost == len(clean[rid][1]), (rid, said)
        lost_total += lost
    assert lost_total > 0 and index  # the unique (trial_id, step) index named them
    assert hash_tree(tmp_path) == before


def test_optuna_trials_lost_is_one_line(optuna_store, tmp_path, capsys):
    db, _clean = optuna_store
    bad = _damaged(db, tmp_path / "study.db", "pages", pages=_pages(db, "trials"))
    before = hash_tree(tmp_path)
    code, _out, err = _cli(capsys, "ls", str(bad))
    assert code == 2
    line = _one_line_error(err)
    assert "study.db: a damaged Optuna store (" in line and "none of its runs could be read" in line
    assert "trials:" in line and "hint: " in err
    assert hash_tree(tmp_path) == before


@pytest.mark.parametrize("how", ["block", "cut", "insert", "flip"])
def test_optuna_damage_keeps_what_reads(optuna_store, tmp_path, capsys, how):
    db, clean = optuna_store
    pages = _pages(db, "trial_intermediate_values", kind="leaf") if how == "block" else None
    bad = _damaged(db, tmp_path / "study.db", how, seed=11, pages=pages)
    before = hash_tree(tmp_path)
    code, out, err = _cli(capsys, "ls", str(bad), "--format", "json")
    if code == 2:
        line = _one_line_error(err)
        assert "a damaged" in line and "hint: " in err
    else:
        assert code == 0, err
        rows = json.loads(out)
        notes = " | ".join(n for row in rows for n in row["fidelity"])
        if how in ("block", "cut", "insert"):
            assert "study.db: a damaged Optuna store (" in notes, notes
            got = _read(f"local:{bad}")
            _check_subset({k.replace(str(bad), str(db)): v for k, v in got.items()}, clean)
    assert hash_tree(tmp_path) == before


# -- trackio -------------------------------------------------------------------------------------------


@pytest.fixture
def trackio_db(tmp_path) -> Path:
    if not TRACKIO_DB.is_file():
        pytest.skip("tests/fixtures/trackio not in this checkout")
    clean = tmp_path / "clean" / "cheetah.db"
    clean.parent.mkdir()
    shutil.copyfile(TRACKIO_DB, clean)  # its -wal beside it is empty: the file holds every row
    return clean


def _by_name(runs: dict) -> dict:
    return {k.rsplit("#", 1)[-1]: v for k, v in runs.items()}


def test_trackio_metrics_root_zeroed_every_run_read(trackio_db, tmp_path):
    clean = _by_name(_read(f"local:{trackio_db}"))
    bad = _damaged(trackio_db, tmp_path / "cheetah.db", "pages",
                   pages=[_root(trackio_db, "metrics")])
    before = hash_tree(tmp_path)
    got = _by_name(_read(f"local:{bad}"))
    assert set(got) == set(clean)
    for name, (run, pts) in got.items():
        assert pts == clean[name][1], name
        assert run.config == clean[name][0].config
        said = _notes(run)
        assert "cheetah.db: a damaged trackio store (database disk image is malformed at page" \
               in said, said
    assert hash_tree(tmp_path) == before


def test_trackio_cut_tail_keeps_runs_by_their_config(trackio_db, tmp_path, capsys):
    clean = _by_name(_read(f"local:{trackio_db}"))
    bad = _damaged(trackio_db, tmp_path / "cheetah.db", "cut", seed=3)
    before = hash_tree(tmp_path)
    code, out, err = _cli(capsys, "ls", str(bad), "--format", "json")
    if code == 2:
        line = _one_line_error(err)
        assert "a damaged trackio store" in line and "cut short" in err
    else:
        rows = json.loads(out)
        notes = " | ".join(n for row in rows for n in row["fidelity"])
        assert "cheetah.db: a damaged trackio store (" in notes and "cut short" in notes
        got = _by_name(_read(f"local:{bad}"))
        assert set(got) <= set(clean)
        for name, (_run, pts) in got.items():
            assert pts <= clean[name][1]
    assert hash_tree(tmp_path) == before


def test_a_write_ahead_log_store_read_writes_nothing_beside_it(trackio_db, capsys):
    """trackio's database is in WAL mode, where even a read-only SQLite connection writes
    `-shm`/`-wal` files beside it: every sniffer and reader (MLflow's among them, which looks at
    every .db) opens it without writing, whole or damaged."""
    folder = trackio_db.parent
    before = hash_tree(folder)
    assert trackio_db.read_bytes()[18:20] == b"\x02\x02"  # WAL mode
    _read(f"local:{trackio_db}")
    for argv in (["ls", str(trackio_db)], ["ls", str(folder)], ["ls", f"mlflow:{trackio_db}"]):
        _cli(capsys, *argv)
    assert hash_tree(folder) == before


def test_trackio_inserted_bytes_are_realigned(trackio_db, tmp_path):
    clean = _by_name(_read(f"local:{trackio_db}"))
    bad = _damaged(trackio_db, tmp_path / "cheetah.db", "insert", seed=4)
    got = _by_name(_read(f"local:{bad}"))
    assert set(got) == set(clean)
    for name, (run, pts) in got.items():
        assert pts <= clean[name][1]
        assert "200 bytes inserted in page" in _notes(run), _notes(run)
    read = sum(len(p) for _, p in got.values())
    assert read >= sum(len(p) for _, p in clean.values()) * 0.9


# -- a damaged store of another kind, addressed as MLflow -------------------------------------------


def test_mlflow_address_of_a_damaged_optuna_store_says_what_it_is(optuna_store, tmp_path, capsys):
    db, _clean = optuna_store
    bad = _damaged(db, tmp_path / "study.db", "pages", pages=[1])
    code, _out, err = _cli(capsys, "ls", f"mlflow:{bad}")
    assert code == 2
    line = _one_line_error(err)
    assert "study.db: a damaged Optuna store" in line and "not an MLflow store" in line
    assert f"local:{bad}" in err


# -- hostile bytes ---------------------------------------------------------------------------------------

_HOSTILE = None


def _hostile_db() -> bytes:
    """A small store of two tables with indexes and overflow rows, as bytes (built once)."""
    global _HOSTILE
    if _HOSTILE is None:
        import os
        import tempfile

        d = tempfile.mkdtemp(prefix="hostile-sqlite-")
        path = os.path.join(d, "s.db")
        conn = sqlite3.connect(path)
        conn.execute("CREATE TABLE scalars (run_id TEXT, tag TEXT, step INTEGER, value REAL)")
        conn.execute("CREATE INDEX ix ON scalars (run_id, tag, step)")
        conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
        conn.executemany("INSERT INTO scalars VALUES (?, ?, ?, ?)",
                         [(f"r{i % 3}", "loss", i, 1.0 / (i + 1)) for i in range(3000)])
        conn.executemany("INSERT INTO notes (body) VALUES (?)", [("x" * 9000,), ("y" * 50,)])
        conn.commit()
        conn.close()
        _HOSTILE = Path(path).read_bytes()
        shutil.rmtree(d)
    return _HOSTILE


@pytest.mark.slow
def test_hostile_bytes_never_raise_past_the_reader(tmp_path_factory):
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st
    from rundiff_adapters.local.shapes import sqlite_store
    from rundiff_adapters.mlflow.sqlite_salvage import recover

    clean = _hostile_db()
    edits = st.lists(st.tuples(st.integers(0, len(clean) - 1), st.integers(0, 255)), max_size=40)

    @settings(max_examples=40, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
    @given(edits=edits, cut=st.integers(0, len(clean)), insert=st.integers(0, 600),
           zero=st.integers(0, len(clean) // PAGE))
    def check(edits, cut, insert, zero):
        data = bytearray(clean)
        for at, b in edits:
            data[at] = b
        data[zero * PAGE:(zero + 1) * PAGE] = bytes(PAGE)
        data[cut:cut] = bytes(insert % 256 for _ in range(insert))
        path = tmp_path_factory.mktemp("hostile") / "s.db"
        path.write_bytes(bytes(data))
        before = hash_tree(path)
        assert main(["ls", str(path), "--format", "json"]) in (0, 2)  # never an internal error
        rec = recover(str(path))  # what reads, or nothing: never a traceback
        assert rec.cause and "\n" not in rec.cause and rec.hint
        for run in sqlite_store.claim_file(str(path)) or []:
            try:
                sqlite_store.meta(run)
                sqlite_store.history(run)
            except Exception as exc:  # only the documented one-line error
                from rundiff_core.errors import InputError

                assert isinstance(exc, InputError) and "\n" not in str(exc.args[0]), exc
        assert hash_tree(path) == before

    check()


@pytest.mark.slow
def test_hostile_bytes_in_an_mlflow_store(mlflow_store, tmp_path_factory, capsys):
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    db, _clean = mlflow_store
    clean = db.read_bytes()

    @settings(max_examples=15, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
    @given(edits=st.lists(st.tuples(st.integers(0, len(clean) - 1), st.integers(0, 255)),
                          max_size=30),
           cut=st.integers(len(clean) // 2, len(clean)), insert=st.integers(0, 300))
    def check(edits, cut, insert):
        data = bytearray(clean[:cut])
        for at, b in edits:
            if at < len(data):
                data[at] = b
        data[len(data) // 3:len(data) // 3] = bytes(insert % 256 for _ in range(insert))
        path = tmp_path_factory.mktemp("hostile-mlflow") / "mlflow.db"
        path.write_bytes(bytes(data))
        before = hash_tree(path)
        code = main(["ls", str(path), "--format", "json"])
        out = capsys.readouterr()
        assert code in (0, 2), out.err
        assert "Traceback" not in out.err
        if code == 2:
            _one_line_error(out.err)
        assert hash_tree(path) == before

    check()


# -- the page reader against SQLite -------------------------------------------------------------------

FIXTURE_DBS = sorted(p for p in (Path(__file__).resolve().parents[1] / "fixtures").rglob("*.db")
                     if "realworld" in p.parts or "optuna-schemas" in p.parts or p == TRACKIO_DB)


def _page_reader_equals_sqlite(path: Path) -> int:
    """Every table read page by page holds exactly the rows SQLite reads (rowid included)."""
    from rundiff_adapters.mlflow.sqlite_salvage import PageFile, _describe, _fit

    conn = _ro(path)
    try:
        schema = [tuple(r) for r in conn.execute(
            "SELECT type, name, tbl_name, rootpage, sql FROM sqlite_master")]
        tables, _unread, _ = _describe(schema, None)
        pf = PageFile(str(path))
        rows = 0
        try:
            for name, t in tables.items():
                if not t.rowid:
                    continue
                want = {r[0]: list(r[1:]) for r in conn.execute(
                    f'SELECT rowid, * FROM "{name}"')}
                damage: dict[int, str] = {}
                got, bad, _held = pf.table_rows(t.root, damage)
                assert not damage and not bad, (path, name, damage, bad)
                assert {rid: _fit(v, t, rid) for rid, v in got.items()} == want, (path, name)
                rows += len(want)
        finally:
            pf.close()
    finally:
        conn.close()
    return rows


@pytest.mark.parametrize("path", FIXTURE_DBS, ids=lambda p: "/".join(p.parts[-2:]))
def test_page_reader_reads_real_stores_as_sqlite_does(path):
    assert _page_reader_equals_sqlite(path) > 0


def test_page_reader_reads_written_stores_as_sqlite_does(mlflow_store, optuna_store):
    assert _page_reader_equals_sqlite(mlflow_store[0]) > 16000
    assert _page_reader_equals_sqlite(optuna_store[0]) > 2000


# -- the kind of a store read from whatever of its schema survives --------------------------------------

# each kind's core tables: the ones whose CREATE TABLE statements are zeroed below
_CORE = {"MLflow": ("experiments", "runs", "metrics", "params", "tags", "latest_metrics"),
         "Optuna": ("studies", "trials", "trial_params", "trial_values", "trial_intermediate_values"),
         "trackio": ("metrics", "configs")}


def _schema_pages(path: Path) -> list[int]:
    """sqlite_master's pages, by SQLite's dbstat."""
    conn = _ro(path)
    try:
        return sorted(r[0] for r in conn.execute(
            "SELECT pageno FROM dbstat WHERE name IN ('sqlite_master', 'sqlite_schema')"))
    except sqlite3.OperationalError:
        pytest.skip("this sqlite has no dbstat")
    finally:
        conn.close()


def _kind_store(request, kind: str) -> Path:
    """The store of `kind` its fixture writes (what the writer logs meanwhile is not the test's)."""
    if kind == "MLflow":
        db = request.getfixturevalue("mlflow_store")[0]
    elif kind == "Optuna":
        db = request.getfixturevalue("optuna_store")[0]
    else:
        db = request.getfixturevalue("trackio_db")
    request.getfixturevalue("capsys").readouterr()
    return db


@pytest.mark.parametrize("kind", ["MLflow", "Optuna", "trackio"])
def test_core_tables_schema_rows_lost_kind_read_from_what_survives(request, kind, tmp_path, capsys):
    """Every schema page holding a CREATE TABLE of the kind's core tables zeroed: the kind is read
    from the schema rows left (an index names its table; MLflow's traces and registry tables are
    its own), else the file is said to have lost its schema — never "a damaged SQLite file"
    while rows naming the kind survive."""
    db = _kind_store(request, kind)
    data = db.read_bytes()
    pages = _schema_pages(db)
    hit = [p for p in pages if any(
        f"CREATE TABLE {t} (".encode() in data[(p - 1) * PAGE:p * PAGE]
        or f'CREATE TABLE "{t}" ('.encode() in data[(p - 1) * PAGE:p * PAGE] for t in _CORE[kind])]
    assert hit
    left = [p for p in pages if p not in hit and p != 1]
    bad = _damaged(db, tmp_path / db.name, "pages", pages=hit)
    before = hash_tree(tmp_path)
    code, _out, err = _cli(capsys, "ls", str(bad))
    assert code == 2
    line = _one_line_error(err)
    if left:  # schema rows survive: they name the kind
        assert f"{db.name}: a damaged {kind} store (" in line, line
    else:
        assert "a damaged SQLite file whose schema is lost, so its kind cannot be told" in line
    assert "hint: " in err
    assert hash_tree(tmp_path) == before


@pytest.mark.parametrize("kind", ["MLflow", "Optuna", "trackio"])
def test_first_page_intact_rest_zeroed_says_what_survives(request, kind, tmp_path, capsys):
    """Page 1 kept, every other page zeroed. A store's page 1 holding schema rows names the kind;
    page 1 as an interior page of sqlite_master (every store here: their schemas span pages)
    holds no schema text, and the error says the schema is lost, so the kind cannot be told —
    the same in `local:` and `mlflow:` addresses."""
    db = _kind_store(request, kind)
    data = db.read_bytes()
    bad = tmp_path / db.name
    bad.write_bytes(data[:PAGE] + bytes(len(data) - PAGE))
    before = hash_tree(tmp_path)
    interior = data[100] in (2, 5)
    for address in (str(bad), f"mlflow:{bad}"):
        code, _out, err = _cli(capsys, "ls", address)
        assert code == 2
        line = _one_line_error(err)
        if interior:
            assert "a damaged SQLite file whose schema is lost, so its kind cannot be told" in line
        else:
            assert f"a damaged {kind} store" in line, line
        assert "hint: " in err
    assert hash_tree(tmp_path) == before


@pytest.mark.parametrize("kind", ["Optuna", "trackio"])
def test_mlflow_address_of_a_store_whose_data_pages_are_zeroed(request, kind, tmp_path, capsys):
    """sqlite_master whole, every other page zeroed: SQLite reads the schema, its quick_check
    finds the damage; addressed as MLflow, the store is named as the damaged store it is."""
    db = _kind_store(request, kind)
    keep = set(_schema_pages(db))
    npages = db.stat().st_size // PAGE
    bad = _damaged(db, tmp_path / db.name, "pages",
                   pages=[p for p in range(1, npages + 1) if p not in keep])
    code, _out, err = _cli(capsys, "ls", f"mlflow:{bad}")
    assert code == 2
    line = _one_line_error(err)
    assert f"{db.name}: a damaged {kind} store (" in line and "not an MLflow store" in line, line
    assert f"local:{bad}" in err


# -- whole pages inserted: the file's size is still a multiple of its page size ----------------------


def _points_by_run(got: dict) -> dict:
    return {rid.rsplit("#", 1)[-1] if "#" in rid else rid: pts for rid, (_r, pts) in got.items()}


@pytest.mark.parametrize("kind", ["MLflow", "Optuna", "trackio"])
def test_a_repeated_page_sized_region_is_realigned(request, kind, tmp_path):
    """4096 bytes repeated right after themselves (a block written twice), at a seeded place in
    the first half of the file: every page after them is one page on, at a page boundary, so
    the size does not show it; the header's page count and the b-tree's pointers (and
    sqlite_master's root pages) say from where. Only the page the bytes went into is not
    trusted: ≥ 99% of the points are read, none that the store does not hold, and the note
    says where the bytes went in."""
    db = _kind_store(request, kind)
    data = db.read_bytes()
    assert data[24:28] == data[92:96]  # the header's page count is current
    at = random.Random(f"dup:{kind}").randrange(PAGE * 4, len(data) // 2)
    bad = tmp_path / "bad" / db.name
    bad.parent.mkdir()
    bad.write_bytes(data[:at + PAGE] + data[at:at + PAGE] + data[at + PAGE:])
    before = hash_tree(bad.parent)
    address = f"mlflow:{db}" if kind == "MLflow" else f"local:{db}"
    clean = _points_by_run(_read(address))
    got = _points_by_run(_read(address.replace(str(db), str(bad))))
    for run, pts in got.items():
        assert pts <= clean.get(run, set()), run
    kept = sum(len(p) for p in got.values())
    total = sum(len(p) for p in clean.values())
    assert kept >= 0.99 * total, (kept, total)
    notes = " | ".join(n for r in load_runs(address.replace(str(db), str(bad))) for n in r.fidelity)
    seam = at // PAGE + 2  # the slot the repeated bytes start in
    where = re.search(r"4096 bytes inserted in (?:page (\d+)|one of pages (\d+)–(\d+)) ", notes)
    assert where, notes
    first, last = (int(where[1]),) * 2 if where[1] else (int(where[2]), int(where[3]))
    assert first <= seam <= last, (seam, notes)
    assert hash_tree(bad.parent) == before


def test_pages_after_the_end_move_nothing(mlflow_store, tmp_path):
    """Whole pages after the header's page count (a file grown past its end; SQLite ignores
    them) and a zeroed leaf: the b-tree gives no pointer that reads right only pages on, so
    nothing is realigned — the zeroed page is named, its rows rebuilt from MLflow's metrics
    index (which holds every column) or counted, every other row read."""
    db, clean = mlflow_store
    leaf = random.Random(7).choice(_pages(db, "metrics", kind="leaf"))
    data = bytearray(db.read_bytes())
    data[(leaf - 1) * PAGE:leaf * PAGE] = bytes(PAGE)
    bad = tmp_path / "mlflow.db"
    bad.write_bytes(bytes(data) + data[PAGE * 2:PAGE * 5])
    got = _read(f"mlflow:{bad}")
    notes = " | ".join(n for _rid, (r, _p) in got.items() for n in r.fidelity)
    assert "inserted" not in notes and f"page {leaf} (zeroed)" in notes, notes
    kept = sum(len(p) for _r, p in got.values())
    total = sum(len(p) for _r, p in clean.values())
    assert total - 2 * 400 <= kept <= total
    for rid, (_run, pts) in got.items():
        assert pts <= clean[rid.replace(str(bad), str(db))][1]
