"""The MLflow adapter on a file store and a sqlite store, both written by the real mlflow client.

Every reader is checked against what the client logged, and the direct readers (metric files,
read-only SQL) against `MlflowClient.get_metric_history` point by point. HTTP: test_mlflow_server.py.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import sqlite3
import sys

import numpy as np
import pytest
from mlflow_server import CONFIG, GIT_SHA, PARAMS, T0, client_history, write_runs

from rundiff_core.cli import main
from rundiff_core.demo import write_journal_run
from rundiff_core.detect import sniff_path
from rundiff_core.errors import (
    AddressError,
    InputError,
    MissingDependencyError,
    RundiffError,
    RunNotFoundError,
)
from rundiff_core.redact import REDACTED
from rundiff_core.resolve import load_run, load_runs, open_source
from rundiff_core.testing import AdapterContract, WrittenRun, assert_history_equal, hash_tree

KINDS = ("file", "sqlite")


def _make_store(kind: str, base) -> tuple[str, object]:
    base.mkdir(parents=True, exist_ok=True)
    if kind == "file":
        path = str(base / "mlruns")
        uri = "file://" + path
    else:
        path = str(base / "mlflow.db")
        uri = "sqlite:///" + path
    return path, write_runs(uri)


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    """One store of each kind, written once per module (creating a sqlite store takes seconds)."""
    base = tmp_path_factory.mktemp("mlflow-stores")
    return {kind: _make_store(kind, base / kind) for kind in KINDS}


@pytest.fixture(params=KINDS)
def store(request, stores):
    path, logged = stores[request.param]
    return request.param, path, logged


def _address(path: str, selector: str = "") -> str:
    return f"mlflow:{path}#{selector}" if selector else f"mlflow:{path}"


def _written(kind: str, path: str, logged) -> WrittenRun:
    base = logged.runs["base"]
    return WrittenRun(
        path=path,
        address=_address(path, "exp-a/base"),
        history=base.history,
        config=CONFIG,
        summary={"loss": base.last("loss"), "eval/acc": base.last("eval/acc")},
        run_id=base.run_id,
        sniff_path=path,
    )


class TestMlflowFileStoreContract(AdapterContract):
    adapter = "mlflow"

    @pytest.fixture
    def written_run(self, stores) -> WrittenRun:
        path, logged = stores["file"]
        return _written("file", path, logged)

    @pytest.fixture
    def corrupt_run(self, stores, tmp_path) -> str:
        path, logged = stores["file"]
        copy = tmp_path / "mlruns"
        shutil.copytree(path, copy)
        run_dir = next(copy.glob(f"*/{logged.runs['base'].run_id}"))
        with open(run_dir / "metrics" / "loss", "a") as fh:
            fh.write("garbage line here\n1700000000000 not-a-number 3\n")
        (next(copy.glob(f"*/{logged.runs['parent'].run_id}")) / "meta.yaml").write_text("{: [")
        return _address(str(copy), "exp-a")


class TestMlflowSqliteContract(AdapterContract):
    adapter = "mlflow"

    @pytest.fixture
    def written_run(self, stores) -> WrittenRun:
        path, logged = stores["sqlite"]
        return _written("sqlite", path, logged)

    @pytest.fixture
    def corrupt_run(self, stores, tmp_path) -> str:
        path, _logged = stores["sqlite"]
        copy = tmp_path / "mlflow.db"
        data = open(path, "rb").read()
        half = len(data) // 2  # the schema (page 1) survives, table pages beyond do not
        copy.write_bytes(data[:half] + b"\x5a" * (len(data) - half))
        return _address(str(copy), "exp-a")


# -- the points: as logged, and as the client returns them ----------------------------------------
def test_every_run_equals_what_was_logged(store):
    kind, path, logged = store
    for label, expected in logged.runs.items():
        run = load_run(_address(path, expected.run_id))
        assert_history_equal(run.history(), expected.history, ordered=False)
        assert run.run_id == expected.run_id, label


def test_direct_reader_equals_mlflow_client(store):
    """Identical points, in the client's order: metric files / SQL select vs get_metric_history."""
    kind, path, logged = store
    for expected in logged.runs.values():
        got = load_run(_address(path, expected.run_id)).history()
        ref = client_history(logged.uri, expected.run_id)
        if kind == "sqlite":  # the client hands back the clamped ±max-float; rundiff restores ±inf
            big = np.abs(ref["value"].to_numpy()) == np.finfo("float64").max
            ref.loc[big, "value"] = np.copysign(np.inf, ref.loc[big, "value"].to_numpy())
        got = got.assign(key=got["key"].astype(str))
        assert_history_equal(got, ref, ordered=True)


def test_client_reader_through_rundiff_agrees_with_direct(store, monkeypatch):
    kind, path, logged = store
    direct = load_runs(_address(path, "exp-a"))
    monkeypatch.setenv("RUNDIFF_MLFLOW_READER", "client")
    via_client = load_runs(_address(path, "exp-a"))
    assert [r.run_id for r in direct] == [r.run_id for r in via_client]
    assert {r.meta["reader"] for r in via_client} == {"client"}
    for a, b in zip(direct, via_client, strict=True):
        assert_history_equal(a.history(), b.history(), ordered=True)
        assert a.config == b.config and a.meta["tags"] == b.meta["tags"]
        assert a.status == b.status and a.name == b.name
        assert a.summary.keys() == b.summary.keys()


def test_nan_and_inf_come_back_as_logged(store):
    kind, path, logged = store
    run = load_run(_address(path, logged.runs["base"].run_id))
    w = run.history(["weird"])
    v = w["value"].tolist()
    assert math.isnan(v[0]) and v[1] == math.inf and v[2] == -math.inf and v[3] == 1.5
    assert w["step"].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    if kind == "sqlite":
        # the quirk is real: the store holds 0 + is_nan and ±max-float
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        raw = con.execute("SELECT step, value, is_nan FROM metrics WHERE key='weird' AND run_uuid=? "
                          "ORDER BY step", (run.run_id,)).fetchall()
        con.close()
        assert raw[0] == (0, 0.0, 1) and raw[1][1] == np.finfo("float64").max
        assert any("restored to ±inf" in n for n in run.fidelity)


def test_duplicate_step_zero_points_are_kept_and_reported(store):
    kind, path, logged = store
    run = load_run(_address(path, logged.runs["base"].run_id))
    h = run.history(["no_step"])
    assert h["step"].tolist() == [0.0, 0.0, 0.0]
    assert h["value"].tolist() == [0.3, 0.2, 0.1]  # logged (time) order
    note = next(n for n in run.fidelity if n.startswith("duplicate steps kept"))
    assert "no_step: 3 points" in note and "step 0" in note


def test_run_metadata(store):
    kind, path, logged = store
    base = logged.runs["base"]
    run = load_run(_address(path, "exp-a/base"))
    assert run.name == "base" and run.adapter == "mlflow" and run.status == "finished"
    assert run.run_id == base.run_id
    assert run.address == f"mlflow:{path}#{base.run_id}"
    for key, value in CONFIG.items():
        assert run.config[key] == value and type(run.config[key]) is type(value), key
    assert run.config["api_key"] == REDACTED and run.meta["params_raw"]["api_key"] == REDACTED
    assert {k: v for k, v in run.meta["params_raw"].items() if k != "api_key"} == {
        k: v for k, v in PARAMS.items() if k != "api_key"}
    assert run.meta["tags"]["team"] == "vision" and run.meta["tags"]["hf_token"] == REDACTED
    assert run.seed == 3 and run.git_sha == GIT_SHA
    assert run.meta["experiment_name"] == "exp-a"
    assert run.meta["experiment_id"] == logged.experiments["exp-a"]
    assert run.meta["start_time"] == T0 / 1000 and run.meta["end_time"] == (T0 + 60_000) / 1000
    assert run.meta["store_kind"] == kind and run.meta["reader"] == kind
    assert run.summary["loss"] == base.last("loss")
    assert math.isnan(run.summary["weird"]) is False  # latest = step 4 (-0.0)


def test_nested_runs_carry_their_parent(store):
    kind, path, logged = store
    child = load_run(_address(path, "exp-a/child"))
    parent = load_run(_address(path, "exp-a/parent"))
    assert child.meta["parent_run_id"] == parent.run_id
    assert parent.meta["parent_run_id"] is None


def test_statuses_map_and_crashes_become_events(store):
    kind, path, logged = store
    got = {label: load_run(_address(path, logged.runs[label].run_id))
           for label in ("failed", "killed", "running")}
    assert {k: r.status for k, r in got.items()} == {
        "failed": "crashed", "killed": "crashed", "running": "running"}
    assert [e.kind for e in got["failed"].events] == ["crashed"]
    assert [e.kind for e in got["killed"].events] == ["killed"]
    assert got["killed"].meta["mlflow_status"] == "KILLED" and not got["running"].events


# -- addresses ----------------------------------------------------------------------------------
def test_selectors(store, monkeypatch):
    kind, path, logged = store
    ids = {label: r.run_id for label, r in logged.runs.items()}
    exp_a = logged.experiments["exp-a"]
    ids_in = lambda raw: {r.run_id for r in open_source(raw).list_runs()}  # noqa: E731
    a_runs = {i for label, i in ids.items() if label != "other-base"}
    assert ids_in(_address(path, ids["child"])) == {ids["child"]}
    assert ids_in(_address(path, "exp-a")) == a_runs
    assert ids_in(_address(path, exp_a)) == a_runs  # by id
    assert ids_in(_address(path, "exp-a/base")) == {ids["base"]}
    assert ids_in(_address(path, "exp-b/base")) == {ids["other-base"]}
    assert ids_in(_address(path, f"exp-a/{ids['parent']}")) == {ids["parent"]}
    assert ids_in(_address(path, "exp-a/twin")) == {ids["twin1"], ids["twin2"]}
    assert ids_in(_address(path)) == set(ids.values())
    uri = logged.uri
    assert ids_in(f"mlflow:{uri}#exp-a/base") == {ids["base"]}
    with pytest.raises(RunNotFoundError, match="no MLflow run or experiment 'nope'"):
        open_source(_address(path, "nope")).list_runs()
    with pytest.raises(RunNotFoundError):
        open_source(_address(path, "exp-a/nope")).list_runs()
    # an experiment named like another's id: both readings are reported, none is guessed
    with pytest.raises(AddressError, match="ambiguous"):
        open_source(_address(path, logged.experiments["exp-b"])).list_runs()
    # the default store: MLFLOW_TRACKING_URI, else ./mlruns or ./mlflow.db
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    assert ids_in("mlflow:exp-a/base") == {ids["base"]}
    assert ids_in(f"mlflow:{ids['child']}") == {ids["child"]}
    monkeypatch.delenv("MLFLOW_TRACKING_URI")
    monkeypatch.chdir(os.path.dirname(path))
    assert ids_in("mlflow:exp-b/base") == {ids["other-base"]}
    assert ids_in(f"mlflow:#{ids['child']}") == {ids["child"]}


def test_relative_sqlite_uri_and_bare_sqlite_address(stores, monkeypatch):
    path, logged = stores["sqlite"]
    monkeypatch.chdir(os.path.dirname(path))
    run = load_run("mlflow:sqlite:///mlflow.db#exp-a/base")
    assert run.run_id == logged.runs["base"].run_id
    bare = load_run("sqlite:///mlflow.db#exp-a/base")  # no scheme: claimed by the parse hook
    assert bare.run_id == run.run_id and bare.adapter == "mlflow"


def test_sniffing(stores, tmp_path):
    fpath, flogged = stores["file"]
    spath, slogged = stores["sqlite"]
    assert sniff_path(fpath).spec.name == "mlflow"
    assert sniff_path(os.path.dirname(fpath)).claim.locator == fpath  # a folder holding mlruns/
    assert sniff_path(spath).spec.name == "mlflow"
    assert sniff_path(os.path.dirname(spath)).claim.locator == spath  # holding mlflow.db
    run_id = flogged.runs["child"].run_id
    run_dir = next(p for p in (os.path.join(fpath, d, run_id) for d in os.listdir(fpath))
                   if os.path.isdir(p))
    winner = sniff_path(run_dir)
    assert winner.claim.locator == f"{fpath}#{run_id}"
    assert load_run(run_dir).run_id == run_id
    exp_dir = os.path.dirname(run_dir)
    assert {r.run_id for r in load_runs(exp_dir)} == {
        r.run_id for r in flogged.runs.values() if r.experiment == "exp-a"}
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.commit()
    from rundiff_adapters.mlflow import rundiff_sniff_path

    assert rundiff_sniff_path(path=str(other)) is None
    assert rundiff_sniff_path(path=str(tmp_path)) is None


def test_not_a_store_is_a_clear_error(tmp_path, monkeypatch):
    (tmp_path / "plain").mkdir()
    with pytest.raises(InputError, match="not an MLflow store"):
        open_source(f"mlflow:{tmp_path / 'plain'}#x")
    with pytest.raises(InputError, match="no such MLflow"):
        open_source(f"mlflow:sqlite:///{tmp_path / 'missing.db'}#x")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError, match="no MLflow store given"):
        open_source("mlflow:exp-a/base")


# -- read-only, and no mlflow package or env switch needed ------------------------------------------
def test_sqlite_read_leaves_no_side_files(stores):
    path, logged = stores["sqlite"]
    folder = os.path.dirname(path)
    before = hash_tree(folder)
    for run in load_runs(_address(path)):
        run.history()
    assert hash_tree(folder) == before  # no -journal, -wal or -shm file, no byte changed


def test_reading_needs_no_file_store_switch(stores, monkeypatch):
    path, logged = stores["file"]
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    run = load_run(_address(path, "exp-a/base"))
    assert len(run.history()) == len(logged.runs["base"].points)


def test_direct_readers_work_without_the_mlflow_package(stores, monkeypatch, capsys):
    for name in [m for m in sys.modules if m == "mlflow" or m.startswith("mlflow.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "mlflow", None)  # import mlflow → ModuleNotFoundError
    for kind in KINDS:
        path, logged = stores[kind]
        run = load_run(_address(path, "exp-a/base"))
        assert len(run.history()) == len(logged.runs["base"].points)
    with pytest.raises(MissingDependencyError, match=r"install rundiff\[mlflow\]"):
        open_source("mlflow:http://127.0.0.1:9#exp")
    monkeypatch.setenv("RUNDIFF_MLFLOW_READER", "client")
    with pytest.raises(MissingDependencyError):
        open_source(_address(stores["file"][0], "exp-a"))
    monkeypatch.delenv("RUNDIFF_MLFLOW_READER")
    assert main(["ls", "mlflow:http://127.0.0.1:9#exp"]) == 2
    err = capsys.readouterr().err
    assert "install rundiff[mlflow]" in err and "Traceback" not in err


def test_adapter_hooks_import_no_sdk():
    import subprocess

    code = ("import sys, rundiff_core.plugins as p; p.Plugins(); "
            "import rundiff_adapters.mlflow.source; print('mlflow' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# -- file-store quirks ----------------------------------------------------------------------------
def _copy_run(stores, tmp_path, label="base"):
    path, logged = stores["file"]
    copy = tmp_path / "mlruns"
    shutil.copytree(path, copy)
    run_dir = next(copy.glob(f"*/{logged.runs[label].run_id}"))
    return copy, run_dir, logged.runs[label]


def test_windows_line_ends_and_foreign_artifact_paths(stores, tmp_path):
    copy, run_dir, base = _copy_run(stores, tmp_path)
    for f in (run_dir / "metrics").rglob("*"):
        if f.is_file():
            f.write_bytes(f.read_bytes().replace(b"\n", b"\r\n"))
    meta = (run_dir / "meta.yaml").read_text()
    meta = "\n".join(
        f"artifact_uri: file:///C:/Users/someone/proj/mlruns/1/{base.run_id}/artifacts"
        if line.startswith("artifact_uri:") else line for line in meta.splitlines())
    (run_dir / "meta.yaml").write_text(meta + "\n")
    exp_meta = run_dir.parent / "meta.yaml"
    exp_meta.write_text("\n".join(
        "artifact_location: file:///d:/Projects/x/mlruns/1" if line.startswith("artifact_location")
        else line for line in exp_meta.read_text().splitlines()) + "\n")
    run = load_run(_address(str(copy), base.run_id))
    assert_history_equal(run.history(), base.history)
    assert run.meta["artifact_uri"].startswith("file:///C:/Users/someone")
    assert not [n for n in run.fidelity if "malformed" in n]


def test_old_and_dataset_lines_and_bad_lines_are_counted(stores, tmp_path):
    copy, run_dir, base = _copy_run(stores, tmp_path)
    (run_dir / "metrics" / "mixed").write_text(
        "1700000000000 0.5\n"  # MLflow < 1.x: no step → step 0
        "1700000000001 0.25 1\n"
        "1700000000002 0.125 2 train-ds 1a2b3c\n"  # dataset-scoped metric line
        "not a metric line\n"
        "1700000000003 0.0625 3\n")
    run = load_run(_address(str(copy), base.run_id))
    h = run.history(["mixed"])
    assert h["step"].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert h["value"].tolist() == [0.5, 0.25, 0.125, 0.0625]
    assert h["wall_time"].tolist()[0] == 1_700_000_000.0
    assert any("mixed: 1 malformed line(s) skipped" in n for n in run.fidelity)
    # the other keys still took the fast path and are complete
    assert len(run.history(["loss"])) == 300


def test_cut_short_last_line_is_skipped_and_noted(stores, tmp_path):
    copy, run_dir, base = _copy_run(stores, tmp_path)
    with open(run_dir / "metrics" / "loss", "ab") as fh:
        fh.write(b"1700000099999 0.12")  # a write cut short: no newline
    run = load_run(_address(str(copy), base.run_id))
    assert len(run.history(["loss"])) == 300
    assert any("loss: incomplete last line skipped" in n for n in run.fidelity)


def test_unreadable_run_meta_keeps_the_metrics(stores, tmp_path):
    copy, run_dir, base = _copy_run(stores, tmp_path, "parent")
    (run_dir / "meta.yaml").write_text("{: [")
    runs = {r.run_id: r for r in load_runs(_address(str(copy), "exp-a"))}
    run = runs[base.run_id]
    assert run.status == "unknown" and any("meta.yaml is not valid YAML" in n for n in run.fidelity)
    assert_history_equal(run.history(), base.history)


def test_unknown_run_is_a_typed_error(store):
    kind, path, logged = store
    src = open_source(_address(path, "exp-a"))
    from rundiff_core.model import RunRef

    with pytest.raises(RunNotFoundError):
        src.load_run(RunRef("0" * 32, "mlflow:x#" + "0" * 32))
    with pytest.raises(RundiffError):
        src.load_run(RunRef("../../etc", "mlflow:x#../../etc"))


# -- real data --------------------------------------------------------------------------------------
def test_realdata_windows_mlruns(realdata, tmp_path):
    top = realdata / "mlflow-aiops-mnist"
    before = hash_tree(top / "mlruns")
    winner = sniff_path(str(top))  # mlruns/ beats the Lightning CSV logs next to it
    assert winner.spec.name == "mlflow" and winner.claim.locator == str(top / "mlruns")
    runs = load_runs(str(top))
    assert len(runs) == 6
    assert all(r.meta["artifact_uri"].startswith("file:///d:/") for r in runs)
    deleted = [r for r in runs if r.meta["lifecycle_stage"] == "deleted"]
    assert len(deleted) == 2 and all(any("deleted in MLflow" in n for n in r.fidelity) for r in deleted)
    assert {r.status for r in runs} == {"finished", "crashed"}
    assert hash_tree(top / "mlruns") == before
    # identical to the MLflow client (on a copy: its FileStore creates a .trash folder)
    copy = tmp_path / "mlruns"
    shutil.copytree(top / "mlruns", copy)
    for run in runs:
        ref = client_history("file://" + str(copy), run.run_id)
        got = run.history()
        assert_history_equal(got.assign(key=got["key"].astype(str)), ref, ordered=True)
        assert isinstance(run.config["lr"], float) and run.config["amsgrad"] is False
        assert run.config["epochs"] == int(run.meta["params_raw"]["epochs"])
        assert run.config["betas"] == "(0.9, 0.999)" and run.config["foreach"] is None


# -- the command line ------------------------------------------------------------------------------
def test_cli_ls_json(stores, capsys):
    path, logged = stores["sqlite"]
    assert main(["ls", _address(path, "exp-a/base"), "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 1 and rows[0]["adapter"] == "mlflow"
    keys = {k["key"]: k for k in rows[0]["keys"]}
    assert keys["loss"]["points"] == 300 and keys["loss"]["last_step"] == 299
    assert keys["no_step"]["points"] == 3
    assert any("duplicate steps kept" in n for n in rows[0]["fidelity"])


@pytest.mark.parametrize("kind", KINDS)
def test_tracking_uri_option_is_declared_by_the_mlflow_plugin(stores, kind, monkeypatch, capsys):
    """`--tracking-uri` comes from the mlflow adapter's spec and sets MLFLOW_TRACKING_URI, which
    an `mlflow:` address without a store then reads; without the plugin there is no such option."""
    from rundiff_core import cli
    from rundiff_core.plugins import Plugins, get_plugins, set_plugins

    path, logged = stores[kind]
    uri = path if kind == "file" else f"sqlite:///{path}"
    [option] = get_plugins().registry.by_name("mlflow").options
    assert (option.flag, option.env) == ("--tracking-uri", "MLFLOW_TRACKING_URI")
    assert "tracking" not in open(cli.__file__).read().lower()  # core names no backend setting
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "placeholder")  # so teardown restores the original
    monkeypatch.delenv("MLFLOW_TRACKING_URI")
    assert main(["ls", "mlflow:#exp-a/base", "--no-points"]) == 2  # no store anywhere
    capsys.readouterr()
    assert main(["--tracking-uri", uri, "ls", "mlflow:#exp-a/base", "--format", "json"]) == 0
    [row] = json.loads(capsys.readouterr().out)
    assert row["run_id"] == logged.runs["base"].run_id and row["adapter"] == "mlflow"
    assert {k["key"]: k["points"] for k in row["keys"]}["loss"] == 300
    assert os.environ["MLFLOW_TRACKING_URI"] == uri
    monkeypatch.setenv("RUNDIFF_DISABLE_PLUGINS", "mlflow")
    previous = set_plugins(Plugins(entry_points=False))
    try:
        with pytest.raises(SystemExit) as stop:
            main(["--tracking-uri", uri, "adapters"])
        err = capsys.readouterr().err
        assert stop.value.code == 2 and err.startswith("usage: rundiff [-h] [--debug] COMMAND")
    finally:
        set_plugins(previous)


def test_cli_diff_mlflow_vs_journal_and_mlflow(stores, tmp_path, capsys):
    fpath, flogged = stores["file"]
    spath, _ = stores["sqlite"]
    jdir = write_journal_run(str(tmp_path / "journal-run"), config={"lr": 0.002, "epochs": 5},
                             rows=[{"step": s, "loss": 1.0 / (s + 1)} for s in range(300)],
                             final={"status": "finished"})
    assert main(["diff", _address(fpath, "exp-a/base"), f"journal:{jdir}", "--metric", "loss",
                 "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert "lr" in json.dumps(out)
    assert main(["diff", _address(fpath, "exp-a/base"), _address(spath, "exp-a/base"),
                 "--metric", "loss"]) == 0
    assert "loss" in capsys.readouterr().out


def test_detect_project_hook(stores, tmp_path):
    from rundiff_adapters.mlflow import rundiff_detect_project

    fpath, _ = stores["file"]
    claim = rundiff_detect_project(cwd=os.path.dirname(fpath), environ={})
    assert claim.address == f"mlflow:{fpath}"
    remote = rundiff_detect_project(cwd=str(tmp_path), environ={"MLFLOW_TRACKING_URI": "http://h:5000"})
    assert remote.address is None and "tracking server" in remote.reason
    assert rundiff_detect_project(cwd=str(tmp_path), environ={}) is None


def test_address_parsing_without_a_store_on_disk():
    from rundiff_adapters.mlflow.address import parse_locator

    loc = parse_locator("http://user:pw@127.0.0.1:5000/#exp/run", environ={})
    assert loc.store.kind == "remote" and loc.selector == "exp/run"
    assert "pw" not in loc.store.display and loc.store.uri == "http://user:pw@127.0.0.1:5000"
    assert parse_locator("databricks#/Users/me/exp", environ={}).selector == "/Users/me/exp"


def _write_seed_sweep(uri: str) -> dict[str, str]:
    """Two arms × 3 seeds in one experiment, plus a seedless run and a deleted seed, logged with
    the real client: {label: run_id}."""
    from mlflow import MlflowClient
    from mlflow.entities import Metric, Param

    client = MlflowClient(tracking_uri=uri)
    exp = client.create_experiment("sweep")
    ids = {}
    for label, lr, seed, final in [("a0", "0.1", "0", 0.50), ("a1", "0.1", "1", 0.51),
                                   ("a2", "0.1", "2", 0.49), ("b0", "0.2", "0", 0.30),
                                   ("b1", "0.2", "1", 0.31), ("b2", "0.2", "2", 0.29),
                                   ("plain", "0.1", None, 0.5), ("gone", "0.1", "3", 0.5)]:
        run = client.create_run(exp, run_name=label, start_time=T0)
        params = [Param("lr", lr), Param("optim", "adamw")]
        if seed is not None:
            params.append(Param("seed", seed))
        metrics = [Metric("loss", final + 1.0 / (s + 1), T0 + s, s) for s in range(50)]
        client.log_batch(run.info.run_id, metrics=metrics, params=params)
        client.set_terminated(run.info.run_id, "FINISHED", end_time=T0 + 1000)
        ids[label] = run.info.run_id
    client.delete_run(ids["gone"])
    return ids


@pytest.mark.parametrize("kind", KINDS)
def test_an_arm_is_the_runs_of_its_experiment_differing_only_by_seed(kind, tmp_path, capsys):
    from rundiff_core.engines.arms import load_arm

    base = tmp_path / kind
    base.mkdir()
    path = str(base / "mlruns") if kind == "file" else str(base / "mlflow.db")
    ids = _write_seed_sweep("file://" + path if kind == "file" else "sqlite:///" + path)
    source = open_source(_address(path, ids["a0"]))
    (ref,) = source.list_runs()
    assert source.seed_siblings(ref) == [ref]  # MLflow declares none: the arm rule finds them
    arm = load_arm(_address(path, ids["a0"]))
    # one rule for every backend: the experiment's runs whose params are equal once seed keys are
    # removed — a seedless repeat of the same params too (old rule: "needs a seed param") — never
    # b* (another lr) and never the deleted run
    assert sorted(r.run_id for r in arm.seeds) == sorted(ids[k] for k in ("a0", "a1", "a2", "plain"))
    assert arm.how.startswith("equal config in ")

    assert main(["diff", _address(path, ids["a0"]), _address(path, ids["b0"]), "--metric", "loss",
                 "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    # "clearly better" is only said with N>=3 seeds per arm: the arm rule made it possible
    assert report["verdict"] == "B clearly better (Δ outside 2σ across N>=3 seeds)"
    assert report["variance_a"]["n"] == 4 and report["variance_b"]["n"] == 3
    assert report["a_label"] == "lr=0.1" and report["b_label"] == "lr=0.2"
    text = json.dumps(report)
    for label in ("a1", "a2", "b1", "b2", "plain"):
        assert ids[label] in text  # every seed is traceable to its run id
    assert ids["gone"] not in text
