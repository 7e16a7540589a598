"""neptune-scale offline runs: written by the real `neptune_scale.Run(mode="offline")` client, read
back point by point from run_operations.sqlite3, plus previews, forks, resumes and live databases."""

from __future__ import annotations

import datetime as dt
import math
import os
import shutil
import sqlite3
import sys

import pytest

from rundiff_core.errors import InputError, MissingDependencyError
from rundiff_core.model import make_history
from rundiff_core.resolve import load_run, load_runs
from rundiff_core.testing import AdapterContract, WrittenRun, hash_tree

neptune_scale = pytest.importorskip("neptune_scale")
Run = neptune_scale.Run

T0 = dt.datetime(2025, 5, 1, 8, 0, tzinfo=dt.UTC)
QUIET = dict(mode="offline", project="ws/proj", enable_console_log_capture=False, source_tracking_config=None)
CONFIGS = {"parameters/lr": 0.02, "parameters/opt/name": "sgd", "parameters/layers": 6, "seed": 11,
           "config/api_token": "s3cr3t-value", "eval/best": 0.77}


def _db(logdir: str, run_id: str) -> list[str]:
    return sorted(os.path.join(logdir, d, "run_operations.sqlite3") for d in os.listdir(logdir)
                  if f"_{run_id}_" in d)


@pytest.fixture(scope="module")
def scale_runs(tmp_path_factory) -> dict:
    logdir = str(tmp_path_factory.mktemp("neptune-scale") / ".neptune")
    out: dict = {"logdir": logdir}
    points = []
    with Run(run_id="scale-main", experiment_name="exp-a", log_directory=logdir, **QUIET) as run:
        run.log_configs(CONFIGS)
        run.add_tags(["t2", "t1"])
        for i in range(30):
            step, t = 0.25 * i, T0 + dt.timedelta(seconds=i)
            loss = 1.0 / (i + 1) if i != 7 else math.nan
            acc = 0.01 * i if i != 8 else math.inf
            run.log_metrics({"train/loss": loss, "train/acc": acc}, step=step, timestamp=t)
            points += [(step, "train/loss", loss, t.timestamp()), (step, "train/acc", acc, t.timestamp())]
        run.log_string_series({"notes": "hello"}, step=1)
    s, k, v, t = zip(*points, strict=True)
    out["main"] = _db(logdir, "scale-main")[0]
    out["main_history"] = make_history(s, k, v, t)

    with Run(run_id="scale-preview", log_directory=logdir, **QUIET) as run:
        run.log_metrics({"m": 0.1}, step=1, timestamp=T0, preview=True, preview_completion=0.3)
        run.log_metrics({"m": 0.2}, step=1, timestamp=T0, preview=True, preview_completion=0.6)
        run.log_metrics({"m": 0.5}, step=1, timestamp=T0)
        run.log_metrics({"m": 0.7}, step=2, timestamp=T0, preview=True)
        run.log_metrics({"m": 0.8}, step=2, timestamp=T0, preview=True)

    with Run(run_id="scale-fork", fork_run_id="scale-main", fork_step=2.5, log_directory=logdir, **QUIET) as run:
        run.log_metrics({"train/loss": 0.05}, step=2.75, timestamp=T0)

    for value, step in ((1.0, 0), (2.0, 1)):  # two sessions of one run (a resume)
        with Run(run_id="scale-resumed", log_directory=logdir, **QUIET) as run:
            run.log_metrics({"loss": value}, step=step, timestamp=T0 + dt.timedelta(seconds=step))
    return out


class TestNeptuneScaleContract(AdapterContract):
    adapter = "neptune"

    @pytest.fixture
    def extra_foreign_paths(self, near_misses):
        return near_misses

    @pytest.fixture
    def written_run(self, scale_runs) -> WrittenRun:
        db = scale_runs["main"]
        config = {"lr": 0.02, "opt": {"name": "sgd"}, "layers": 6, "seed": 11}
        return WrittenRun(path=os.path.dirname(db), address=f"neptune:{db}", history=scale_runs["main_history"],
                          config=config, summary={"eval/best": 0.77}, run_id="scale-main", sniff_path=db)

    @pytest.fixture
    def corrupt_run(self, scale_runs, tmp_path) -> str:
        folder = tmp_path / "ws_proj_bad_1"
        folder.mkdir()
        data = open(scale_runs["main"], "rb").read()
        open(folder / "run_operations.sqlite3", "wb").write(data[:4096])  # torn database
        return f"neptune:{folder}"


def test_metadata_tags_experiment_and_secret(scale_runs):
    run = load_run(f"neptune:{scale_runs['main']}")
    assert run.run_id == "scale-main" and run.name == "scale-main" and run.seed == 11
    assert run.meta["experiment"] == "exp-a" and run.meta["tags"] == ["t1", "t2"]
    assert run.meta["project"] == "ws/proj" and run.meta["format"] == "neptune-scale"
    assert run.config["api_token"] == "***REDACTED***" and "s3cr3t" not in repr(run.to_record())
    assert any("1 string series point(s)" in n for n in run.fidelity)
    h = run.history(["train/loss"])
    assert h["step"].tolist() == [0.25 * i for i in range(30)]
    assert math.isnan(h["value"].iloc[7])


def test_previews_keep_what_neptune_shows(scale_runs):
    run = load_run(f"neptune:{scale_runs['logdir']}#scale-preview")
    h = run.history()
    assert list(zip(h["step"], h["value"], strict=True)) == [(1.0, 0.5), (2.0, 0.8)]
    assert any("3 preview point(s) replaced" in n and "1 preview point(s) never finalised" in n
               for n in run.fidelity)


def test_fork_point_is_an_event(scale_runs):
    run = load_run(f"neptune:{scale_runs['logdir']}#scale-fork")
    assert run.meta["fork"]["parent"] == "scale-main" and run.meta["fork"]["step"] == 2.5
    assert [(e.kind, e.step) for e in run.events] == [("fork", 2.5)]


def test_resumed_sessions_merge_in_time_order(scale_runs):
    runs = [r for r in load_runs(f"neptune:{scale_runs['logdir']}") if r.run_id == "scale-resumed"]
    assert len(runs) == 1
    run = runs[0]
    assert run.history()["value"].tolist() == [1.0, 2.0]
    assert [e.kind for e in run.events] == ["resume"]
    assert any("2 sessions of run scale-resumed" in n for n in run.fidelity)
    again = load_run(run.address)  # the address reopens the merged run
    assert again.run_id == "scale-resumed" and len(again.history()) == 2
    assert sorted(r.run_id for r in load_runs(scale_runs["logdir"])) == [
        "scale-fork", "scale-main", "scale-preview", "scale-resumed"]


def test_live_run_with_wal_is_read_from_a_private_copy(tmp_path):
    logdir = str(tmp_path / ".neptune")
    run = Run(run_id="live", log_directory=logdir, **QUIET)
    try:
        run.log_metrics({"x": 1.0}, step=0, timestamp=T0)
        run.log_metrics({"x": 2.0}, step=1, timestamp=T0)
        db = _db(logdir, "live")[0]
        assert os.path.exists(db + "-wal")
        before = sorted(os.listdir(os.path.dirname(db)))
        got = load_run(f"neptune:{db}")
        assert got.history()["value"].tolist() == [1.0, 2.0]
        assert any("write-ahead log present" in n for n in got.fidelity)
        assert sorted(os.listdir(os.path.dirname(db))) == before
    finally:
        run.close()


def test_synced_operations_deleted_locally_are_reported(scale_runs, tmp_path):
    """What an async run leaves after a partial sync: acknowledged rows deleted by the client.
    (A real database copy with the rows the sync process would have deleted removed.)"""
    copy = tmp_path / "ws_proj_scale-main_1" / "run_operations.sqlite3"
    copy.parent.mkdir()
    shutil.copyfile(scale_runs["main"], copy)
    with sqlite3.connect(copy) as conn:
        conn.execute("DELETE FROM run_operations WHERE sequence_id <= 5")
    run = load_run(f"neptune:{copy}")
    assert any("5 operation(s) already synced" in n for n in run.fidelity)
    assert len(run.history()) < len(scale_runs["main_history"])


def test_not_sqlite_is_a_typed_error(tmp_path):
    bad = tmp_path / "s" / "run_operations.sqlite3"
    bad.parent.mkdir()
    bad.write_bytes(b"SQLite format 3\x00" + b"\x00" * 50)
    with pytest.raises(InputError):
        load_run(f"neptune:{bad}").history()


def test_missing_neptune_api_names_the_extra(scale_runs, monkeypatch):
    for name in [m for m in sys.modules if m == "neptune_api" or m.startswith("neptune_api.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "neptune_api", None)
    with pytest.raises(MissingDependencyError, match="neptune-api") as err:
        load_run(f"neptune:{scale_runs['main']}")
    assert "rundiff[neptune]" in err.value.hint


def test_reading_leaves_the_databases_untouched(scale_runs):
    before = hash_tree(scale_runs["logdir"])
    for run in load_runs(f"neptune:{scale_runs['logdir']}"):
        run.history()
    assert hash_tree(scale_runs["logdir"]) == before
