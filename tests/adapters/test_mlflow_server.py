"""The MLflow adapter over HTTP: a real `mlflow server` (sqlite backend) on 127.0.0.1.

Runs are logged over HTTP with the real client, then read back through rundiff with
`mlflow:http://127.0.0.1:PORT#…`, and cross-checked against a direct read-only read of the
server's own sqlite database. The server is started once for this module and stopped by its pid.
"""

from __future__ import annotations

import json
import math

import pytest
from mlflow_server import CONFIG, MlflowServer, write_runs

from rundiff_core.cli import main
from rundiff_core.errors import RunNotFoundError
from rundiff_core.redact import REDACTED
from rundiff_core.resolve import load_run, load_runs, open_source
from rundiff_core.testing import assert_history_equal

pytestmark = pytest.mark.server


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = MlflowServer(tmp_path_factory.mktemp("mlflow-server"))
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="module")
def logged(server):
    return write_runs(server.url)


def test_http_runs_equal_what_was_logged(server, logged):
    for label, expected in logged.runs.items():
        run = load_run(f"mlflow:{server.url}#{expected.run_id}")
        assert run.meta["reader"] == "client" and run.meta["store_kind"] == "remote"
        assert_history_equal(run.history(), expected.history), label
        assert run.address == f"mlflow:{server.url}#{expected.run_id}"


def test_http_metadata_nan_inf_duplicates(server, logged):
    run = load_run(f"mlflow:{server.url}#exp-a/base")
    assert run.run_id == logged.runs["base"].run_id and run.status == "finished"
    for key, value in CONFIG.items():
        assert run.config[key] == value, key
    assert run.config["api_key"] == REDACTED and run.meta["tags"]["hf_token"] == REDACTED
    assert run.meta["params_raw"]["lr"] == "0.001" and run.seed == 3
    v = run.history(["weird"])["value"].tolist()
    assert math.isnan(v[0]) and v[1] == math.inf and v[2] == -math.inf
    assert run.history(["no_step"])["step"].tolist() == [0.0, 0.0, 0.0]
    assert any("no_step: 3 points" in n for n in run.fidelity)
    child = load_run(f"mlflow:{server.url}#exp-a/child")
    assert child.meta["parent_run_id"] == logged.runs["parent"].run_id
    assert load_run(f"mlflow:{server.url}#{logged.runs['killed'].run_id}").status == "crashed"


def test_http_equals_direct_read_of_the_servers_database(server, logged):
    over_http = {r.run_id: r for r in load_runs(f"mlflow:{server.url}#exp-a")}
    direct = {r.run_id: r for r in load_runs(f"mlflow:{server.db}#exp-a")}
    assert over_http.keys() == direct.keys() and len(direct) == 8
    for run_id, run in over_http.items():
        assert_history_equal(run.history(), direct[run_id].history(), ordered=True)
        assert run.config == direct[run_id].config and run.name == direct[run_id].name
        assert run.meta["start_time"] == direct[run_id].meta["start_time"]


def test_http_history_is_paged_to_the_end(server, logged, monkeypatch):
    """Shrink the page to 7 points: every key still comes back whole, over several requests."""
    import mlflow.tracking._tracking_service.client as tracking_client
    from mlflow.store.tracking.rest_store import RestStore

    calls: list[tuple[str, object]] = []
    original = RestStore.get_metric_history

    def counting(self, run_id, metric_key, max_results=None, page_token=None):
        calls.append((metric_key, page_token))
        return original(self, run_id, metric_key, max_results=max_results, page_token=page_token)

    monkeypatch.setattr(tracking_client, "GET_METRIC_HISTORY_MAX_RESULTS", 7)
    monkeypatch.setattr(RestStore, "get_metric_history", counting)
    run = load_run(f"mlflow:{server.url}#exp-a/base")
    assert_history_equal(run.history(["loss"]), logged.runs["base"].history.query("key == 'loss'"))
    loss_calls = [c for c in calls if c[0] == "loss"]
    assert len(loss_calls) == math.ceil(300 / 7) and loss_calls[1][1]  # page tokens followed


def test_http_selectors_and_errors(server, logged):
    refs = open_source(f"mlflow:{server.url}#exp-a/twin").list_runs()
    assert {r.run_id for r in refs} == {logged.runs["twin1"].run_id, logged.runs["twin2"].run_id}
    assert len(open_source(f"mlflow:{server.url}").list_runs()) == len(logged.runs)
    with pytest.raises(RunNotFoundError):
        open_source(f"mlflow:{server.url}#no-such-experiment").list_runs()


def test_http_cli_ls(server, logged, capsys, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", server.url)  # the default store for a bare selector
    assert main(["ls", "mlflow:exp-b/base", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["run_id"] for r in rows] == [logged.runs["other-base"].run_id]
    assert rows[0]["keys"] == [{"key": "loss", "points": 1, "first_step": 3.0, "last_step": 3.0}]
