"""Many-run commands stay useful when a run is empty or crashed, and watch speaks in human units."""

from __future__ import annotations

import json
import os
import shutil
import time

import pytest

from rundiff_core.cli import main
from rundiff_core.demo import write_journal_run
from rundiff_core.engines.watch import human_age

from .writers import write_sweep


def _run(capsys, *argv, code=0):
    got = main(list(argv))
    out, err = capsys.readouterr()
    assert got == code, err
    return out


def test_report_with_an_empty_run(sweep, capsys):
    out = _run(capsys, "report", str(sweep))
    rows = [line for line in out.splitlines() if line.startswith("| ") and "/seed-" in line]
    assert len(rows) == 10
    for row in rows:
        if "lr-0.4" in row:  # the empty crashed run: listed, values "not logged", status crashed
            assert "train/loss not logged" in row and row.rstrip(" |").endswith("crashed")
            assert "| lr=0.4 |" in row  # what tells its arm apart
        else:  # every other run shows its headline values at the common step
            assert "train/loss 0." in row and "val/acc 0." in row and "—  " not in row.split("|")[4]
        assert "None" not in row
    assert "lr-0.3/seed-0 | 299  | lr=0.3 " in out  # the parameter that tells its arm apart
    assert "no metrics" in out  # the empty run is a finding


def test_rank_and_report_pick_the_metric_most_runs_log(tmp_path, capsys):
    root = write_sweep(tmp_path / "s", empty=True)
    write_journal_run(str(tmp_path / "s" / "odd" / "seed-0"), config={"lr": 9, "seed": 0},
                      rows=[{"step": 1, "other/metric": 1.0}], seed=0, final={"status": "finished"})
    d = json.loads(_run(capsys, "rank", str(root), "--format", "json"))
    assert [m["metric"] for m in d["metrics"]][:1] == ["train/loss"]
    kinds = {(a["run"].rsplit("/", 2)[-2], a["kind"]) for a in d["anomalies"]}
    assert ("lr-0.4", "no metrics") in kinds


def test_rank_output_is_one_screen_per_metric(sweep, capsys):
    out = _run(capsys, "rank", str(sweep))
    sections = out.split("\n## ")
    for sec in sections[1:]:
        assert len(sec.splitlines()) <= 25


def test_watch_names_silent_runs_stale_and_likely_killed(realdata, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("RUNDIFF_CACHE_DIR", str(tmp_path / "cache"))
    # 9fdufjz8: a W&B log cut without an exit record, its last point years old. A copy whose
    # files carry that age: W&B's reader calls a log written in the last minutes "running", and
    # a fresh copy of shared/ (as CI makes) gives every file today's mtime.
    src = realdata / "wandb-verysimpletransformer" / "wandb" / "run-20230329_021634-9fdufjz8"
    run = tmp_path / src.name
    shutil.copytree(src, run)
    then = time.mktime((2023, 3, 29, 3, 0, 0, 0, 0, -1))
    for d, _, files in os.walk(run):
        for f in files:
            os.utime(os.path.join(d, f), (then, then))
    out = _run(capsys, "watch", "--once", str(run), code=1)
    (line,) = [x for x in out.splitlines() if "ALERT stale" in x]
    assert "likely killed" in line and "status unknown" in line
    assert "years" in line and " min ago" not in out and "1934373" not in out
    assert "years ago" in out.splitlines()[0]


def test_watch_stale_whatever_the_status(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("RUNDIFF_CACHE_DIR", str(tmp_path / "cache"))
    path = write_journal_run(str(tmp_path / "quiet"), config={"lr": 1},
                             rows=[{"step": s, "loss": 1 / (s + 1), "time": time.time() - 7200}
                                   for s in range(20)], final=None)
    past = time.time() - 7200
    for d, _, files in os.walk(path):
        for f in files:
            os.utime(os.path.join(d, f), (past, past))
    out = _run(capsys, "watch", "--once", path, "--stale", "30m", code=1)
    assert "ALERT stale: no new data for 2.0 h (--stale 30 min); no exit record either" in out
    out = _run(capsys, "watch", "--once", path, "--stale", "3h", code=0)
    assert "ALERT" not in out and "last data 2.0 h ago" in out


@pytest.mark.parametrize("seconds,text", [(12, "12 s"), (600, "10 min"), (7200, "2.0 h"),
                                          (86400 * 3, "3.0 days"), (3.7 * 365.25 * 86400, "3.7 years")])
def test_human_ages(seconds, text):
    assert human_age(seconds) == text


def test_rank_metric_globs(sweep, capsys):
    d = json.loads(_run(capsys, "rank", str(sweep), "--metric", "val/*", "--format", "json"))
    assert [m["metric"] for m in d["metrics"]] == ["val/acc"]
    assert main(["rank", str(sweep), "--metric", "nope/*"]) == 2
    assert "logged by no run" in capsys.readouterr().err
