"""local: SQLite stores recognised by their schema (adapters/local/shapes/sqlite_store.py).

Optuna study stores are written here by the installed Optuna (ask/tell, so every trial state is
there: complete, pruned, failed, running, waiting; float, log-float, int and categorical params;
intermediate values with a NaN; one and two objectives, named and not) and read back through the
API and the CLI, against what Optuna itself reports for the same trials. Old schemas are read from
stores the old Optuna releases wrote (tests/fixtures/optuna-schemas, with what those releases read
back), real stores from public repositories from tests/fixtures/realworld/optuna (each with an
expected.json computed with the standard library). Generic key/step/value tables, unrelated and
damaged SQLite files are written with sqlite3. No input changes: every test hashes its inputs.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import sqlite3
import warnings
from pathlib import Path

import optuna
import pytest
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.trial import TrialState
from rundiff_adapters.local.shapes import sqlite_store

from rundiff_core.cli import main
from rundiff_core.detect import collect_claims
from rundiff_core.errors import InputError
from rundiff_core.resolve import open_source
from rundiff_core.testing import LayoutContract, WrittenLayout, hash_tree

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
REAL = FIXTURES / "realworld" / "optuna"
SCHEMAS = FIXTURES / "optuna-schemas"
MLFLOW_DB = FIXTURES / "realworld" / "trees" / "it3385-mlops-assignment" / "notebooks" / "mlflow.db"
TRACKIO_DB = FIXTURES / "trackio" / "cheetah.db"

CHOICES = ["adam", "sgd", None, 3, True]
DISTS = {"x": FloatDistribution(-4.0, 4.0), "lr": FloatDistribution(1e-5, 1e-1, log=True),
         "layers": IntDistribution(1, 8), "opt": CategoricalDistribution(CHOICES)}
STATUS = {"COMPLETE": "finished", "PRUNED": "finished", "FAIL": "crashed", "RUNNING": "running",
          "WAITING": "unknown"}
# the "tune" study: (params, intermediate values, how the trial ends)
PLAN = [
    ({"x": 0.5, "lr": 1e-3, "layers": 2, "opt": "adam"}, [4.0, 2.0, 1.0, 0.5, 0.25], "COMPLETE"),
    ({"x": 1.5, "lr": 1e-2, "layers": 4, "opt": "sgd"}, [5.0, 3.0, math.nan, 2.0, 1.5], "COMPLETE"),
    ({"x": -2.0, "lr": 1e-4, "layers": 3, "opt": None}, [9.0, 8.5], "PRUNED"),
    ({"x": 3.0, "lr": 5e-2, "layers": 1, "opt": 3}, [7.0, 6.0, 5.5], "FAIL"),
    ({"x": 0.0, "lr": 1e-5, "layers": 8, "opt": True}, [], "RUNNING"),
    ({"x": 2.5, "lr": 2e-3, "layers": 5, "opt": "adam"}, [3.0, 1.0, 0.75, 0.7, 0.6], "COMPLETE"),
]


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return (math.isnan(a) and math.isnan(b)) or a == b


def _frozen(study: optuna.Study) -> list[dict]:
    """What Optuna itself says of each trial (the oracle)."""
    return [{"number": t.number, "state": t.state.name, "params": dict(t.params),
             "values": list(t.values) if t.values is not None else None,
             "intermediate": dict(t.intermediate_values), "user_attrs": dict(t.user_attrs),
             "started": t.datetime_start is not None} for t in study.trials]


def _write_studies(db: Path) -> dict[str, dict]:
    storage = f"sqlite:///{db}"
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    sampler = optuna.samplers.RandomSampler(seed=0)
    tune = optuna.create_study(study_name="tune", storage=storage, direction="minimize", sampler=sampler)
    for params, _curve, _end in PLAN:
        tune.enqueue_trial(params)
    for _params, curve, end in PLAN:
        trial = tune.ask(fixed_distributions=DISTS)
        trial.set_user_attr("note", f"trial {trial.number}")
        trial.set_user_attr("curve", [1, 2])  # not a scalar: not config
        for step, v in enumerate(curve):
            trial.report(v, step)
        if end == "COMPLETE":
            tune.tell(trial, curve[-1])
        elif end in ("PRUNED", "FAIL"):
            tune.tell(trial, state=TrialState[end])
    tune.enqueue_trial({"x": 1.0, "lr": 1e-3, "layers": 2, "opt": "sgd"})  # stays WAITING

    acc = optuna.create_study(study_name="acc", storage=storage, direction="maximize", sampler=sampler)
    acc.set_metric_names(["accuracy"])
    for lr, value in ((1e-3, 0.81), (1e-2, 0.86), (1e-1, 0.42)):
        acc.enqueue_trial({"lr": lr})
        trial = acc.ask({"lr": FloatDistribution(1e-5, 1.0, log=True)})
        acc.tell(trial, value)

    pareto = optuna.create_study(study_name="pareto", storage=storage,
                                 directions=["minimize", "maximize"], sampler=sampler)
    for values in ((0.3, 0.7), (0.2, 0.5), (math.inf, 0.9)):
        trial = pareto.ask({"depth": IntDistribution(1, 10)})
        pareto.tell(trial, list(values))
    return {"tune": {"direction": ["MINIMIZE"], "keys": ["value"], "trials": _frozen(tune)},
            "acc": {"direction": ["MAXIMIZE"], "keys": ["accuracy"], "trials": _frozen(acc)},
            "pareto": {"direction": ["MINIMIZE", "MAXIMIZE"], "keys": ["value_0", "value_1"],
                       "trials": _frozen(pareto)}}


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> tuple[Path, dict[str, dict], dict[str, str]]:
    """(the database, what Optuna says of it, the hashes of its folder before any read)."""
    root = tmp_path_factory.mktemp("optuna-store")
    db = root / "optuna.db"
    oracle = _write_studies(db)
    return db, oracle, hash_tree(root)


def _runs(address: str) -> dict[str, object]:
    src = open_source(address)
    return {ref.address: src.load_run(ref) for ref in src.list_runs()}


def _json_out(capsys, argv: list[str]):
    code = main(argv)
    out = capsys.readouterr()
    assert code == 0, out.err
    return json.loads(out.out)


# -- Optuna: every trial, as Optuna reads it ----------------------------------------------------


def test_every_trial_is_a_run_read_as_optuna_reads_it(store):
    db, oracle, before = store
    runs = _runs(f"local:{db}")
    assert len(runs) == sum(len(s["trials"]) for s in oracle.values()) == 13
    for name, study in oracle.items():
        keys = study["keys"]
        for t in study["trials"]:
            run = runs[f"local:{db}#{name}/{t['number']}"]
            assert run.meta["layout"] == "sqlite-store"
            assert run.meta["optuna_study"] == name and run.meta["optuna_trial"] == t["number"]
            assert run.meta["optuna_state"] == t["state"] and run.status == STATUS[t["state"]]
            config = dict(run.config)
            attrs = config.pop("user_attrs", {})
            assert config == t["params"]  # categorical choices and ints decoded as Optuna does
            for k, v in t["params"].items():
                assert type(config[k]) is type(v), (k, config[k], v)
            assert attrs == {k: v for k, v in t["user_attrs"].items() if not isinstance(v, list)}
            assert "datetime_start" not in run.flat_config and "datetime_complete" not in run.flat_config
            assert ("datetime_start" in run.meta) == t["started"]
            if t["values"] is None:
                assert run.summary == {}
            else:
                assert set(run.summary) == set(keys[:len(t["values"])])
                for key, v in zip(keys, t["values"], strict=False):
                    assert _same(run.summary[key], v), (name, t["number"], key)
            if t["intermediate"]:
                steps, values, _ = run.series(keys[0])
                assert list(steps) == sorted(t["intermediate"])
                for s, v in zip(steps, values, strict=True):
                    assert _same(float(v), t["intermediate"][int(s)])
            elif t["values"] is not None:  # no training axis: the final value(s) at step 0
                for key, v in zip(keys, t["values"], strict=False):
                    steps, values, _ = run.series(key)
                    assert list(steps) == [0.0] and _same(float(values[0]), v)
            else:
                assert run.metric_keys() == []
            goals = run.meta["goals"]
            for key, d in zip(keys, study["direction"], strict=True):
                assert goals[key]["goal"] == {"MINIMIZE": "min", "MAXIMIZE": "max"}[d]
                assert goals[key]["source"] == "optuna study_directions"
            assert goals[keys[0]].get("headline") is True
    assert hash_tree(db.parent) == before


def test_states_are_said_in_notes(store):
    db, _oracle, before = store
    runs = _runs(f"local:{db}")
    notes = {a.rsplit("#", 1)[1]: " | ".join(r.fidelity) for a, r in runs.items()}
    assert "pruned at step 1" in notes["tune/2"]
    assert "state FAIL" in notes["tune/3"]
    assert "state RUNNING as stored" in notes["tune/4"]
    assert "WAITING: enqueued, never started" in notes["tune/6"]
    assert "objective name accuracy from the study system attr study:metric_names" in notes["acc/0"]
    assert "not scalar, not read: curve" in notes["tune/0"]
    assert hash_tree(db.parent) == before


def test_ls_json_lists_every_trial_with_its_points(store, capsys):
    db, oracle, before = store
    rows = _json_out(capsys, ["ls", str(db), "--format", "json"])
    by_name = {row["address"].rsplit("#", 1)[1]: row for row in rows}
    assert len(by_name) == 13
    for name, study in oracle.items():
        for t in study["trials"]:
            row = by_name[f"{name}/{t['number']}"]
            assert row["status"] == STATUS[t["state"]]
            points = {k["key"]: k["points"] for k in row["keys"]}
            if t["intermediate"]:
                assert points == {study["keys"][0]: len(t["intermediate"])}
            elif t["values"] is not None:
                assert points == dict.fromkeys(study["keys"], 1)
            else:
                assert points == {}
    assert hash_tree(db.parent) == before


def _best_at(oracle_trials: list[dict], step: float, goal: str) -> int:
    at = {t["number"]: t["intermediate"][int(step)] for t in oracle_trials
          if int(step) in t["intermediate"] and not math.isnan(t["intermediate"][int(step)])}
    return (min if goal == "min" else max)(at, key=at.get)


def test_rank_uses_the_declared_direction(store, capsys):
    db, oracle, before = store
    out = _json_out(capsys, ["rank", str(db), "--metric", "value", "--format", "json"])
    m = out["metrics"][0]
    assert m["metric"] == "value" and m["goal"] == "min"
    assert m["direction"] == {"goal": "min", "reason": "optuna study_directions", "source": "declared"}
    step = m["order"][0]["step"]
    best = m["order"][0]["points"][0]["address"]
    assert best.endswith(f"#tune/{_best_at(oracle['tune']['trials'], step, 'min')}")
    # the pruned trial stopped before the common step: left out, not read at its own last point
    assert any(r["address"].endswith("#tune/2") for r in m["not_reached"])

    out = _json_out(capsys, ["rank", str(db), "--metric", "accuracy", "--format", "json"])
    m = out["metrics"][0]
    assert m["goal"] == "max" and m["direction"]["source"] == "declared"
    assert m["order"][0]["points"][0]["address"].endswith("#acc/1")  # 0.86
    assert hash_tree(db.parent) == before


def test_a_trial_is_addressable_and_diffable(store, capsys):
    db, _oracle, before = store
    src = open_source(f"local:{db}#tune/1")
    refs = src.list_runs()
    assert [r.address for r in refs] == [f"local:{db}#tune/1"]
    assert src.load_run(refs[0]).config["opt"] == "sgd"
    out = _json_out(capsys, ["diff", f"local:{db}#tune/0", f"local:{db}#tune/5", "--metric", "value",
                             "--format", "json"])
    assert out["metric"] == "value"
    assert hash_tree(db.parent) == before


def test_trials_of_one_config_are_seeds_of_one_arm(tmp_path, capsys):
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    db = tmp_path / "seeds.db"
    study = optuna.create_study(study_name="st", storage=f"sqlite:///{db}", direction="minimize")
    dists = {"lr": FloatDistribution(1e-3, 1.0, log=True), "seed": IntDistribution(0, 9)}
    for lr in (0.1, 0.01):
        for seed in (0, 1, 2):
            study.enqueue_trial({"lr": lr, "seed": seed})
            trial = study.ask(dists)
            for step in range(3):
                trial.report(lr * 10 / (step + 1) + seed * 0.01, step)
            study.tell(trial, lr * 2 + seed * 0.01)
    refs = open_source(f"local:{db}").list_runs()
    assert len({r.run_id for r in refs}) == len(refs)
    out = _json_out(capsys, ["diff", f"local:{db}#st/0", f"local:{db}#st/3", "--metric", "value",
                             "--format", "json"])
    assert out["variance_a"]["n"] == 3 and out["variance_b"]["n"] == 3


def test_detect_names_the_store_not_its_file_name(store, tmp_path):
    db, _oracle, _before = store
    renamed = tmp_path / "hpo-results.sqlite3"
    shutil.copy(db, renamed)
    claims = collect_claims(str(renamed))
    assert claims[0].spec.name == "local" and "Optuna study store" in claims[0].claim.reason
    assert len(_runs(f"local:{renamed}")) == 13
    # a file with the name and no SQLite inside is nobody's
    fake = tmp_path / "optuna.db"
    fake.write_text("step,loss\n0,1.0\n")
    assert sqlite_store.claim_file(str(fake)) is None


def test_a_study_store_beside_logs_keeps_the_logs(store, tmp_path):
    db, _oracle, _before = store
    shutil.copy(db, tmp_path / "optuna.db")
    (tmp_path / "metrics.csv").write_text("step,loss\n0,1.0\n1,0.5\n")
    runs = _runs(f"local:{tmp_path}")
    layouts = sorted({r.meta["layout"] for r in runs.values()})
    assert layouts == ["files", "sqlite-store"] and len(runs) == 14


def test_a_study_store_without_trials_says_so(tmp_path):
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    optuna.create_study(study_name="nothing-yet", storage=f"sqlite:///{tmp_path / 'new.db'}")
    before = hash_tree(tmp_path)
    runs = _runs(f"local:{tmp_path / 'new.db'}")
    (run,) = runs.values()
    assert run.metric_keys() == [] and any("Optuna study store with no trial" in n for n in run.fidelity)
    with pytest.raises(InputError):  # in a folder walk it is no run
        open_source(f"local:{tmp_path}")
    assert hash_tree(tmp_path) == before


# -- older schemas, written by the old releases themselves ---------------------------------------


def _num(v: float | str | None) -> float | None:
    return float(v) if isinstance(v, str) else v


@pytest.mark.parametrize("version", sorted(p.name for p in SCHEMAS.iterdir() if p.is_dir()))
def test_old_schemas_read_as_that_optuna_read_them(version):
    folder = SCHEMAS / version
    expected = json.loads((folder / "expected.json").read_text())
    before = hash_tree(folder)
    runs = _runs(f"local:{folder / expected['file']}")
    assert len(runs) == sum(len(s["trials"]) for s in expected["studies"].values())
    for name, study in expected["studies"].items():
        for t in study["trials"]:
            run = runs[f"local:{folder / expected['file']}#{name}/{t['number']}"]
            assert run.status == STATUS[t["state"]] and run.meta["optuna_version"] == expected["optuna_version"]
            config = dict(run.config)
            assert config.pop("user_attrs", {}) == {k: v for k, v in t["user_attrs"].items()
                                                    if not isinstance(v, list)}
            assert config == t["params"]
            value = _num(t["value"])
            assert _same(run.summary.get("value"), value)
            assert run.meta["goals"]["value"]["goal"] == {"MINIMIZE": "min", "MAXIMIZE": "max"}[study["direction"]]
            steps, values, _ = run.series("value")
            if t["intermediate"]:
                assert [[int(s), float(v)] for s, v in zip(steps, values, strict=True)] == \
                    [[s, _num(v)] for s, v in t["intermediate"]]
            elif value is not None:
                assert list(steps) == [0.0] and _same(float(values[0]), value)
            if t["state"] == "PRUNED":
                assert any(n.startswith("pruned at step 2") for n in run.fidelity)
            if t["state"] == "FAIL":
                assert any(n.startswith(("failed: ", "state FAIL")) for n in run.fidelity)
    assert hash_tree(folder) == before


# -- real stores from public repositories --------------------------------------------------------

REAL_SAMPLES = sorted(p.name for p in REAL.iterdir() if (p / "expected.json").is_file()) \
    if REAL.is_dir() else []


@pytest.mark.parametrize("slug", REAL_SAMPLES)
def test_real_optuna_stores(slug, capsys):
    folder = REAL / slug
    expected = json.loads((folder / "expected.json").read_text())
    db = folder / expected["file"]
    before = hash_tree(folder)
    runs = _runs(f"local:{db}")
    assert len(runs) == sum(s["n_trials"] for s in expected["studies"].values())
    for name, study in expected["studies"].items():
        mine = {a: r for a, r in runs.items() if a.startswith(f"local:{db}#{name}/")}
        assert len(mine) == study["n_trials"]
        states: dict[str, int] = {}
        for r in mine.values():
            states[r.meta["optuna_state"]] = states.get(r.meta["optuna_state"], 0) + 1
        assert states == study["states"]
        goal = {"MINIMIZE": "min", "MAXIMIZE": "max"}[study["directions"][0]]
        key = "value" if len(study["directions"]) == 1 else "value_0"
        names = {p for r in mine.values() for p in r.config if p != "user_attrs"}
        assert names == set(study["param_names"])
        with_points = 0
        for t in study["trials"]:
            run = mine[f"local:{db}#{name}/{t['number']}"]
            config = {k: v for k, v in run.config.items() if k != "user_attrs"}
            assert config == t["params"], (name, t["number"])
            assert run.status == STATUS[t["state"]]
            assert [run.summary[k] for k in sorted(run.summary)] == t["values"] or \
                (len(t["values"]) == 1 and run.summary.get(key) == t["values"][0])
            assert run.meta["goals"][key]["goal"] == goal
            n = t["intermediate_count"]
            if n:
                with_points += 1
                steps, values, _ = run.series(key)
                assert len(steps) == n
                assert [steps[-1], values[-1]] == t["last_intermediate"]
            if "datetime_complete" in t:
                assert run.meta.get("datetime_complete") == t["datetime_complete"]
        assert with_points == study["trials_with_intermediate"]
        complete = [r for r in mine.values() if r.meta["optuna_state"] == "COMPLETE"]
        pick = (min if goal == "min" else max)(complete, key=lambda r: r.summary[key])
        best = study["best_complete_trial"]
        assert pick.meta["optuna_trial"] == best["number"] and pick.summary[key] == best["value"]
    rows = _json_out(capsys, ["ls", str(db), "--format", "json"])
    assert len(rows) == len(runs)
    assert sum(k["points"] for row in rows for k in row["keys"] if row["keys"]) >= sum(
        s["intermediate_total"] for s in expected["studies"].values())
    assert hash_tree(folder) == before


# -- generic key/step/value tables ------------------------------------------------------------------


def _sqlite(path: Path, *statements: str, rows: dict[str, list[tuple]] | None = None) -> Path:
    conn = sqlite3.connect(path)
    for s in statements:
        conn.execute(s)
    for table, values in (rows or {}).items():
        marks = ",".join("?" * len(values[0]))
        conn.executemany(f"INSERT INTO {table} VALUES ({marks})", values)
    conn.commit()
    conn.close()
    return path


def test_a_key_step_value_table_with_run_ids(tmp_path):
    rows = [(rid, key, step, (1.0 if key == "loss" else 0.1) / (step + 1) + (0.5 if rid == "b" else 0.0),
             1_700_000_000.0 + step) for rid in ("a", "b") for step in range(4) for key in ("loss", "acc")]
    rows.append(("a", "loss", 4, "not a number", 1_700_000_004.0))
    db = _sqlite(tmp_path / "tracker.sqlite",
                 "CREATE TABLE metrics (run_id TEXT, key TEXT, step INTEGER, value REAL, timestamp REAL)",
                 "CREATE TABLE runs_meta (run_id TEXT PRIMARY KEY, owner TEXT)",
                 rows={"metrics": rows})
    before = hash_tree(tmp_path)
    runs = _runs(f"local:{db}")
    assert sorted(a.rsplit("#", 1)[1] for a in runs) == ["a", "b"]
    b = runs[f"local:{db}#b"]
    steps, values, walls = b.series("loss")
    assert list(steps) == [0, 1, 2, 3] and values[0] == pytest.approx(1.5)
    assert list(walls) == [1_700_000_000.0 + s for s in range(4)]
    a = runs[f"local:{db}#a"]
    assert a.point_count("loss") == 4 and a.point_count("acc") == 4
    assert any("1 row(s) without a key or a numeric step and value skipped" in n for n in a.fidelity)
    assert any("read as key/step/value" in n for n in a.fidelity)
    assert hash_tree(tmp_path) == before


def test_a_key_step_value_table_without_run_ids_is_the_file(tmp_path):
    db = _sqlite(tmp_path / "scalars.db", "CREATE TABLE scalars (tag, epoch, value)",
                 rows={"scalars": [("val/acc", e, 0.5 + e / 10) for e in range(5)]})
    runs = _runs(f"local:{db}")
    assert list(runs) == [f"local:{db}"]
    run = runs[f"local:{db}"]
    assert run.point_count("val/acc") == 5 and run.last_value("val/acc") == pytest.approx(0.9)


def test_a_live_store_with_a_write_ahead_log_is_read_from_a_copy(tmp_path):
    db = tmp_path / "live.db"
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA wal_autocheckpoint=0")
    conn.execute("CREATE TABLE metrics (run TEXT, metric TEXT, iteration INTEGER, value REAL)")
    conn.executemany("INSERT INTO metrics VALUES (?,?,?,?)", [("r1", "loss", i, 1.0 / (i + 1)) for i in range(6)])
    conn.commit()
    try:
        assert os.path.getsize(str(db) + "-wal") > 0
        before = hash_tree(tmp_path)
        run = _runs(f"local:{db}")[f"local:{db}#r1"]
        assert run.point_count("loss") == 6
        assert any("write-ahead log present" in n for n in run.fidelity)
        assert hash_tree(tmp_path) == before
    finally:
        conn.close()


# -- what this layout must not read ----------------------------------------------------------------


def test_an_unrelated_sqlite_file_is_not_understood(tmp_path, capsys):
    db = _sqlite(tmp_path / "shop.db", "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)",
                 "CREATE TABLE orders (id INTEGER, user_id INTEGER, total REAL)",
                 rows={"users": [(1, "ann")], "orders": [(1, 1, 9.5)]})
    before = hash_tree(tmp_path)
    rows = _json_out(capsys, ["ls", str(db), "--format", "json"])
    assert len(rows) == 1 and rows[0]["keys"] == [] and rows[0]["status"] == "unknown"
    said = " | ".join(rows[0]["fidelity"])
    assert "not understood: SQLite store with tables orders, users" in said
    claims = collect_claims(str(db))
    assert "not understood" in claims[0].claim.reason
    # beside logs, it is not a run: the folder's runs are the logs
    (tmp_path / "metrics.csv").write_text("step,loss\n0,1.0\n1,0.5\n")
    runs = _runs(f"local:{tmp_path}")
    assert [r.meta["layout"] for r in runs.values()] == ["files"]
    unread = open_source(f"local:{tmp_path}").unread_files()
    assert unread[str(db)].startswith("SQLite store with tables orders, users")
    os.remove(tmp_path / "metrics.csv")
    assert hash_tree(tmp_path) == before


def test_a_damaged_sqlite_file_is_one_line_no_traceback(tmp_path, store, capsys):
    db, _oracle, _before = store
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"SQLite format 3\x00" + bytes(range(256)) * 8)
    truncated = tmp_path / "truncated.db"
    truncated.write_bytes(db.read_bytes()[:6000])
    # a sound schema over damaged data pages: claimed, then unreadable when its rows are read
    pages = _sqlite(tmp_path / "pages.db", "CREATE TABLE scalars (tag TEXT, step INTEGER, value REAL)",
                    rows={"scalars": [("loss", i, 1.0 / (i + 1)) for i in range(20000)]})
    data = bytearray(pages.read_bytes())
    data[8192:len(data) - 4096] = bytes(range(256)) * ((len(data) - 12288) // 256) + \
        bytes((len(data) - 12288) % 256)
    pages.write_bytes(bytes(data))
    before = hash_tree(tmp_path)
    for path in (garbage, truncated, pages):
        code = main(["ls", str(path), "--format", "json"])
        out = capsys.readouterr()
        assert "Traceback" not in out.err + out.out
        if code == 0:
            rows = json.loads(out.out)
            notes = [n for row in rows for n in row["fidelity"] if "not understood" in n
                     or "unreadable" in n or "a damaged SQLite file" in n]
            assert notes and all("\n" not in n for n in notes), rows
        else:
            assert code == 2 and "\n" not in out.err.strip().splitlines()[0]
    assert hash_tree(tmp_path) == before


def test_many_tables_are_listed_bounded(tmp_path):
    n = sqlite_store.MAX_TABLES + 40
    db = _sqlite(tmp_path / "wide.db", *[f"CREATE TABLE t{i:04d} (a INTEGER)" for i in range(n)])
    runs = sqlite_store.claim_file(str(db))
    assert runs and runs[0].sniffs["kind"] == "unknown"
    assert runs[0].reason.startswith("not understood: SQLite store with tables t0000, t0001")
    assert f"and {n - sqlite_store.MAX_SHOWN} more" in runs[0].reason


def test_mlflow_and_trackio_stores_keep_their_readers():
    for path, adapter, layout in ((MLFLOW_DB, "mlflow", None), (TRACKIO_DB, "local", "trackio")):
        if not path.is_file():
            pytest.skip(f"{path} not in this checkout")
        before = hash_tree(path)
        assert sqlite_store.claim_file(str(path)) is None
        best = collect_claims(str(path))[0]
        assert best.spec.name == adapter, best
        if layout:
            assert best.claim.reason.startswith(layout), best.claim.reason
        assert hash_tree(path) == before


def test_decode_param_as_optuna_does():
    cat = json.dumps({"name": "CategoricalDistribution", "attributes": {"choices": CHOICES}})
    for i, choice in enumerate(CHOICES):
        got, kind = sqlite_store.decode_param(float(i), cat)
        assert got == choice and type(got) is type(choice) and kind == "categorical"
    assert sqlite_store.decode_param(9.0, cat)[0] == 9.0  # out of its choices: kept as stored
    assert sqlite_store.decode_param(4.0, '{"name": "IntUniformDistribution", "attributes": '
                                          '{"low": 1, "high": 5}}') == (4, "int")
    assert sqlite_store.decode_param(0.25, '{"type": "float", "low": 0, "high": 1}') == (0.25, "float")
    assert sqlite_store.decode_param(1.0, '{"type": "categorical", "choices": ["a", "b"]}') == ("b", "categorical")
    assert sqlite_store.decode_param(2.0, "not json")[0] == 2.0


# -- the layout contract (rundiff_core.testing) --------------------------------------------------------


class TestSqliteStoreContract(LayoutContract):
    layout = "sqlite-store"

    @pytest.fixture
    def written_layout(self, tmp_path) -> WrittenLayout:
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        study = optuna.create_study(study_name="s", storage=f"sqlite:///{tmp_path / 'study.db'}",
                                    direction="maximize")
        for x in (0.2, 0.4, 0.8):
            trial = study.ask({"x": FloatDistribution(0.0, 1.0)})
            for step in range(3):
                trial.report(x * (step + 1), step)
            study.tell(trial, x * 3)
        last = study.trials[-1]  # runs of one file share it: the contract keeps the last listed
        return WrittenLayout(str(tmp_path), "sqlite-store", {"study.db": {
            "points": {"value": 3}, "last": {"value": last.intermediate_values[2]},
            "config": {"x": last.params["x"]}, "goals": {"value": "max"}}}, n_runs=1)
