"""`rundiff serve`'s endpoints and its safety rules, through Starlette's TestClient."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("tensorboardX")

from starlette.testclient import TestClient  # noqa: E402

from rundiff.agents.confine import Confinement  # noqa: E402
from rundiff.serve.app import Settings, build_app  # noqa: E402
from rundiff.serve.security import allowed_hosts, choose_token  # noqa: E402
from rundiff.serve.thin import thin_indices  # noqa: E402
from rundiff_core.errors import UsageError  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scene import grow, tree_hash, write_scene  # noqa: E402

TOKEN = "test-token-0123456789"
BASE = "http://127.0.0.1:8770"


@pytest.fixture()
def scene(tmp_path):
    root = tmp_path / "runs"
    addresses = write_scene(root)
    return root, addresses


def _client(root: Path, sources: list[str] | None = None, *, signed: bool = True) -> TestClient:
    """A client of a server on 127.0.0.1:8770 over `root`; `signed`: with the token's cookie."""
    settings = Settings(sources or [str(root)], Confinement.of([str(root)], command="rundiff serve"),
                        TOKEN, allowed_hosts("127.0.0.1", 8770))
    client = TestClient(build_app(settings), base_url=BASE)
    if signed:
        client.cookies.set("rundiff_serve_token", TOKEN)
    return client


def test_listing_is_ls_json_plus_the_run_table(scene):
    root, addresses = scene
    with _client(root, [str(root), str(root / "missing")]) as c:
        data = c.get("/api/runs?complete=1").json()
    assert data["schema"] == "rundiff.serve.runs/1"
    assert {r["address"] for r in data["runs"]} == set(addresses.values())
    assert {r["adapter"] for r in data["runs"]} == {"tensorboard", "journal"}
    assert all("fidelity" in r and "keys" not in r for r in data["runs"])  # ls --no-points rows
    table = {r["address"]: r for r in data["table"]["runs"]}
    student = table[addresses["student"]]
    assert data["table"]["headline"] == "loss"
    assert student["label"] == "student" and student["last_step"] == 11
    assert math.isclose(student["headline"], 3.28) and student["params"] == {"lr": "0.002"}
    assert math.isclose(table[addresses["baseline-0"]]["headline"], 1.11, rel_tol=1e-6)
    assert data["table"]["differing"] == ["lr"]
    # a bad source is a line of the table, not a crash
    assert [e["source"] for e in data["errors"]] == [str(root / "missing")]
    assert "missing" in data["errors"][0]["message"]


def test_compare_reads_the_baseline_at_the_students_step(scene):
    root, a = scene
    with _client(root) as c:
        got = c.get("/api/compare",
                    params={"a": [a["baseline-0"], a["baseline-1"], a["student"]]})
        assert got.status_code == 200, got.text
        data = got.json()
        loss = data["compare"]["metrics"][0]
        rows = {r["role"]: r for r in loss["rows"]}
        assert loss["target"] == 11 and math.isclose(rows["baseline"]["value"], 2.89, rel_tol=1e-6)
        assert rows["baseline"]["n"] == 2  # the two ticked seeds are one arm
        assert data["compare"]["schema"] == "rundiff.compare/1"
        assert "2.8900" in data["text"] and "2.8900" in data["html"]
        assert data["figures"] and data["figures"][0]["metric"] == "loss"
        # the slider: the student as it stood at step 5
        at5 = c.get("/api/compare", params={
            "a": [a["baseline-0"], a["student"]], "step": "5"}).json()["compare"]
        rows5 = {r["role"]: r for r in at5["metrics"][0]["rows"]}
        assert at5["current_x"] == 5 and math.isclose(rows5["baseline"]["value"], 2.95, rel_tol=1e-6)
        assert math.isclose(rows5["student"]["value"], 3.4)
        # rank answers the CLI's JSON too
        rank = c.get("/api/rank", params={"a": list(a.values())}).json()
        assert rank["rank"]["metrics"][0]["metric"] == "loss" and "text" in rank


def test_report_is_the_report_commands_html(scene, tmp_path, capsys):
    from rundiff_core.cli import main

    root, a = scene
    with _client(root) as c:
        got = c.get("/api/report", params={"a": list(a.values())})
    assert got.status_code == 200 and "attachment" in got.headers["content-disposition"]
    out = tmp_path / "r.html"
    assert main(["report", *a.values(), "-o", str(out)]) == 0
    assert got.text == out.read_text()


def test_security_host_token_roots_and_read_only(scene, tmp_path):
    root, a = scene
    before = tree_hash(root)
    with _client(root, signed=False) as c:
        assert c.get("/api/runs?complete=1").status_code == 403  # no token
        assert c.get("/api/runs", params={"token": "wrong-token-000"}).status_code == 403
        assert c.get("/api/runs", params={"token": TOKEN},
                     headers={"host": "attacker.example:8770"}).status_code == 403  # rebinding
        assert c.get("/api/runs", params={"token": TOKEN},
                     headers={"host": "127.0.0.1:9999"}).status_code == 403
        page = c.get("/", params={"token": TOKEN})
        assert page.status_code == 200 and "rundiff_serve_token" in page.headers["set-cookie"]
        # the cookie is enough after the first visit
        assert c.get("/api/runs?complete=1").status_code == 200
        assert c.get("/assets/plotly.min.js").status_code == 200
        assert c.post("/api/runs").status_code == 405  # read-only
        outside = tmp_path / "elsewhere"
        outside.mkdir()
        got = c.get("/api/compare", params={"a": [str(outside), a["student"]]})
        assert got.status_code == 400
        assert got.json()["error"]["type"] == "OutsideRootsError"
        assert "rundiff serve" in got.json()["error"]["hint"]
        c.get("/api/compare", params={"a": [a["baseline-0"], a["student"]]})
        c.get("/api/report", params={"a": list(a.values())})
    assert tree_hash(root) == before
    with pytest.raises(UsageError, match="--token"):
        choose_token("0.0.0.0", None)
    assert choose_token("0.0.0.0", "chosen-secret") == "chosen-secret"
    assert len(choose_token("127.0.0.1", None)) >= 24


def test_growth_is_seen_and_logged_for_the_event_stream(scene):
    import os
    import time

    root, a = scene
    with _client(root) as c:
        c.get("/api/runs?complete=1")
        catalog = c.app.state.catalog
        version = catalog.version
        grow(root, 15)
        later = time.time() + 5
        os.utime(root / "student" / "metrics.jsonl", (later, later))  # mtime moves, whatever the clock
        assert catalog.poll() == [a["student"]]
        assert catalog.since(version) == (version + 1, [a["student"]])
        student = next(r for r in c.get("/api/runs?complete=1").json()["table"]["runs"]
                       if r["address"] == a["student"])
        assert student["last_step"] == 15
        assert catalog.poll() == []  # nothing new


def test_thinning_keeps_each_columns_extremes():
    import numpy as np

    x = np.arange(1_000_000, dtype=float)
    y = np.sin(x / 5000.0)
    y[123_457] = 50.0  # a spike survives
    keep = thin_indices(x, y, 500)
    assert len(keep) <= 4 * 500 and 123_457 in keep
    assert keep[0] == 0 and keep[-1] == len(x) - 1
    assert np.isclose(y[keep].min(), y.min()) and y[keep].max() == 50.0
    small = np.arange(10.0)
    assert list(thin_indices(small, small, 500)) == list(range(10))


def test_compare_keeps_its_runs_loaded_and_rereads_what_grew(scene):
    import os
    import time

    root, a = scene
    ticked = {"a": [a["baseline-0"], a["baseline-1"], a["student"]]}
    with _client(root) as c:
        c.get("/api/runs?complete=1")
        runs = c.app.state.runs
        first = c.get("/api/compare", params=ticked).json()
        assert runs.loads == 3 and runs.points() > 0
        again = c.get("/api/compare", params=ticked).json()
        assert again == first and runs.loads == 3  # answered from memory: nothing read again
        at5 = c.get("/api/compare", params={**ticked, "step": 5}).json()
        assert at5["compare"]["metrics"][0]["target"] == 5 and runs.loads == 3
        grow(root, 15)
        later = time.time() + 5
        os.utime(root / "student" / "metrics.jsonl", (later, later))
        assert c.app.state.catalog.poll() == [a["student"]]
        grown = c.get("/api/compare", params=ticked).json()
        assert runs.loads == 4  # the student alone read again
        assert grown["compare"]["metrics"][0]["target"] == 15


def test_loaded_runs_stay_under_the_points_cap(tmp_path):
    """Many runs opened one pair after another: the cache holds at most its cap of points
    (plus the pair being answered), the least recently compared runs evicted first."""
    from rundiff.serve.runcache import Loaded, RunCache
    from rundiff_core.demo import write_journal_run

    addresses = []
    for i in range(12):
        path = write_journal_run(str(tmp_path / f"run-{i}"), config={"lr": i},
                                 rows=[{"step": s, "loss": 1.0 / (s + 1)} for s in range(500)])
        addresses.append(f"journal:{path}")

    from rundiff import _bridge

    cache = RunCache(lambda address: Loaded(*_bridge.loaded_run(address)), cap_points=2_500)
    held = []
    for i in range(0, 12, 2):
        pair = addresses[i:i + 2]
        _bridge.run_compare_runs(pair, student=None, metrics=None, at=None,
                                 load=lambda x: (lambda g: (g.run, g.members, g.how))(cache.get(x)))
        cache.trim(keep=pair)
        held.append(cache.points())
        assert all(x in cache for x in pair)
    assert max(held) <= 2_500 and held[-1] > 0  # 500 points a run: never more than 5 held
    assert len(cache) <= 5 and addresses[0] not in cache  # the first opened went first
