"""A mixed fleet: journal + TensorBoard (written by tensorboardX) + MLflow (file store, written by
the mlflow client) → one dataset, read back through `parquet:` point for point."""

from __future__ import annotations

import json

import pytest
from fleetgen import SECRET, write_fleet

from rundiff_core.fleet import export_fleet, read_points, read_runs
from rundiff_core.resolve import load_runs
from rundiff_core.testing import assert_history_equal, hash_tree


@pytest.fixture
def mixed(tmp_path, monkeypatch):
    pytest.importorskip("rundiff_adapters.tensorboard.source")
    pytest.importorskip("rundiff_adapters.mlflow.source")
    tbx = pytest.importorskip("tensorboardX")
    mlflow = pytest.importorskip("mlflow")

    write_fleet(tmp_path / "journal", arms=1, seeds=2, steps=30)

    writer = tbx.SummaryWriter(str(tmp_path / "tb" / "run-a"))
    for i in range(40):
        writer.add_scalar("loss", 1.0 / (i + 1), i)
        if i % 10 == 0:
            writer.add_scalar("eval/accuracy", 0.5 + i / 100, i)
    writer.close()

    monkeypatch.chdir(tmp_path)
    client = mlflow.MlflowClient(tracking_uri=f"file://{tmp_path / 'mlruns'}")  # no global state
    run = client.create_run(client.create_experiment("fleet-exp"), run_name="ml-run")
    client.log_param(run.info.run_id, "lr", 0.01)
    client.log_param(run.info.run_id, "api_key", SECRET)
    for i in range(25):
        client.log_metric(run.info.run_id, "loss", 2.0 / (i + 1), step=i)
    client.set_terminated(run.info.run_id)
    return [f"journal:{tmp_path / 'journal'}", f"tb:{tmp_path / 'tb'}",
            f"mlflow:{tmp_path / 'mlruns'}"]


@pytest.mark.slow
def test_mixed_fleet_round_trips_through_parquet(mixed, tmp_path):
    before = {a: hash_tree(a.split(":", 1)[1]) for a in mixed}
    out = tmp_path / "fleet"
    s = export_fleet(mixed, str(out), workers=0, progress=False)
    assert (s.new, s.failed) == (4, 0), s.failures
    assert {a: hash_tree(a.split(":", 1)[1]) for a in mixed} == before  # read-only

    rows = {r["run_uid"]: r for r in read_runs(str(out)).to_pylist()}
    assert sorted(r["source"] for r in rows.values()) == ["journal", "journal", "mlflow",
                                                         "tensorboard"]
    assert set(read_points(str(out)).column("source").to_pylist()) == {"journal", "mlflow",
                                                                      "tensorboard"}
    originals = {r.uid: r for a in mixed for r in load_runs(a)}
    for run in load_runs(f"parquet:{out}"):
        orig = originals[run.meta["run_uid"]]
        assert run.meta["origin_adapter"] == orig.adapter
        assert_history_equal(run.history(), orig.history(), ordered=True)
    ml = next(r for r in rows.values() if r["source"] == "mlflow")
    assert json.loads(ml["config_json"])["api_key"] == "***REDACTED***"
    assert ml["project"] == "fleet-exp"
    assert SECRET not in json.dumps(list(rows.values()), default=str)

    again = export_fleet(mixed, str(out), workers=0, progress=False)
    assert again.new == again.updated == again.failed == 0
    assert again.skipped + again.unchanged == 4
