"""watch: freshness, progress since the last check, anomalies, completion, notifications."""

from __future__ import annotations

import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from rundiff_core.cli import main
from rundiff_core.engines.watch import parse_duration
from rundiff_core.testing import hash_tree

from .conftest import write_csv_run, write_journal


def _append(path, rows):
    with open(os.path.join(path, "metrics.jsonl"), "a") as fh:
        for r in rows:
            fh.write(json.dumps(r) + "\n")


def test_durations():
    assert parse_duration("10m") == 600 and parse_duration("30s") == 30 and parse_duration("2h") == 7200
    assert parse_duration("45") == 45


def test_progress_then_nan_and_completion(tmp_path, capsys):
    run = write_journal(tmp_path / "live", lr=0.1, floor=0.5, running=True)
    before_state = os.environ["RUNDIFF_CACHE_DIR"]
    assert main(["watch", run, "--once", "--format", "json"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["runs"][0]["previous_step"] is None and first["runs"][0]["last_step"] == 100
    assert os.path.isdir(os.path.join(before_state, "watch"))  # state in the cache dir
    _append(run, [{"step": 110, "loss": 0.6, "time": time.time()}, {"step": 120, "loss": float("nan"), "time": time.time()}])
    assert main(["watch", run, "--once", "--format", "json"]) == 1
    second = json.loads(capsys.readouterr().out)
    r = second["runs"][0]
    assert r["previous_step"] == 100 and r["last_step"] == 120 and r["new_points"] == 2
    assert [a["kind"] for a in second["alerts"]] == ["nan"]
    with open(os.path.join(run, "final.json"), "w") as fh:
        json.dump({"status": "finished"}, fh)
    assert main(["watch", run, "--once", "--format", "json"]) == 0
    third = json.loads(capsys.readouterr().out)
    assert [a["kind"] for a in third["alerts"]] == ["finished"]


def test_stale_run_alerts(tmp_path, capsys):
    run = write_journal(tmp_path / "old", lr=0.1, floor=0.5, running=True)
    old = time.time() - 3 * 3600
    for f in os.listdir(run):
        os.utime(os.path.join(run, f), (old, old))
    os.utime(run, (old, old))
    assert main(["watch", run, "--once", "--stale", "1h"]) == 1
    assert "ALERT stale: no new data for" in capsys.readouterr().out


def test_divergence_from_baseline_and_kill_event(tmp_path, capsys):
    base = write_journal(tmp_path / "base", lr=0.1, floor=0.2)
    csv_base = write_csv_run(tmp_path / "csvbase", lr=0.1, floor=0.2)
    run = write_journal(tmp_path / "live", lr=0.1, floor=0.9, running=True,
                        events=[{"event": "oom", "step": 90}])
    assert main(["watch", run, "--once", "--baseline", base]) == 1
    out = capsys.readouterr().out
    assert "ALERT diverged: loss" in out and "at step 100" in out
    assert "ALERT kill: oom event" in out
    assert main(["watch", run, "--once", "--baseline", f"local:{csv_base}"]) == 1  # second backend
    assert "ALERT diverged" in capsys.readouterr().out


class _Collector(BaseHTTPRequestHandler):
    received: list = []

    def do_POST(self):  # noqa: N802 - http.server API
        body = self.rfile.read(int(self.headers["Content-Length"]))
        _Collector.received.append(json.loads(body))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


def test_notify_url_and_command(tmp_path, capsys):
    run = write_journal(tmp_path / "live", lr=0.1, floor=0.5, running=True, nan_at=50)
    before = hash_tree(run)
    server = HTTPServer(("127.0.0.1", 0), _Collector)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/hook"
        assert main(["watch", run, "--once", "--notify", url]) == 1
    finally:
        server.shutdown()
    msg = _Collector.received[-1]
    assert set(msg) >= {"title", "message", "alerts"} and "nan" in msg["title"]
    out_file = tmp_path / "notified.json"
    (tmp_path / "state").mkdir()
    os.environ["RUNDIFF_CACHE_DIR"] = str(tmp_path / "state")  # fresh state: alert again
    assert main(["watch", run, "--once", "--notify", f"cat > {out_file}"]) == 1
    assert json.loads(out_file.read_text())["title"].startswith("rundiff watch:")
    assert hash_tree(run) == before


@pytest.mark.parametrize("every", ["1s"])
def test_loop_stops_cleanly_on_ctrl_c(tmp_path, monkeypatch, capsys, every):
    run = write_journal(tmp_path / "live", lr=0.1, floor=0.5, running=True)
    calls = {"n": 0}

    def fake_sleep(seconds):
        calls["n"] += 1
        raise KeyboardInterrupt

    monkeypatch.setattr("rundiff_core.commands.watch.time.sleep", fake_sleep)
    assert main(["watch", run, "--every", every]) == 0
    assert calls["n"] == 1 and "watch stopped" in capsys.readouterr().err


def test_many_runs_fit_one_screen_with_the_alerts_first(tmp_path, capsys, monkeypatch):
    """Past the cap, watch's text leads with the alert counts, lists the runs whose alerts need a
    look before the merely finished ones, and says how many runs it left out."""
    from rundiff_core.render import many_md

    monkeypatch.setattr(many_md, "WATCH_RUNS", 3)
    for i in range(5):
        write_journal(tmp_path / f"done-{i}", lr=0.1, floor=0.5, seed=i)
    write_journal(tmp_path / "z-nan", lr=0.1, floor=0.5, nan_at=50, running=True)
    assert main(["watch", str(tmp_path), "--once"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("6 runs watched; alerts: 5 finished, 1 nan")
    # one config for all: the runs are watched one by one, said once, under the headline
    assert out[1].startswith("> every run given is a seed of one arm") and len(out[1]) < 200
    assert "z-nan" in out[2]  # the run with a NaN leads, though it sorts last
    assert sum(1 for line in out if not line.startswith(("  ", "…", ">"))) == 1 + 3
    assert out[-1] == "… and 3 more runs (--format json lists all)"
