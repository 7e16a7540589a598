"""The W&B adapter online: `wandb:ENTITY/PROJECT[/RUN_ID]` through the real `wandb.Api`.

Contract tests: the hosted service cannot be reached from tests, so `wandb_responder` stands in
for it on 127.0.0.1 (WANDB_BASE_URL) and answers the GraphQL operations wandb 0.31 sends with
schema-shaped responses — exported history as Parquet plus live rows through `HistoryPage`.
What is under test is rundiff driving the real client: full histories (never sampled), filters,
rate limits, the cache, errors and secrets.
"""

from __future__ import annotations

import json
import os
import sys

import pytest
from rundiff_adapters.wandb import online
from rundiff_adapters.wandb.online import parse_filters, with_retries
from wandb_responder import Responder, ServedRun

from rundiff_core.errors import InputError, MissingDependencyError, RundiffError, UsageError
from rundiff_core.model import make_history
from rundiff_core.resolve import load_run, load_runs, open_source
from rundiff_core.testing import assert_history_equal

wandb = pytest.importorskip("wandb")
KEY = "f" * 40  # any 40-character key: the responder accepts it, rundiff must never print it
NAN, INF = float("nan"), float("inf")


def _rows(n: int, *, live_extras: bool) -> list[dict]:
    rows = []
    for i in range(n):
        step = i if i < 700 else i + 10  # a gap in the steps: pages must not lose rows around it
        row = {"_step": step, "_timestamp": 1.7e9 + i / 10, "_runtime": i / 10,
               "loss": 2.0 / (i + 1), "train": {"acc": i / n}}
        if i % 100 == 0:
            row["eval/acc"] = 0.5 + i / (4 * n)
        if i in (3, 1200):
            row["loss"] = NAN
        if i in (4, 1201):
            row["loss"] = INF
        if live_extras and i in (1300, 1301):
            row["note"] = "restarted"  # text: not a point
            row["img"] = {"_type": "image-file", "path": "media/x.png", "width": 8}  # media
            row["flag"] = True  # a boolean counts as 1
        rows.append(row)
    return rows


def _expected(rows: list[dict]) -> tuple:
    steps, keys, values, walls = [], [], [], []
    for row in rows:
        for key, value in row.items():
            if key.startswith("_") or key in ("note", "img"):
                continue
            if isinstance(value, dict):
                for sub, v in value.items():
                    steps.append(row["_step"])
                    keys.append(f"{key}/{sub}")
                    values.append(v)
                    walls.append(row["_timestamp"])
                continue
            steps.append(row["_step"])
            keys.append(key)
            values.append(float(value))
            walls.append(row["_timestamp"])
    return make_history(steps, keys, values, walls)


SERVED = {
    ("rd-team", "vision"): [
        ServedRun("abc12345", "baseline-lr3e-4", state="finished", config={"lr": 3e-4, "seed": 1,
                  "optim": {"name": "adam"}, "wandb_api_key": KEY}, summary={"loss": 0.0013, "_step": 1509},
                  tags=["baseline"], group="lr-sweep", job_type="train", commit="0123abc",
                  rows=_rows(1500, live_extras=True), exported=1000, created_at="2025-01-01T00:00:00Z"),
        ServedRun("def67890", "bigger-lr", state="crashed", config={"lr": 1e-3, "seed": 2},
                  tags=["sweep"], group="lr-sweep", job_type="train",
                  rows=_rows(40, live_extras=False), created_at="2025-01-02T00:00:00Z"),
        ServedRun("ghi24680", "still-going", state="running", config={"lr": 1e-4, "seed": 3},
                  tags=["baseline", "long"], group="other", rows=_rows(30, live_extras=False),
                  exported=10, created_at="2025-01-03T00:00:00Z"),
    ],
    ("rd-team", "swept"): [
        ServedRun("swp00001", "sweep-trial", config={"lr": 1e-3}, rows=_rows(20, live_extras=False),
                  sweep="sw33p1d"),
    ],
}
SWEEPS = {"sw33p1d": {"method": "bayes", "metric": {"name": "acc", "goal": "minimize"},
                      "parameters": {"lr": {"min": 1e-4, "max": 1e-2}}}}


@pytest.fixture(scope="module")
def responder():
    """The responder, and a wandb client service that gives rate limits up after two tries."""
    server = Responder(SERVED, SWEEPS)
    patch = pytest.MonkeyPatch()
    wandb.teardown()  # the service reads its retry settings when it starts
    patch.setenv("WANDB_X_GRAPHQL_RETRY_MAX", "1")
    patch.setenv("WANDB_X_GRAPHQL_RETRY_WAIT_MIN_SECONDS", "0.01")
    patch.setenv("WANDB_X_GRAPHQL_RETRY_WAIT_MAX_SECONDS", "0.02")
    yield server
    wandb.teardown()
    patch.undo()
    server.close()


@pytest.fixture
def server(responder, monkeypatch, tmp_path):
    monkeypatch.setenv("WANDB_BASE_URL", responder.url)
    monkeypatch.setenv("WANDB_API_KEY", KEY)
    monkeypatch.setenv("WANDB_CACHE_DIR", str(tmp_path / "wandb-cache"))
    monkeypatch.setattr(online, "BACKOFF_SECONDS", 0.01)
    responder.operations.clear()
    responder.downloads.clear()
    responder.rate_limit.clear()
    return responder


def test_run_every_point_never_sampled(server):
    run = load_run("wandb:rd-team/vision/abc12345")
    h = run.history()
    assert_history_equal(h, _expected(SERVED[("rd-team", "vision")][0].rows))
    ops = server.ops()
    for op in ("Run", "RunHistoryKeys", "RunParquetHistory", "HistoryPage"):
        assert op in ops, ops
    assert "SampledHistoryPage" not in ops and not server.unknown  # never sampled
    pages = [v for name, v in server.operations if name == "HistoryPage"]
    assert max(v["maxStep"] for v in pages) == 1509 + 1  # exclusive: the last step is included
    assert server.downloads == ["/parquet/rd-team/vision/abc12345-0.parquet"]
    notes = " | ".join(run.fidelity)
    assert "img (2 image-file)" in notes and "note (2 text)" in notes


def test_a_sweep_declares_its_metric_direction(server):
    """The W&B sweep's `metric.goal` wins over the name's vocabulary (`acc` reads "higher")."""
    from rundiff_core.engines.directions import GoalRules

    run = load_run("wandb:rd-team/swept/swp00001")
    assert "GetSweep" in server.ops() and not server.unknown
    assert run.meta["sweep"] == "sw33p1d"
    d = GoalRules().direction("acc", [run])
    assert (d.goal, d.source) == ("min", "declared") and "W&B sweep sw33p1d" in d.reason
    plain = load_run("wandb:rd-team/vision/abc12345")
    assert "goals" not in plain.meta and "GetSweep" not in [n for n, _ in server.operations[-3:]]


def test_run_metadata_config_summary_and_secrets(server):
    run = load_run("wandb:rd-team/vision/abc12345")
    assert run.name == "baseline-lr3e-4" and run.status == "finished" and run.seed == 1
    assert run.config["optim"] == {"name": "adam"} and run.config["lr"] == 3e-4
    assert run.config["wandb_api_key"] == "***REDACTED***"
    assert run.summary == {"loss": 0.0013, "_step": 1509}
    assert run.git_sha == "0123abc" and run.meta["group"] == "lr-sweep"
    assert run.meta["tags"] == ["baseline"] and run.meta["server"] == server.url
    run.history()
    assert KEY not in json.dumps(run.to_record(), default=str)


def test_second_compare_reads_the_cache(server):
    first = load_run("wandb:rd-team/vision/abc12345").history()
    cache = os.environ["RUNDIFF_CACHE_DIR"]
    written = [os.path.join(d, f) for d, _s, fs in os.walk(cache) for f in fs]
    assert any(p.endswith("abc12345.parquet") for p in written), written
    server.operations.clear()
    server.downloads.clear()
    run = load_run("wandb:rd-team/vision/abc12345")  # a new source: nothing kept in memory
    again = run.history()
    assert "HistoryPage" not in server.ops() and "RunParquetHistory" not in server.ops()
    assert not server.downloads
    assert_history_equal(again, first)
    assert any("rundiff's cache" in n for n in run.fidelity)


def test_unfinished_runs_are_not_cached(server):
    for _ in range(2):
        h = load_run("wandb:rd-team/vision/ghi24680").history()
        assert len(h) == len(_expected(SERVED[("rd-team", "vision")][2].rows))
    assert server.ops().count("HistoryPage") >= 2
    run = load_run("wandb:rd-team/vision/ghi24680")
    assert run.status == "running" and any("preliminary" in n for n in run.fidelity)


def test_project_listing_with_filters(server):
    runs = load_runs("wandb:rd-team/vision?tag=baseline&order=-created_at")
    assert [r.run_id for r in runs] == ["ghi24680", "abc12345"]
    sent = [v for name, v in server.operations if name == "Runs"][-1]
    assert json.loads(sent["filters"]) == {"tags": {"$in": ["baseline"]}}
    assert sent["order"] == "-created_at"
    crashed = load_runs("wandb:rd-team/vision#state=crashed&group=lr-sweep")
    assert [(r.run_id, r.status) for r in crashed] == [("def67890", "crashed")]
    everything = load_runs("wandb:rd-team/vision?limit=2")
    assert [r.run_id for r in everything] == ["abc12345", "def67890"]
    assert len(everything[1].history()) == len(_expected(SERVED[("rd-team", "vision")][1].rows))


def test_rate_limits_are_retried_with_backoff(server):
    server.rate_limit.update({"HistoryPage": 3, "Run": 3})  # the client gives up after 2 each
    h = load_run("wandb:rd-team/vision/def67890").history()
    assert len(h) == len(_expected(SERVED[("rd-team", "vision")][1].rows))
    assert server.ops().count("HistoryPage") >= 4 and server.ops().count("Run") >= 4


def test_rate_limit_that_never_ends_is_a_clear_error(server):
    server.rate_limit.update({"HistoryPage": 1000})
    with pytest.raises(InputError) as err:
        load_run("wandb:rd-team/vision/def67890").history()
    assert "429" in str(err.value) and KEY not in str(err.value)


def test_unknown_run_and_project(server):
    with pytest.raises(RundiffError):
        load_run("wandb:rd-team/vision/nosuch99").history()
    with pytest.raises(RundiffError) as err:
        load_runs("wandb:rd-team/nothing-here")
    assert KEY not in str(err.value)


def test_missing_wandb_package_says_which_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "wandb", None)
    with pytest.raises(MissingDependencyError) as err:
        load_run("wandb:rd-team/vision/abc12345")
    assert "rundiff[wandb]" in str(err.value)


def test_addresses_and_filters_parse_without_network():
    src = open_source("https://wandb.ai/rd-team/vision/runs/abc12345")
    assert (src.entity, src.project, src.run_id) == ("rd-team", "vision", "abc12345")
    flt, order, limit = parse_filters("state=finished&state=crashed&tag=a,b&config.lr=0.001"
                                      "&summary.loss=0.5&name=^base&job_type=train&limit=5")
    assert flt == {"$and": [{"config.lr.value": 0.001}, {"summary_metrics.loss": 0.5},
                            {"display_name": {"$regex": "^base"}}, {"jobType": "train"},
                            {"state": {"$in": ["finished", "crashed"]}}, {"tags": {"$in": ["a", "b"]}}]}
    assert (order, limit) == ("+created_at", 5)
    raw, _o, _l = parse_filters('filter={"config.lr.value": {"$lt": 0.01}}')
    assert raw == {"config.lr.value": {"$lt": 0.01}}
    with pytest.raises(UsageError):
        parse_filters("colour=blue")
    with pytest.raises(UsageError):
        open_source("wandb:rd-team/vision/abc12345?state=finished")


def test_retry_policy_backs_off_exponentially_on_429_only():
    from wandb.errors import CommError

    calls, sleeps = [], []

    def flaky():
        calls.append(1)
        if len(calls) < 3:
            raise CommError("POST /graphql giving up after 2 attempt(s)\nwhile retrying: HTTP 429: ")
        return "ok"

    assert with_retries(flaky, "x", backoff=0.5, sleep=sleeps.append) == "ok"
    assert sleeps == [0.5, 1.0]
    with pytest.raises(CommError):
        with_retries(lambda: (_ for _ in ()).throw(CommError("HTTP 500")), "x", sleep=sleeps.append)
    assert sleeps == [0.5, 1.0]  # no retry for other errors


def test_cli_errors_never_print_the_key(server, capsys):
    from rundiff_core.cli import main

    assert main(["ls", "wandb:rd-team/nothing-here"]) == 2
    err = capsys.readouterr().err
    assert "rundiff: error:" in err and KEY not in err
    assert main(["ls", "wandb:rd-team/vision/def67890", "--format", "json"]) == 0
    assert KEY not in capsys.readouterr().out
