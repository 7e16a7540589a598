"""Folder shapes of real downloads: checkpoint snapshots inside a run folder belong to that run,
and a folder holding several stores lists the runs of every one (an empty `mlflow.db` next to a
populated `mlruns.db` written by the real MLflow client)."""

from __future__ import annotations

import json

import pytest

from rundiff_core.cli import main
from rundiff_core.testing import hash_tree


def test_checkpoint_snapshots_belong_to_their_run(tmp_path, capsys):
    run = tmp_path / "run"
    for snap in ("checkpoint-100", "checkpoint-200", "last-checkpoint"):
        (run / snap).mkdir(parents=True)
        (run / snap / "metrics.csv").write_text("step,loss\n0,1.0\n100,0.5\n")
    (run / "metrics.csv").write_text("step,loss\n0,1.0\n100,0.5\n200,0.25\n")
    assert main(["ls", f"local:{tmp_path}", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["address"] for r in rows] == [f"local:{run}"]  # one run, not four
    assert rows[0]["points"] == 3


@pytest.fixture
def two_databases(tmp_path):
    """`mlflow.db` created by the client with no run, `mlruns.db` holding two finished runs."""
    mlflow = pytest.importorskip("mlflow")
    folder = tmp_path / "notebooks"
    folder.mkdir()
    mlflow.MlflowClient(tracking_uri=f"sqlite:///{folder / 'mlflow.db'}").search_experiments()
    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{folder / 'mlruns.db'}")
    exp = client.create_experiment("exp")
    for i, lr in enumerate((0.1, 0.2)):
        run = client.create_run(exp, run_name=f"run-{i}")
        client.log_param(run.info.run_id, "lr", lr)
        for step in range(5):
            client.log_metric(run.info.run_id, "loss", 1.0 / (step + 1) + i, step=step)
        client.set_terminated(run.info.run_id)
    return folder


def test_an_empty_database_beside_a_populated_one_lists_the_populated_runs(two_databases, capsys):
    before = hash_tree(two_databases)
    assert main(["ls", f"mlflow:{two_databases}", "--no-points", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert sorted(r["name"] for r in rows) == ["run-0", "run-1"]
    assert main(["ls", str(two_databases.parent), "--no-points"]) == 0
    out = capsys.readouterr().out
    assert out.count("[mlflow, finished]") == 2
    assert "notebooks/mlflow.db: an MLflow sqlite database, but it names no runs" in out
    assert hash_tree(two_databases) == before
